// layernorm and layernorm_grad_x over the last axis (kernels/cpu/layernorm.cpp), and
// the row statistics that layernorm_grad_gamma_beta's wide-row path reads from a first
// pass (the parameter gradients are in layernorm_params.cu).
// One row per thread group (rows.cuh). Every pass that writes the output comes after
// the last read of the inputs by the same thread, so out == in (exactly) is safe.
// Every float dtype: T is the element type (storage.h), the arithmetic is f32's; the row
// statistics stay f32. Bytes-moved floor, n = rows * cols elements of b bytes: layernorm
// 2bn, layernorm_grad_x 3bn (4bn with acc), layernorm_row_stats bn (+8 B/row).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/rows.cuh"

namespace tg::kernels::cuda {

namespace {

// The row frame (rows.cuh) and its building blocks.
using namespace detail;

// Two-pass mean and biased variance, like the CPU reference; the cache keeps x.
template <int G, int VPT, typename T>
__device__ __forceinline__ void mean_rstd(const T* x, int64_t cols, float eps, int t, float* smem,
                                          RowCache<VPT>& c, float& mean, float& rstd) {
  float s = 0.0f;
  TG_ROW_LOOP(k, j) {
    const float a = x[j];
    c.put(k, a);
    s += a;
  }
  mean = group_sum<G>(s, smem) / static_cast<float>(cols);
  float v = 0.0f;
  TG_ROW_LOOP(k, j) {
    const float d = c.get(k, x, j) - mean;
    v += d * d;
  }
  const float var = group_sum<G>(v, smem) / static_cast<float>(cols);
  rstd = 1.0f / sqrtf(var + eps);
}

// float4 frame: the sum over the row of the values in registers.
template <int NV>
__device__ __forceinline__ float row_sum4(const float (&v)[NV][4], int t, int nq) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) acc[i] += v[k][i];
  return warp_sum(sum4(acc));
}

// float4 frame: the same two passes over the registers (no extra memory traffic).
template <int NV>
__device__ __forceinline__ void mean_rstd4(const float (&v)[NV][4], int t, int nq, int64_t cols, float eps,
                                           float& mean, float& rstd) {
  mean = row_sum4<NV>(v, t, nq) / static_cast<float>(cols);
  float sq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) {
    const float d = v[k][i] - mean;
    sq[i] += d * d;
  }
  const float var = warp_sum(sum4(sq)) / static_cast<float>(cols);
  rstd = 1.0f / sqrtf(var + eps);
}

// TY != T: layernorm_cast, the same f32 values rounded once to the output's dtype.
template <typename T, typename TY = T>
struct LayernormOp {
  const T* x;
  const T* gamma;
  const T* beta;
  TY* y;
  int64_t cols;
  float eps;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const T* xr = x + row * cols;
    TY* yr = y + row * cols;
    RowCache<VPT> c;
    float mean, rstd;
    mean_rstd<G, VPT>(xr, cols, eps, t, smem, c, mean, rstd);
    TG_ROW_LOOP(k, j) { yr[j] = narrow<TY>((c.get(k, xr, j) - mean) * rstd * gamma[j] + beta[j]); }
  }
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float v[NV][4];
    load_row4<NV>(x + row * cols, t, nq, v);
    float mean, rstd;
    mean_rstd4<NV>(v, t, nq, cols, eps, mean, rstd);
    // gamma and beta (8 KB) are re-read by every row: L1/L2 hits, loaded late so they
    // do not hold registers during the reductions.
    TG_CHUNK_LOOP(k) {
      float g[4], b[4];
      load4(gamma + chunk_col(t, k), g);
      load4(beta + chunk_col(t, k), b);
      TG_LANE_LOOP(i) v[k][i] = (v[k][i] - mean) * rstd * g[i] + b[i];
    }
    store_row4<NV>(y + row * cols, t, nq, v);
  }
};

// kAcc (layernorm_grad_x_acc): dx = acc + the f32 dx, rounded once; each thread reads
// acc[j] before it writes dx[j], so dx == acc (exactly) is safe too. TD: dy's element type,
// T's or a 16-bit one beside f32 (widened exactly as it is loaded).
template <typename T, bool kAcc = false, typename TD = T>
struct LayernormGradXOp {
  const TD* dy;
  const T* x;
  const T* gamma;
  T* dx;
  int64_t cols;
  float eps;
  const T* acc = nullptr;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const TD* dyr = dy + row * cols;
    const T* xr = x + row * cols;
    T* dxr = dx + row * cols;
    RowCache<VPT> cx, cg;
    float mean, rstd;
    mean_rstd<G, VPT>(xr, cols, eps, t, smem, cx, mean, rstd);
    float sg = 0.0f, sgx = 0.0f;
    TG_ROW_LOOP(k, j) {
      const float g = static_cast<float>(dyr[j]) * gamma[j];
      cg.put(k, g);
      sg += g;
      sgx += g * ((cx.get(k, xr, j) - mean) * rstd);
    }
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const float mean_g = group_sum<G>(sg, smem) * inv_cols;
    const float mean_gx = group_sum<G>(sgx, smem) * inv_cols;
    TG_ROW_LOOP(k, j) {
      const float g = VPT > 0 ? cg.get(k, dyr, j) : static_cast<float>(dyr[j]) * gamma[j];
      const float xhat = (cx.get(k, xr, j) - mean) * rstd;
      const float d = rstd * (g - mean_g - xhat * mean_gx);
      if constexpr (kAcc) dxr[j] = narrow<T>(static_cast<float>(acc[row * cols + j]) + d);
      else dxr[j] = narrow<T>(d);
    }
  }
  // Both input rows are loaded up front (twice the bytes in flight of a mean-first
  // order), and the variance, sum(g) and sum(g (x - mean)) share one shuffle tree:
  // sum(g xhat) = rstd * sum(g (x - mean)), the same value up to rounding.
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float xv[NV][4], gv[NV][4];
    load_row4<NV>(x + row * cols, t, nq, xv);
    load_row4<NV>(dy + row * cols, t, nq, gv);
    const float mean = row_sum4<NV>(xv, t, nq) / static_cast<float>(cols);
    float sq[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sg[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sgd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    TG_CHUNK_LOOP(k) {
      float gm[4];
      load4(gamma + chunk_col(t, k), gm);
      TG_LANE_LOOP(i) {
        const float d = xv[k][i] - mean;
        const float g = gv[k][i] * gm[i];
        xv[k][i] = d;
        gv[k][i] = g;
        sq[i] += d * d;
        sg[i] += g;
        sgd[i] += g * d;
      }
    }
    float var = sum4(sq), sum_g = sum4(sg), sum_gd = sum4(sgd);
    warp_sum3(var, sum_g, sum_gd);
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const float rstd = 1.0f / sqrtf(var / static_cast<float>(cols) + eps);
    const float mean_g = sum_g * inv_cols;
    const float mean_gx = sum_gd * rstd * inv_cols;
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) xv[k][i] = rstd * (gv[k][i] - mean_g - (xv[k][i] * rstd) * mean_gx);
    if constexpr (kAcc) {
      load_row4<NV>(acc + row * cols, t, nq, gv);
      TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) xv[k][i] = gv[k][i] + xv[k][i];
    }
    store_row4<NV>(dx + row * cols, t, nq, xv);
  }
};

template <typename T>
struct RowStatsOp {
  const T* x;
  float* stats;
  int64_t cols;
  float eps;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    RowCache<VPT> c;
    float mean, rstd;
    mean_rstd<G, VPT>(x + row * cols, cols, eps, t, smem, c, mean, rstd);
    if (t == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = rstd;
    }
  }
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float v[NV][4];
    load_row4<NV>(x + row * cols, t, nq, v);
    float mean, rstd;
    mean_rstd4<NV>(v, t, nq, cols, eps, mean, rstd);
    if (t == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = rstd;
    }
  }
};

template <typename T, typename TY>
void layernorm_rows_of(const T* x, const T* gamma, const T* beta, TY* y, int64_t rows, int64_t cols, float eps,
                       cudaStream_t s) {
  launch_rows(LayernormOp<T, TY>{x, gamma, beta, y, cols, eps}, rows, cols,
              aligned4(x) && aligned4(gamma) && aligned4(beta) && aligned4(y), s);
}
template <typename T, typename TD>
void layernorm_grad_x_rows_of(const TD* dy, const T* x, const T* gamma, T* dx, int64_t rows, int64_t cols, float eps,
                              cudaStream_t s, const T* acc = nullptr) {
  const bool vec = aligned4(dy) && aligned4(x) && aligned4(gamma) && aligned4(dx);
  if (acc)
    launch_rows(LayernormGradXOp<T, true, TD>{dy, x, gamma, dx, cols, eps, acc}, rows, cols, vec && aligned4(acc), s);
  else
    launch_rows(LayernormGradXOp<T, false, TD>{dy, x, gamma, dx, cols, eps}, rows, cols, vec, s);
}

}  // namespace

void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t cols,
                    float eps, cudaStream_t s) {
  layernorm_rows_of(x, gamma, beta, y, rows, cols, eps, s);
}
void layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                           int64_t cols, float eps, cudaStream_t s) {
  layernorm_grad_x_rows_of(dy, x, gamma, dx, rows, cols, eps, s);
}
template <typename T>
void layernorm_row_stats(const T* x, float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  launch_rows(RowStatsOp<T>{x, stats, cols, eps}, rows, cols, aligned4(x), s);
}
template void layernorm_row_stats(const float*, float*, int64_t, int64_t, float, cudaStream_t);
template void layernorm_row_stats(const Bf16*, float*, int64_t, int64_t, float, cudaStream_t);
template void layernorm_row_stats(const F16*, float*, int64_t, int64_t, float, cudaStream_t);

// The two parameter gradients of a layernorm in one pass over dy and x.
void layernorm_grad_params(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                           float eps, float* scratch, size_t scratch_bytes, cudaStream_t s) {
  layernorm_grad_gamma_beta(dy, x, dgamma, dbeta, rows, cols, eps, scratch, scratch_bytes, s);
}

// layernorm(_cast) and layernorm_grad_x(_acc) in the call's dtype; the parameter gradients
// (layernorm_params.cu) through layernorm_params_op.
void layernorm_op(const OpCall& c, const CallGeometry& g, cudaStream_t s) {
  if (c.op == OpKind::layernorm_cast) {
    with_element_type(c.in[0].dtype, [&](auto e) {
      using T = decltype(e);
      with_element_type(c.out.dtype, [&](auto f) {
        using TY = decltype(f);
        layernorm_rows_of(elements<const T>(c.in[0].data), elements<const T>(c.in[1].data),
                          elements<const T>(c.in[2].data), elements<TY>(c.out.data), g.rows, g.cols, c.attrs->eps, s);
      });
    });
    return;
  }
  if (c.op == OpKind::layernorm) {
    with_element_type(c.out.dtype, [&](auto e) {
      using T = decltype(e);
      layernorm_rows_of(elements<const T>(c.in[0].data), elements<const T>(c.in[1].data),
                        elements<const T>(c.in[2].data), elements<T>(c.out.data), g.rows, g.cols, c.attrs->eps, s);
    });
    return;
  }
  with_low_grad_types(c.out.dtype, c.in[0].dtype, [&](auto e, auto d) {
    using T = decltype(e);
    using TD = decltype(d);
    layernorm_grad_x_rows_of(elements<const TD>(c.in[0].data), elements<const T>(c.in[1].data),
                             elements<const T>(c.in[2].data), elements<T>(c.out.data), g.rows, g.cols, c.attrs->eps,
                             s, c.op == OpKind::layernorm_grad_x_acc ? elements<const T>(c.in[3].data) : nullptr);
  });
}

}  // namespace tg::kernels::cuda
