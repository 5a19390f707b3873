#pragma once
// How every kernel of the backend is launched (internal to kernels/cuda): the grid
// and block sizes, the per-device launch information, programmatic dependent launch
// and the checked launcher. Defined in launch.cu.
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

// Whether launches use programmatic dependent launch: this thread's LaunchScope (run_cuda's
// from the backend's options, cuda_kernels.h) and the current device's support, cached per
// device.
bool pdl_enabled();

struct LaunchSite {
  const char* file;
  int line;
};
#define TG_LAUNCH_SITE (::tg::kernels::cuda::detail::LaunchSite{__FILE__, __LINE__})

// Every kernel of the backend is launched here (launch_smem: with `smem` bytes of dynamic
// shared memory): with the PDL attribute when
// pdl_enabled() (so every kernel starts with pdl::prologue()), and checked; a failure
// names the launching line and the kernel's grid.
[[noreturn]] void throw_launch(cudaError_t e, LaunchSite at, dim3 grid, dim3 block);
template <typename... KArgs, typename... Args>
void launch_smem(LaunchSite at, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                 Args&&... args) {
  const cudaError_t e = pdl::launch(kernel, grid, block, smem, s, pdl_enabled(), std::forward<Args>(args)...);
  if (e != cudaSuccess) throw_launch(e, at, grid, block);
  ::tg::cuda_detail::launch_check(at.file, at.line);
}
template <typename... KArgs, typename... Args>
void launch(LaunchSite at, void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s, Args&&... args) {
  launch_smem(at, kernel, grid, block, 0, s, std::forward<Args>(args)...);
}

__host__ __device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace tg::kernels::cuda::detail
