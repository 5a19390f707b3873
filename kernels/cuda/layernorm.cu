// layernorm and layernorm_grad_x over the last axis (kernels/cpu/layernorm.cpp), and
// the row statistics that layernorm_grad_gamma_beta's wide-row path reads from a first
// pass (the parameter gradients are in layernorm_params.cu).
// One row per thread group (rows.cuh). Every pass that writes the output comes after
// the last read of the inputs by the same thread, so out == in (exactly) is safe.
// Bytes-moved floor, n = rows * cols floats: layernorm 8n, layernorm_grad_x 12n,
// layernorm_row_stats 4n (+8 B/row).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/rows.cuh"

namespace tg::kernels::cuda {

namespace {

// The row frame (rows.cuh) and its building blocks.
using namespace detail;

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
void layernorm_row_stats(const float* x, float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  launch_rows(RowStatsOp{x, stats, cols, eps}, rows, cols, aligned16(x), s);
}

// The two parameter gradients of a layernorm in one pass over dy and x.
void layernorm_grad_params(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                           float eps, float* scratch, size_t scratch_bytes, cudaStream_t s) {
  layernorm_grad_gamma_beta(dy, x, dgamma, dbeta, rows, cols, eps, scratch, scratch_bytes, s);
}

}  // namespace tg::kernels::cuda
