#pragma once
// Device reductions shared by the .cu files (internal to kernels/cuda): warp and
// block sums and maxima in a fixed order.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda::detail {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename T, bool kMax>
__device__ __forceinline__ T reduce_warp(T v) {
  if constexpr (kMax) {
    return warp_max(v);
  } else {
    return warp_sum(v);
  }
}

// Block-wide reductions in a fixed order (warp trees, then warp 0 over the warps'
// results). `smem` holds 32 values; every thread of the block must call, and all get
// the result. The trailing barrier lets the caller reuse smem at once.
template <typename T, bool kMax>
__device__ __forceinline__ T block_reduce(T v, T* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = reduce_warp<T, kMax>(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < nwarps ? smem[lane] : (kMax ? T(-INFINITY) : T(0));
    w = reduce_warp<T, kMax>(w);
    if (lane == 0) smem[0] = w;
  }
  __syncthreads();
  const T r = smem[0];
  __syncthreads();
  return r;
}

}  // namespace tg::kernels::cuda::detail
