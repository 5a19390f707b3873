#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "experiments/harness/gpu_timing.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/out_of_memory.h"
#include "experiments/noop/noop_kernel.h"

namespace tg::noop {

namespace {
__global__ void empty_kernel() {}
// The pointer comes in as an argument, so the compiler cannot see that it is bad.
__global__ void store_through(int* p) { *p = 1; }
void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("{}:{}: {} failed: {}", __FILE__, __LINE__, call, cudaGetErrorString(e)));
}
}  // namespace

bool have_cuda_build() { return true; }

void launch_empty_kernel(void* stream) {
  empty_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
  check(cudaGetLastError(), "empty_kernel<<<1, 1>>>");
}

void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

std::vector<double> time_empty_kernel_gpu(const harness::LoopOptions& opt) {
  return harness::time_gpu(opt, [](void* s) { launch_empty_kernel(s); });
}

void fault_sticky() {
  // Address 8: never mapped on the device, so the store faults (cudaErrorIllegalAddress).
  store_through<<<1, 1>>>(reinterpret_cast<int*>(uintptr_t{8}));
  check(cudaGetLastError(), "store_through<<<1, 1>>>(invalid pointer)");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after store_through (--fault sticky)");
  throw std::logic_error("tg-noop --fault sticky: the store through an invalid pointer did not fault");
}

void fault_oom(int device) {
  std::unique_ptr<Backend> be = make_cuda_backend(device);
  size_t free_b = 0, total_b = 0;
  device_memory_info(*be, free_b, total_b);
  const size_t bytes = total_b + (size_t{1} << 30);
  void* p = raw_alloc_or_throw(
      *be, bytes, "tg-noop --fault oom", [] { return std::string("tg-noop holds nothing else on the device"); },
      "This is the test fault --fault oom, which asks for the card's total memory plus 1 GiB; run without it.");
  be->raw_free(p);
  throw std::logic_error(fmt::format("tg-noop --fault oom: cudaMalloc of {} bytes succeeded on a card of {} bytes",
                                     bytes, total_b));
}

}  // namespace tg::noop
