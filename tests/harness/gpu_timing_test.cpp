// time_gpu's held samples (experiments/harness/gpu_timing.h) on a real device (label gpu;
// skipped without one): they time what the body enqueues, a body that waits for its own
// held stream is reported rather than hung, and an error inside the body leaves the stream
// usable.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "experiments/harness/gpu_timing.h"
#include "kernels/cuda/raii.h"
#include "tests/gpu_skip.h"

namespace th = tg::harness;

namespace {

th::LoopOptions held(int reps) {
  th::LoopOptions o;
  o.warmup = 1;
  o.min_reps = reps;
  o.max_reps = reps;
  o.min_time_s = 0;
  o.hold_gpu = true;
  return o;
}

}  // namespace

TEST_CASE("time_gpu held: a sample per repetition, each the device time of what the body enqueued") {
  TG_REQUIRE_GPU();
  auto stream = tg::cuda::Stream::create();
  auto buf = tg::cuda::DeviceBuffer::allocate(size_t{64} << 20);
  int calls = 0;
  const auto samples = th::time_gpu(held(5), [&](void* s) {
    ++calls;
    TG_CUDA_CHECK(cudaMemsetAsync(buf.get(), calls & 0xff, buf.bytes(), static_cast<cudaStream_t>(s)));
  }, stream.get());
  CHECK(samples.size() == 5);
  CHECK(calls == 7);  // the unheld first call and the warm-up too
  for (double s : samples) {
    CHECK(s > 0);
    CHECK(s < 0.1);  // 64 MiB of memset is microseconds, far from the 2 s hold limit
  }
  // What the last sample wrote is there: the held body really ran.
  unsigned char byte = 0;
  TG_CUDA_CHECK(cudaMemcpy(&byte, buf.get(), 1, cudaMemcpyDeviceToHost));
  CHECK(byte == static_cast<unsigned char>(calls & 0xff));
}

TEST_CASE("time_gpu held: a body that synchronizes its held stream is named after the 2 s limit, not hung") {
  TG_REQUIRE_GPU();
  auto stream = tg::cuda::Stream::create();
  std::string what;
  try {
    th::time_gpu(held(1), [&](void* s) { TG_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s))); },
                 stream.get());
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what.find("waits for its own stream") != std::string::npos);
  // An exception from the body releases the hold: the stream runs what comes next.
  CHECK_THROWS_AS(th::time_gpu(held(1), [&](void*) { throw std::logic_error("body failed"); }, stream.get()),
                  std::logic_error);
  stream.synchronize();
  const auto after = th::time_gpu(held(2), [&](void*) {}, stream.get());
  CHECK(after.size() == 2);
}
