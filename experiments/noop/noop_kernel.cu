#include <cuda_runtime.h>
#include <fmt/format.h>

#include <stdexcept>

#include "experiments/harness/gpu_timing.h"
#include "experiments/noop/noop_kernel.h"

namespace tg::noop {

namespace {
__global__ void empty_kernel() {}
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

}  // namespace tg::noop
