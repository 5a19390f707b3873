#pragma once
// Programmatic dependent launch (PDL), Hopper (sm_90) and newer.
//
// Why: in a chain of tiny kernels each one waits for the previous to finish, and the
// GPU then spends most of a node's time launching the next grid, not running it. With
// the launch attribute cudaLaunchAttributeProgrammaticStreamSerialization the next
// kernel may be scheduled as soon as the previous one calls launch_dependents(); it
// then blocks in wait() until the previous grid has completed and its writes are
// visible. So correctness only needs every PDL-launched kernel to call wait() before
// touching memory another kernel wrote; calling launch_dependents() early only moves
// the launch forward. Under stream capture the attribute becomes a programmatic edge
// of the CUDA Graph. On older GPUs both calls compile to nothing and the launcher
// leaves the attribute off.
#include <cuda_runtime.h>

namespace tg::kernels::cuda::pdl {

__device__ __forceinline__ void wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
// The first statement of every kernel of the backend: wait for the kernel before,
// then let the next one be scheduled (at most one kernel waits ahead of this one).
__device__ __forceinline__ void prologue() {
  wait();
  launch_dependents();
}

// cudaLaunchKernelEx with the PDL attribute when `use_pdl`; returns its error code.
template <typename... KArgs, typename... Args>
cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, bool use_pdl,
                   Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = use_pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

}  // namespace tg::kernels::cuda::pdl
