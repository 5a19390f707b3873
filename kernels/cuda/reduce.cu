// Reductions over one axis (and layernorm_grad_gamma, a reduction over the rows),
// broadcast, and mse_loss. Sums run in double in a fixed order: each thread walks
// its share of the axis in order, then a fixed tree combines the shares.
#include <cuda_runtime.h>

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

struct PlainLoad {
  const float* x;
  __device__ float operator()(int64_t idx, int64_t) const { return x[idx]; }
};
// layernorm_grad_gamma: dy * xhat, with the row's (mean, rstd) from the stats pass.
struct DyXhatLoad {
  const float* dy;
  const float* x;
  const float* stats;  // indexed by the reduced (row) index
  __device__ float operator()(int64_t idx, int64_t a) const {
    return dy[idx] * ((x[idx] - stats[2 * a]) * stats[2 * a + 1]);
  }
};

// inner == 1: the axis is contiguous. A block of 256 threads per output row.
template <typename Load>
__global__ void reduce_rows_kernel(Load load, float* y, int64_t outer, int64_t len, double post_scale) {
  pdl::prologue();
  __shared__ double smem[32];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    double acc = 0.0;
    for (int64_t a = threadIdx.x; a < len; a += blockDim.x) acc += load(o * len + a, a);
    acc = detail::block_reduce<double, false>(acc, smem);
    if (threadIdx.x == 0) y[o] = static_cast<float>(acc * post_scale);
  }
}

// inner > 1: threadIdx.x walks 32 consecutive inner positions (coalesced), threadIdx.y
// splits the axis BY ways; the BY partial sums are added in order of y.
template <int BY, typename Load>
__global__ void __launch_bounds__(32 * BY) reduce_inner_kernel(Load load, float* y, int64_t outer, int64_t len,
                                                               int64_t inner, double post_scale, bool accumulate) {
  pdl::prologue();
  __shared__ double part[BY][33];
  const int64_t tiles = (inner + 31) / 32;
  for (int64_t tile = blockIdx.x; tile < outer * tiles; tile += gridDim.x) {
    const int64_t o = tile / tiles;
    const int64_t i = (tile % tiles) * 32 + threadIdx.x;
    double acc = 0.0;
    if (i < inner)
      for (int64_t a = threadIdx.y; a < len; a += BY) acc += load((o * len + a) * inner + i, a);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
      double s = 0.0;
#pragma unroll
      for (int r = 0; r < BY; ++r) s += part[r][threadIdx.x];
      const float prev = accumulate ? y[o * inner + i] : 0.0f;
      y[o * inner + i] = static_cast<float>(s * post_scale) + prev;
    }
    __syncthreads();
  }
}

template <typename Load>
void launch_reduce(const Load& load, float* y, int64_t outer, int64_t len, int64_t inner, double post_scale,
                   bool accumulate, cudaStream_t s) {
  if (outer <= 0 || inner <= 0) return;
  if (inner == 1 && !accumulate) {
    const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
    detail::launch(TG_LAUNCH_SITE, reduce_rows_kernel<Load>, static_cast<int>(outer < cap ? outer : cap), kBlock, s, load, y, outer, len, post_scale);
  } else {
    const int64_t tiles = outer * ((inner + 31) / 32);
    // Few output tiles: split the axis 32 ways so that a long axis still has threads.
    if (tiles < 2 * detail::sm_count()) {
      detail::launch(TG_LAUNCH_SITE, reduce_inner_kernel<32, Load>, static_cast<int>(tiles), dim3(32, 32), s, load, y, outer, len, inner, post_scale, accumulate);
    } else {
      const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
      detail::launch(TG_LAUNCH_SITE, reduce_inner_kernel<8, Load>, static_cast<int>(tiles < cap ? tiles : cap), dim3(32, 8), s, load, y, outer, len, inner, post_scale, accumulate);
    }
  }
}

__global__ void broadcast_kernel(const float* x, float* y, int64_t total, int64_t size, int64_t inner) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t o = idx / (size * inner), i = idx % inner;
    y[idx] = x[o * inner + i];
  }
}
__global__ void broadcast_vec_kernel(const float4* x, float4* y, int64_t total4, int64_t size, int64_t inner4) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total4; idx += stride) {
    const int64_t o = idx / (size * inner4), i = idx % inner4;
    y[idx] = x[o * inner4 + i];
  }
}

// mse_loss. Stage 1: each block sums (p-t)^2 over its grid-stride share in double
// and writes one partial; stage 2: one block adds the partials in a fixed tree.
// The grid depends only on the device (SM count), so the bits do too. Without
// scratch the single block of stage 1 writes the loss itself.
__global__ void __launch_bounds__(1024) mse_partial_kernel(const float* p, const float* t, double* partial,
                                                           float* loss, int64_t n) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double acc = 0.0;
  if (aligned16(p) && aligned16(t)) {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const float4* t4 = reinterpret_cast<const float4*>(t);
    for (int64_t i = tid; i < n / 4; i += stride) {
      const float4 a = p4[i], b = t4[i];
      const double d0 = static_cast<double>(a.x) - b.x, d1 = static_cast<double>(a.y) - b.y;
      const double d2 = static_cast<double>(a.z) - b.z, d3 = static_cast<double>(a.w) - b.w;
      acc += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
    }
    const int64_t i = (n / 4) * 4 + tid;
    if (i < n) {
      const double d = static_cast<double>(p[i]) - t[i];
      acc += d * d;
    }
  } else {
    for (int64_t i = tid; i < n; i += stride) {
      const double d = static_cast<double>(p[i]) - t[i];
      acc += d * d;
    }
  }
  acc = detail::block_reduce<double, false>(acc, smem);
  if (threadIdx.x == 0) {
    if (partial) partial[blockIdx.x] = acc;
    else loss[0] = static_cast<float>(acc / static_cast<double>(n));
  }
}

__global__ void __launch_bounds__(1024) mse_final_kernel(const double* partial, int nparts, float* loss, int64_t n) {
  pdl::prologue();
  __shared__ double smem[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partial[i];
  acc = detail::block_reduce<double, false>(acc, smem);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(acc / static_cast<double>(n));
}

}  // namespace

void reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0, false, s);
}
void reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0 / static_cast<double>(len), false, s);
}

void broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * size * inner;
  if (total <= 0) return;
  if (inner % 4 == 0 && aligned16(x) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, broadcast_vec_kernel, grid_for(total / 4), kBlock, s, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), total / 4, size, inner / 4);
  else
    detail::launch(TG_LAUNCH_SITE, broadcast_kernel, grid_for(total), kBlock, s, x, y, total, size, inner);
}

void layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols, float eps,
                          float* scratch, size_t scratch_bytes, cudaStream_t s) {
  if (cols <= 0) return;
  const int64_t chunk = static_cast<int64_t>(scratch_bytes / (2 * sizeof(float)));
  if (!scratch || chunk < 1)
    throw std::invalid_argument(fmt::format(
        "run_cuda layernorm_grad_gamma: needs a scratch buffer of at least 8 bytes per row ({} rows); "
        "pass CudaExecContext::scratch (the CUDA backend provides one)", rows));
  if (rows <= 0) return fill(dgamma, 0.0f, cols, s);
  // Rows in chunks that fit the scratch; later chunks add onto dgamma (one rounding
  // per chunk; a single chunk for any realistic size: 1M rows per 8 MiB).
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
    layernorm_row_stats(x + r0 * cols, scratch, n, cols, eps, s);
    launch_reduce(DyXhatLoad{dy + r0 * cols, x + r0 * cols, scratch}, dgamma, 1, n, cols, 1.0, r0 > 0, s);
  }
}

void mse_loss(const float* p, const float* t, float* loss, int64_t n, void* scratch, size_t scratch_bytes,
              cudaStream_t s) {
  if (n <= 0) return;
  const int64_t want = (n / 4 + 1023) / 1024;
  int64_t parts = want < detail::sm_count() * 2 ? want : detail::sm_count() * 2;
  if (parts > static_cast<int64_t>(scratch_bytes / sizeof(double))) parts = static_cast<int64_t>(scratch_bytes / sizeof(double));
  if (!scratch || parts < 2) {
    detail::launch(TG_LAUNCH_SITE, mse_partial_kernel, 1, 1024, s, p, t, nullptr, loss, n);
    return;
  }
  double* partial = static_cast<double*>(scratch);
  detail::launch(TG_LAUNCH_SITE, mse_partial_kernel, static_cast<int>(parts), 1024, s, p, t, partial, loss, n);
  detail::launch(TG_LAUNCH_SITE, mse_final_kernel, 1, 1024, s, partial, static_cast<int>(parts), loss, n);
}

}  // namespace tg::kernels::cuda
