// Softmax, layernorm, their gradients and cross-entropy: one row per thread group
// (rows.cuh). Every pass that writes the output comes after the last read of the
// inputs by the same thread, so out == in (exactly) is safe.
//
// Bytes-moved floor per kernel, n = rows * cols floats (each input row read once, each
// output row written once; gamma/beta/labels are O(cols + rows), L1/L2 resident):
//   softmax 8n, softmax_grad 12n, layernorm 8n, layernorm_grad_x 12n,
//   cross_entropy_grad 8n (+4 B/row), layernorm_row_stats 4n (+8 B/row).
// Rows of <= 1024 columns, cols % 4 == 0, aligned pointers take the float4 frame
// (rows.cuh). Registers of its 1024-column kernels before -> after (ptxas, sm_90):
// softmax 97 -> 60, softmax_grad 106 -> 91, layernorm 128 -> 71, layernorm_grad_x
// 137 -> 104, cross_entropy_grad 101 -> 61, row_stats 79 -> 48; no spills. So resident
// warps (rows in flight) per SM go 16 -> 32, 16 -> 16, 16 -> 24, 8 -> 16, 16 -> 32.
// Prediction for the 256 MB benchmark (% of the same run's D2D copy), unmeasured when
// written: softmax 77.6 -> ~88, layernorm 67.5 -> ~85, layernorm_grad_x 53 -> ~90,
// cross_entropy_grad 75 -> ~88, softmax_grad ~100 (unchanged or slightly up).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/rows.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::group_max;
using detail::group_sum;
using detail::launch_rows;
using detail::aligned16;
using detail::chunk_col;
using detail::load4;
using detail::load_row4;
using detail::RowCache;
using detail::store_row4;
using detail::sum4;
using detail::warp_max;
using detail::warp_sum;
using detail::warp_sum3;

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

// float4 frame: row max and sum of exp(x - max); v ends up holding exp(x - max).
// expf (not __expf) keeps the error at ~1 ulp; it is off the critical path here.
template <int NV>
__device__ __forceinline__ void exp_sum4(float (&v)[NV][4], int t, int nq, float& m, float& s) {
  m = -INFINITY;
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) m = fmaxf(m, v[k][i]);
  m = warp_max(m);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) {
    v[k][i] = expf(v[k][i] - m);
    acc[i] += v[k][i];
  }
  s = warp_sum(sum4(acc));
}

// The label as a column, or -1 when it is not an integer class in [0, cols).
__device__ __forceinline__ int64_t label_col(const float* labels, int64_t row, int64_t cols) {
  const float l = labels[row];
  // In double: float(cols) rounds down for some cols > 2^24, which would refuse the last class.
  return (l >= 0.0f && static_cast<double>(l) < static_cast<double>(cols) && l == floorf(l)) ? static_cast<int64_t>(l)
                                                                                              : -1;
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
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float v[NV][4];
    load_row4<NV>(x + row * cols, t, nq, v);
    float m, s;
    exp_sum4<NV>(v, t, nq, m, s);
    const float inv = 1.0f / s;
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] *= inv;
    store_row4<NV>(y + row * cols, t, nq, v);
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
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    float a[NV][4], b[NV][4];
    load_row4<NV>(dy + row * cols, t, nq, a);
    load_row4<NV>(y + row * cols, t, nq, b);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) acc[i] += a[k][i] * b[k][i];
    const float dot = warp_sum(sum4(acc));
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) a[k][i] = b[k][i] * (a[k][i] - dot);
    store_row4<NV>(dx + row * cols, t, nq, a);
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
    store_row4<NV>(dx + row * cols, t, nq, xv);
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
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    const int64_t label = label_col(labels, row, cols);
    float v[NV][4];
    load_row4<NV>(logits + row * cols, t, nq, v);
    float m, s;
    exp_sum4<NV>(v, t, nq, m, s);
    const float inv = 1.0f / s;
    const float scale = label < 0 ? NAN : dloss[0] / static_cast<float>(rows);
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] = (v[k][i] * inv - (chunk_col(t, k) + i == label ? 1.0f : 0.0f)) * scale;
    store_row4<NV>(dx + row * cols, t, nq, v);
  }
};

// cross_entropy: one block of 32 warps, warp w takes rows w, w+32, ...; each warp
// sums its row losses in double in row order, then warp 0 sums the 32 warp totals.
// A fixed order without a scratch buffer; one SM is plenty for a loss over logits.
template <int VPT>
__global__ void __launch_bounds__(1024) cross_entropy_kernel(const float* logits, const float* labels, float* loss,
                                                             int64_t rows, int64_t cols) {
  pdl::prologue();
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
  launch_rows(SoftmaxOp{x, y, cols}, rows, cols, aligned16(x) && aligned16(y), s);
}
void softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, cudaStream_t s) {
  launch_rows(SoftmaxGradOp{dy, y, dx, cols}, rows, cols, aligned16(dy) && aligned16(y) && aligned16(dx), s);
}
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t cols,
                    float eps, cudaStream_t s) {
  launch_rows(LayernormOp{x, gamma, beta, y, cols, eps}, rows, cols,
              aligned16(x) && aligned16(gamma) && aligned16(beta) && aligned16(y), s);
}
void layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                           int64_t cols, float eps, cudaStream_t s) {
  launch_rows(LayernormGradXOp{dy, x, gamma, dx, cols, eps}, rows, cols,
              aligned16(dy) && aligned16(x) && aligned16(gamma) && aligned16(dx), s);
}
void cross_entropy_grad(const float* logits, const float* labels, const float* dloss, float* dx, int64_t rows,
                        int64_t cols, cudaStream_t s) {
  launch_rows(CrossEntropyGradOp{logits, labels, dloss, dx, rows, cols}, rows, cols,
              aligned16(logits) && aligned16(dx), s);
}

void cross_entropy(const float* logits, const float* labels, float* loss, int64_t rows, int64_t cols,
                   cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= 32)
    detail::launch(TG_LAUNCH_SITE, cross_entropy_kernel<1>, 1, 1024, s, logits, labels, loss, rows, cols);
  else if (cols <= 128)
    detail::launch(TG_LAUNCH_SITE, cross_entropy_kernel<4>, 1, 1024, s, logits, labels, loss, rows, cols);
  else if (cols <= 512)
    detail::launch(TG_LAUNCH_SITE, cross_entropy_kernel<16>, 1, 1024, s, logits, labels, loss, rows, cols);
  else
    detail::launch(TG_LAUNCH_SITE, cross_entropy_kernel<0>, 1, 1024, s, logits, labels, loss, rows, cols);
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

}  // namespace

void layernorm_row_stats(const float* x, float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  launch_rows(RowStatsOp{x, stats, cols, eps}, rows, cols, aligned16(x), s);
}

}  // namespace tg::kernels::cuda
