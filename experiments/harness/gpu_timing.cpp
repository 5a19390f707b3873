// Compiled only when TWOGRAPH_HAVE_CUDA (see CMakeLists.txt).
#include "experiments/harness/gpu_timing.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <stdexcept>

namespace tg::harness {

namespace {
void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("{}:{}: {} failed: {} ({})", file, line, call, cudaGetErrorName(e),
                                         cudaGetErrorString(e)));
}
#define TG_HARNESS_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
cudaEvent_t ev(void* p) { return static_cast<cudaEvent_t>(p); }
cudaStream_t st(void* p) { return static_cast<cudaStream_t>(p); }
}  // namespace

GpuEventTimer::GpuEventTimer() {
  cudaEvent_t a = nullptr, b = nullptr;
  TG_HARNESS_CUDA(cudaEventCreate(&a));
  if (cudaError_t e = cudaEventCreate(&b); e != cudaSuccess) {
    cudaEventDestroy(a);
    check_cuda(e, "cudaEventCreate(&b)", __FILE__, __LINE__);
  }
  start_ = a;
  stop_ = b;
}

GpuEventTimer::~GpuEventTimer() {
  cudaEventDestroy(ev(start_));
  cudaEventDestroy(ev(stop_));
}

void GpuEventTimer::start(void* stream) { TG_HARNESS_CUDA(cudaEventRecord(ev(start_), st(stream))); }
void GpuEventTimer::stop(void* stream) { TG_HARNESS_CUDA(cudaEventRecord(ev(stop_), st(stream))); }

double GpuEventTimer::elapsed_s() {
  TG_HARNESS_CUDA(cudaEventSynchronize(ev(stop_)));
  float ms = 0.0f;
  TG_HARNESS_CUDA(cudaEventElapsedTime(&ms, ev(start_), ev(stop_)));
  return static_cast<double>(ms) * 1e-3;
}

std::vector<double> time_gpu(const LoopOptions& opt, const std::function<void(void*)>& body, void* stream) {
  GpuEventTimer timer;
  const auto batch = opt.batch;
  return run_loop(opt, [&] {
    timer.start(stream);
    for (int64_t i = 0; i < batch; ++i) body(stream);
    timer.stop(stream);
    TG_HARNESS_CUDA(cudaGetLastError());  // a failed launch inside body must not time as "fast"
    return timer.elapsed_s() / static_cast<double>(batch);
  });
}

void set_cuda_device(int id) { TG_HARNESS_CUDA(cudaSetDevice(id)); }
void cuda_synchronize() { TG_HARNESS_CUDA(cudaDeviceSynchronize()); }

}  // namespace tg::harness
