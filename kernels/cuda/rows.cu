// Softmax, layernorm, their gradients and cross-entropy: one row per thread group
// (rows.cuh). Every pass that writes the output comes after the last read of the
// inputs by the same thread, so out == in (exactly) is safe.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/rows.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::group_max;
using detail::group_sum;
using detail::launch_rows;
using detail::RowCache;

// Row max and sum of exp(x - max); the cache ends up holding exp(x - max).
template <int G, int VPT>
__device__ __forceinline__ void exp_sum(const float* x, int64_t cols, int t, float* smem, RowCache<VPT>& c,
                                        float& m, float& s) {
  m = -INFINITY;
  TG_ROW_LOOP(k, j) {
    const float a = x[j];
    c.put(k, a);
    m = fmaxf(m, a);
  }
  m = group_max<G>(m, smem);
  s = 0.0f;
  TG_ROW_LOOP(k, j) {
    const float e = expf(c.get(k, x, j) - m);
    c.put(k, e);
    s += e;
  }
  s = group_sum<G>(s, smem);
}

template <int VPT>
__device__ __forceinline__ float cached_exp(const RowCache<VPT>& c, int k, const float* x, int64_t j, float m) {
  if constexpr (VPT > 0) {
    return c.v[k];
  } else {
    return expf(x[j] - m);
  }
}

// The label as a column, or -1 when it is not an integer class in [0, cols).
__device__ __forceinline__ int64_t label_col(const float* labels, int64_t row, int64_t cols) {
  const float l = labels[row];
  return (l >= 0.0f && l < static_cast<float>(cols) && l == floorf(l)) ? static_cast<int64_t>(l) : -1;
}

struct SoftmaxOp {
  const float* x;
  float* y;
  int64_t cols;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    RowCache<VPT> c;
    float m, s;
    exp_sum<G, VPT>(xr, cols, t, smem, c, m, s);
    const float inv = 1.0f / s;
    TG_ROW_LOOP(k, j) { yr[j] = cached_exp(c, k, xr, j, m) * inv; }
  }
};

struct SoftmaxGradOp {
  const float* dy;
  const float* y;
  float* dx;
  int64_t cols;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const float* dyr = dy + row * cols;
    const float* yr = y + row * cols;
    float* dxr = dx + row * cols;
    RowCache<VPT> cd, cy;
    float dot = 0.0f;
    TG_ROW_LOOP(k, j) {
      const float a = dyr[j], b = yr[j];
      cd.put(k, a);
      cy.put(k, b);
      dot += a * b;
    }
    dot = group_sum<G>(dot, smem);
    TG_ROW_LOOP(k, j) { dxr[j] = cy.get(k, yr, j) * (cd.get(k, dyr, j) - dot); }
  }
};

// Two-pass mean and biased variance, like the CPU reference; the cache keeps x.
template <int G, int VPT>
__device__ __forceinline__ void mean_rstd(const float* x, int64_t cols, float eps, int t, float* smem,
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

struct LayernormOp {
  const float* x;
  const float* gamma;
  const float* beta;
  float* y;
  int64_t cols;
  float eps;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    RowCache<VPT> c;
    float mean, rstd;
    mean_rstd<G, VPT>(xr, cols, eps, t, smem, c, mean, rstd);
    TG_ROW_LOOP(k, j) { yr[j] = (c.get(k, xr, j) - mean) * rstd * gamma[j] + beta[j]; }
  }
};

struct LayernormGradXOp {
  const float* dy;
  const float* x;
  const float* gamma;
  float* dx;
  int64_t cols;
  float eps;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const float* dyr = dy + row * cols;
    const float* xr = x + row * cols;
    float* dxr = dx + row * cols;
    RowCache<VPT> cx, cg;
    float mean, rstd;
    mean_rstd<G, VPT>(xr, cols, eps, t, smem, cx, mean, rstd);
    float sg = 0.0f, sgx = 0.0f;
    TG_ROW_LOOP(k, j) {
      const float g = dyr[j] * gamma[j];
      cg.put(k, g);
      sg += g;
      sgx += g * ((cx.get(k, xr, j) - mean) * rstd);
    }
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const float mean_g = group_sum<G>(sg, smem) * inv_cols;
    const float mean_gx = group_sum<G>(sgx, smem) * inv_cols;
    TG_ROW_LOOP(k, j) {
      const float g = VPT > 0 ? cg.get(k, dyr, j) : dyr[j] * gamma[j];
      const float xhat = (cx.get(k, xr, j) - mean) * rstd;
      dxr[j] = rstd * (g - mean_g - xhat * mean_gx);
    }
  }
};

struct CrossEntropyGradOp {
  const float* logits;
  const float* labels;
  const float* dloss;
  float* dx;
  int64_t rows, cols;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const float* xr = logits + row * cols;
    float* dxr = dx + row * cols;
    const int64_t label = label_col(labels, row, cols);
    RowCache<VPT> c;
    float m, s;
    exp_sum<G, VPT>(xr, cols, t, smem, c, m, s);
    const float inv = 1.0f / s;
    const float scale = label < 0 ? NAN : dloss[0] / static_cast<float>(rows);
    TG_ROW_LOOP(k, j) { dxr[j] = (cached_exp(c, k, xr, j, m) * inv - (j == label ? 1.0f : 0.0f)) * scale; }
  }
};

// cross_entropy: one block of 32 warps, warp w takes rows w, w+32, ...; each warp
// sums its row losses in double in row order, then warp 0 sums the 32 warp totals.
// A fixed order without a scratch buffer; one SM is plenty for a loss over logits.
template <int VPT>
__global__ void __launch_bounds__(1024) cross_entropy_kernel(const float* logits, const float* labels, float* loss,
                                                             int64_t rows, int64_t cols) {
  constexpr int G = 32;
  __shared__ double totals[32];
  const int t = threadIdx.x & 31, w = threadIdx.x >> 5;
  double acc = 0.0;
  for (int64_t r = w; r < rows; r += 32) {
    const float* xr = logits + r * cols;
    RowCache<VPT> c;
    float m, s;
    exp_sum<G, VPT>(xr, cols, t, nullptr, c, m, s);
    const int64_t label = label_col(labels, r, cols);
    const double lr = label < 0 ? static_cast<double>(NAN)
                                : static_cast<double>(m) + log(static_cast<double>(s)) - xr[label];
    acc += lr;
  }
  if (t == 0) totals[w] = acc;
  __syncthreads();
  if (w == 0) {
    double v = totals[t];
    v = detail::warp_sum(v);
    if (t == 0) loss[0] = static_cast<float>(v / static_cast<double>(rows));
  }
}

}  // namespace

void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  launch_rows(SoftmaxOp{x, y, cols}, rows, cols, s);
}
void softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, cudaStream_t s) {
  launch_rows(SoftmaxGradOp{dy, y, dx, cols}, rows, cols, s);
}
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t cols,
                    float eps, cudaStream_t s) {
  launch_rows(LayernormOp{x, gamma, beta, y, cols, eps}, rows, cols, s);
}
void layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                           int64_t cols, float eps, cudaStream_t s) {
  launch_rows(LayernormGradXOp{dy, x, gamma, dx, cols, eps}, rows, cols, s);
}
void cross_entropy_grad(const float* logits, const float* labels, const float* dloss, float* dx, int64_t rows,
                        int64_t cols, cudaStream_t s) {
  launch_rows(CrossEntropyGradOp{logits, labels, dloss, dx, rows, cols}, rows, cols, s);
}

void cross_entropy(const float* logits, const float* labels, float* loss, int64_t rows, int64_t cols,
                   cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= 32)
    cross_entropy_kernel<1><<<1, 1024, 0, s>>>(logits, labels, loss, rows, cols);
  else if (cols <= 128)
    cross_entropy_kernel<4><<<1, 1024, 0, s>>>(logits, labels, loss, rows, cols);
  else if (cols <= 512)
    cross_entropy_kernel<16><<<1, 1024, 0, s>>>(logits, labels, loss, rows, cols);
  else
    cross_entropy_kernel<0><<<1, 1024, 0, s>>>(logits, labels, loss, rows, cols);
  TG_LAUNCH_CHECK();
}

}  // namespace tg::kernels::cuda

namespace tg::kernels::cuda {

namespace {

struct RowStatsOp {
  const float* x;
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
};

}  // namespace

void layernorm_row_stats(const float* x, float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  launch_rows(RowStatsOp{x, stats, cols, eps}, rows, cols, s);
}

}  // namespace tg::kernels::cuda
