#include <cuda_runtime.h>
#include <fmt/format.h>

#include <stdexcept>

#include "experiments/harness/measure.h"
#include "experiments/launch/raw_floors.h"

namespace tg::launch {

namespace {
__global__ void empty_kernel() {}
void check(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("{}:{}: {} failed: {} ({})", __FILE__, line, call, cudaGetErrorName(e),
                                         cudaGetErrorString(e)));
}
#define TG_RAW_CHECK(call) check((call), #call, __LINE__)
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
}  // namespace

bool have_cuda() { return true; }

RawCuda::RawCuda() {
  cudaStream_t s = nullptr;
  TG_RAW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
  launch_empty(1);  // load the module now, not inside the first timed sample
  sync();
}
RawCuda::~RawCuda() {
  if (stream_) cudaStreamDestroy(as_stream(stream_));
}
void RawCuda::launch_empty(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    empty_kernel<<<1, 1, 0, as_stream(stream_)>>>();
    TG_RAW_CHECK(cudaGetLastError());
  }
}
void RawCuda::sync() { TG_RAW_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

EmptyGraph::EmptyGraph(RawCuda& rc, int64_t nodes) : rc_(rc) {
  cudaGraph_t g = nullptr;
  const double t0 = harness::now_s();
  TG_RAW_CHECK(cudaStreamBeginCapture(as_stream(rc.stream()), cudaStreamCaptureModeThreadLocal));
  try {
    rc.launch_empty(nodes);
  } catch (...) {
    cudaStreamEndCapture(as_stream(rc.stream()), &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  TG_RAW_CHECK(cudaStreamEndCapture(as_stream(rc.stream()), &g));
  graph_ = g;
  const double t1 = harness::now_s();
  cudaGraphExec_t e = nullptr;
  TG_RAW_CHECK(cudaGraphInstantiate(&e, g, 0));
  exec_ = e;
  instantiate_s = harness::now_s() - t1;
  capture_s = t1 - t0;
  launch();  // the first launch uploads the graph: keep it out of the samples
  rc.sync();
}
EmptyGraph::~EmptyGraph() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}
void EmptyGraph::launch() { TG_RAW_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), as_stream(rc_.stream()))); }

}  // namespace tg::launch
