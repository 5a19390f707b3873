// The kernel behind time_gpu's held samples (gpu_timing.h): one thread that spins until
// the host writes its release flag, so that everything the host enqueues behind it waits
// in the stream's queue and then runs back to back. Spins at most timeout_ns
// (%globaltimer), then records that it timed out and returns: a body that waits for the
// held stream would otherwise wait forever.
#include <cuda_runtime.h>

#include <cstdint>

#include "experiments/harness/stream_hold.h"
#include "kernels/cuda/check.h"

namespace tg::harness::detail {

namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* release, uint64_t timeout_ns, int* timed_out) {
  const uint64_t t0 = global_ns();
  while (*release == 0) {
    if (global_ns() - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(500);
  }
}

}  // namespace

void launch_hold(const int* release_device, uint64_t timeout_ns, int* timed_out_device, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(release_device, timeout_ns, timed_out_device);
  TG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tg::harness::detail
