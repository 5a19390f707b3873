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
// Plain (opt.hold_gpu false): the start event runs as soon as it is enqueued, so a sample
// also counts the host's time to enqueue the body (a few us per launch: for one short
// kernel, that is most of the "fixed cost" of its time).
// Held (opt.hold_gpu true): a one-thread kernel holds the stream until the host has
// enqueued the start event, the body and the stop event, then the host releases it; the
// sample is the device's time from start to stop with the body's launches already queued.
// The body runs once unheld before the loop (a kernel's first launch loads its module,
// which waits for the device).
// A body that waits for the stream (a synchronize, a blocking copy) or enqueues more than
// the launch queue holds would wait for the hold: after 2 s the hold gives up and
// time_gpu throws, naming the cause.

std::vector<double> time_gpu(const LoopOptions& opt, const std::function<void(void*)>& body,
                             void* stream = nullptr);

// Selects the device for this thread (cudaSetDevice), checked.
void set_cuda_device(int id);
void cuda_synchronize();  // cudaDeviceSynchronize, checked

}  // namespace tg::harness
#endif
