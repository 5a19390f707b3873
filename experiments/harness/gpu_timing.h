#pragma once
// GPU timing with CUDA events: the time between two events recorded on a stream,
// i.e. the device-side duration of what was enqueued between them, without the
// host's enqueue cost. Declared only in CUDA builds (TWOGRAPH_HAVE_CUDA); the
// implementation, gpu_timing.cpp, is compiled only there, so the rest of the
// harness stays CUDA-free and runs on the CPU backend.
#ifdef TWOGRAPH_HAVE_CUDA
#include <functional>
#include <vector>

#include "experiments/harness/measure.h"

namespace tg::harness {

// A pair of CUDA events (RAII). `stream` is a cudaStream_t passed as void* so that
// this header needs no CUDA include; nullptr is the legacy default stream.
class GpuEventTimer {
 public:
  GpuEventTimer();
  ~GpuEventTimer();
  GpuEventTimer(const GpuEventTimer&) = delete;
  GpuEventTimer& operator=(const GpuEventTimer&) = delete;
  void start(void* stream = nullptr);
  void stop(void* stream = nullptr);
  double elapsed_s();  // waits for the stop event; resolution ~0.5 us

 private:
  void* start_ = nullptr;  // cudaEvent_t
  void* stop_ = nullptr;
};

// Like time_host, but each sample is the event-measured time of batch x body(stream)
// enqueued on `stream`, divided by the batch.
std::vector<double> time_gpu(const LoopOptions& opt, const std::function<void(void*)>& body,
                             void* stream = nullptr);

// Selects the device for this thread (cudaSetDevice), checked.
void set_cuda_device(int id);
void cuda_synchronize();  // cudaDeviceSynchronize, checked

}  // namespace tg::harness
#endif
