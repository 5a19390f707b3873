#pragma once
// Device helpers shared by the .cu files (internal to kernels/cuda).
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/pdl.cuh"

namespace tg::kernels::cuda::detail {

constexpr int kBlock = 256;

// Blocks for a grid-stride loop over `work` items: enough to fill every SM
// (8 resident blocks of 256 threads each) but no more than the work needs.
int grid_for(int64_t work, int block = kBlock);
// Threads per block for a grid-stride loop: kBlock, or fewer (whole warps) when the
// work is smaller, since a tiny op's time is mostly launching its block and idle warps
// only add to that.
inline int block_for(int64_t work) {
  return work >= kBlock ? kBlock : static_cast<int>(work <= 32 ? 32 : (work + 31) / 32 * 32);
}
int sm_count();  // of the current device, cached per device

// Whether launches use programmatic dependent launch: the process-wide switch
// (set_pdl / TG_PDL, cuda_kernels.h) and the current device's support, cached per device.
bool pdl_enabled();

struct LaunchSite {
  const char* file;
  int line;
};
#define TG_LAUNCH_SITE (::tg::kernels::cuda::detail::LaunchSite{__FILE__, __LINE__})

// Every kernel of the backend is launched here: with the PDL attribute when
// pdl_enabled() (so every kernel starts with pdl::prologue()), and checked; a failure
// names the launching line and the kernel's grid.
[[noreturn]] void throw_launch(cudaError_t e, LaunchSite at, dim3 grid, dim3 block);
template <typename... KArgs, typename... Args>
void launch(LaunchSite at, void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s, Args&&... args) {
  const cudaError_t e = pdl::launch(kernel, grid, block, 0, s, pdl_enabled(), std::forward<Args>(args)...);
  if (e != cudaSuccess) throw_launch(e, at, grid, block);
  ::tg::cuda_detail::launch_check(at.file, at.line);
}

__host__ __device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

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
