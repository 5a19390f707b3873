// Compiled only when TWOGRAPH_HAVE_CUDA (see CMakeLists.txt).
#include "experiments/harness/gpu_timing.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "experiments/harness/stream_hold.h"

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

namespace {

// The release flag and the timed-out flag of held samples: mapped pinned ints (RAII).
class HoldFlags {
 public:
  HoldFlags() {
    TG_HARNESS_CUDA(cudaHostAlloc(&host_, 2 * sizeof(int), cudaHostAllocMapped));
    host_[0] = host_[1] = 0;
    void* d = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&d, host_, 0); e != cudaSuccess) {
      cudaFreeHost(host_);
      check_cuda(e, "cudaHostGetDevicePointer", __FILE__, __LINE__);
    }
    device_ = static_cast<int*>(d);
  }
  ~HoldFlags() { cudaFreeHost(host_); }
  HoldFlags(const HoldFlags&) = delete;
  HoldFlags& operator=(const HoldFlags&) = delete;
  void hold(void* stream) {
    volatile int* h = host_;
    h[0] = 0;
    detail::launch_hold(device_, kTimeoutNs, device_ + 1, st(stream));
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    static_cast<volatile int*>(host_)[0] = 1;
  }
  // After the sample's stop event completed (the hold kernel ended before it).
  void check() const {
    if (static_cast<volatile int*>(host_)[1] == 0) return;
    throw std::runtime_error(fmt::format(
        "time_gpu (held): the stream stayed held for {} s: the timed body waits for its own stream (a "
        "synchronize or a blocking copy) or enqueues more than the launch queue holds; time it with "
        "time_host, or set LoopOptions::hold_gpu = false",
        kTimeoutNs / 1'000'000'000));
  }

 private:
  static constexpr uint64_t kTimeoutNs = 2'000'000'000;
  int* host_ = nullptr;
  int* device_ = nullptr;
};

}  // namespace

std::vector<double> time_gpu(const LoopOptions& opt, const std::function<void(void*)>& body, void* stream) {
  GpuEventTimer timer;
  std::optional<HoldFlags> flags;
  if (opt.hold_gpu) {
    flags.emplace();
    // One call unheld first: CUDA loads a kernel's module at its first launch (lazy
    // loading), and the load waits for the device, the hold included.
    body(stream);
    TG_HARNESS_CUDA(cudaStreamSynchronize(st(stream)));
  }
  // One sample; held, it sits between hold() and release(), and the stream must not stay
  // held behind an error.
  return run_loop(opt, [&] {
    if (flags) flags->hold(stream);
    try {
      timer.start(stream);
      for (int64_t i = 0; i < opt.batch; ++i) body(stream);
      timer.stop(stream);
    } catch (...) {
      if (flags) flags->release();
      throw;
    }
    if (flags) flags->release();
    TG_HARNESS_CUDA(cudaGetLastError());  // a failed launch inside body must not time as "fast"
    const double s = timer.elapsed_s() / static_cast<double>(opt.batch);
    if (flags) flags->check();
    return s;
  });
}

void set_cuda_device(int id) { TG_HARNESS_CUDA(cudaSetDevice(id)); }
void cuda_synchronize() { TG_HARNESS_CUDA(cudaDeviceSynchronize()); }

}  // namespace tg::harness
