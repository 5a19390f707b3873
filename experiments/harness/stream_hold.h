#pragma once
// time_gpu's stream hold (gpu_timing.cpp): the launcher of the kernel that keeps a stream
// waiting until the host releases it. CUDA builds only.
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::harness::detail {

// Enqueues on `stream` one thread that returns once *release_device != 0 (a mapped pinned
// int the host writes), or after timeout_ns, setting *timed_out_device = 1.
void launch_hold(const int* release_device, uint64_t timeout_ns, int* timed_out_device, cudaStream_t stream);

}  // namespace tg::harness::detail
