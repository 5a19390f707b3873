#pragma once
// The reduction frame (internal to kernels/cuda): a sum over one axis of a tensor
// seen as [outer, len, inner], in double and in a fixed order: each thread walks its
// share of the axis in order, then a fixed tree combines the shares. `Load` gives the
// value at a flat index (and its position along the axis), so a reduction of a
// computed quantity (layernorm_grad_gamma's dy * xhat) reads its inputs once.
#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"

namespace tg::kernels::cuda::detail {

// inner == 1: the axis is contiguous. A block of 256 threads per output row.
template <typename Load>
__global__ void reduce_rows_kernel(Load load, float* y, int64_t outer, int64_t len, double post_scale) {
  pdl::prologue();
  __shared__ double smem[32];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    double acc = 0.0;
    for (int64_t a = threadIdx.x; a < len; a += blockDim.x) acc += load(o * len + a, a);
    acc = block_reduce<double, false>(acc, smem);
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
    const int64_t cap = static_cast<int64_t>(sm_count()) * 8;
    launch(TG_LAUNCH_SITE, reduce_rows_kernel<Load>, static_cast<int>(outer < cap ? outer : cap), kBlock, s, load, y, outer, len, post_scale);
  } else {
    const int64_t tiles = outer * ((inner + 31) / 32);
    // Few output tiles: split the axis 32 ways so that a long axis still has threads.
    if (tiles < 2 * sm_count()) {
      launch(TG_LAUNCH_SITE, reduce_inner_kernel<32, Load>, static_cast<int>(tiles), dim3(32, 32), s, load, y, outer, len, inner, post_scale, accumulate);
    } else {
      const int64_t cap = static_cast<int64_t>(sm_count()) * 8;
      launch(TG_LAUNCH_SITE, reduce_inner_kernel<8, Load>, static_cast<int>(tiles < cap ? tiles : cap), dim3(32, 8), s, load, y, outer, len, inner, post_scale, accumulate);
    }
  }
}

}  // namespace tg::kernels::cuda::detail
