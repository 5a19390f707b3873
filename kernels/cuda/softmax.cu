// softmax and softmax_grad over the last axis (kernels/cpu/softmax.cpp).
// One row per thread group (rows.cuh). Every pass that writes the output comes after
// the last read of the inputs by the same thread, so out == in (exactly) is safe.
// Every float dtype: T is the element type (storage.h), the arithmetic is f32's.
// Bytes-moved floor, n = rows * cols elements of b bytes: softmax 2bn, softmax_grad 3bn.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/softmax.cuh"

namespace tg::kernels::cuda {

namespace {

// The row frame (rows.cuh) and its building blocks.
using namespace detail;

// alpha: softmax(alpha x), the scale before a softmax folded in (alpha 1: plain softmax).
template <typename T>
struct SoftmaxOp {
  const T* x;
  T* y;
  int64_t cols;
  float alpha;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    RowCache<VPT> c;
    float m, s;
    exp_sum<G, VPT>(xr, cols, t, smem, c, m, s, alpha);
    const float inv = 1.0f / s;
    if constexpr (VPT == 0) {  // a thread's chunk loaded before its stores: y may be x (in place)
      row_chunks_map<G>(xr, yr, cols, t, [&](int64_t, float raw) { return expf(__fmul_rn(alpha, raw) - m) * inv; });
    } else {
      TG_ROW_LOOP(k, j) { yr[j] = narrow<T>(cached_exp(c, k) * inv); }
    }
  }
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float v[NV][4];
    load_row4<NV>(x + row * cols, t, nq, v);
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] = __fmul_rn(alpha, v[k][i]);
    float m, s;
    exp_sum4<NV>(v, t, nq, m, s);
    const float inv = 1.0f / s;
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] *= inv;
    store_row4<NV>(y + row * cols, t, nq, v);
  }
};

// alpha: scale(softmax_grad(dy, y), alpha), the scale after the gradient folded in.
template <typename T>
struct SoftmaxGradOp {
  const T* dy;
  const T* y;
  T* dx;
  int64_t cols;
  float alpha;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const T* dyr = dy + row * cols;
    const T* yr = y + row * cols;
    T* dxr = dx + row * cols;
    RowCache<VPT> cd, cy;
    float dot = 0.0f;
    TG_ROW_LOOP(k, j) {
      const float a = dyr[j], b = yr[j];
      cd.put(k, a);
      cy.put(k, b);
      dot += a * b;
    }
    dot = group_sum<G>(dot, smem);
    TG_ROW_LOOP(k, j) { dxr[j] = narrow<T>(__fmul_rn(alpha, cy.get(k, yr, j) * (cd.get(k, dyr, j) - dot))); }
  }
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float a[NV][4], b[NV][4];
    load_row4<NV>(dy + row * cols, t, nq, a);
    load_row4<NV>(y + row * cols, t, nq, b);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) acc[i] += a[k][i] * b[k][i];
    const float dot = warp_sum(sum4(acc));
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) a[k][i] = __fmul_rn(alpha, b[k][i] * (a[k][i] - dot));
    store_row4<NV>(dx + row * cols, t, nq, a);
  }
};

template <typename T>
void softmax_rows_of(const T* x, T* y, int64_t rows, int64_t cols, float alpha, cudaStream_t s) {
  launch_rows(SoftmaxOp<T>{x, y, cols, alpha}, rows, cols, aligned4(x) && aligned4(y), s);
}
template <typename T>
void softmax_grad_rows_of(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols, float alpha, cudaStream_t s) {
  launch_rows(SoftmaxGradOp<T>{dy, y, dx, cols, alpha}, rows, cols, aligned4(dy) && aligned4(y) && aligned4(dx), s);
}

}  // namespace

void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, float alpha, cudaStream_t s) {
  softmax_rows_of(x, y, rows, cols, alpha, s);
}
void softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, float alpha,
                       cudaStream_t s) {
  softmax_grad_rows_of(dy, y, dx, rows, cols, alpha, s);
}

void softmax_op(const OpCall& c, const CallGeometry& g, cudaStream_t s) {
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    if (c.op == OpKind::softmax)
      softmax_rows_of(elements<const T>(c.in[0].data), elements<T>(c.out.data), g.rows, g.cols, c.attrs->alpha, s);
    else
      softmax_grad_rows_of(elements<const T>(c.in[0].data), elements<const T>(c.in[1].data), elements<T>(c.out.data),
                           g.rows, g.cols, c.attrs->alpha, s);
  });
}

}  // namespace tg::kernels::cuda
