#include "static/cuda_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "graph/quote.h"
#include "static/device_runner.h"
#include "trace/trace.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#define TG_STATIC_HAVE_CUDA_BACKEND 1
#endif

namespace tg {

CaptureGuard::CaptureGuard(cudaStream_t stream, cudaStreamCaptureMode mode) : stream_(stream) {
  TG_CUDA_CHECK(cudaStreamBeginCapture(stream_, mode));
  active_ = true;
}

CaptureGuard::~CaptureGuard() { abort(); }

cudaError_t CaptureGuard::abort() noexcept {
  if (!active_) return cudaSuccess;
  active_ = false;
  cudaError_t first = cudaGetLastError();
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &g);
  if (g) cudaGraphDestroy(g);
  if (first == cudaSuccess) first = e;
  cudaGetLastError();  // the invalidated capture's error is reported, not left for the next call
  return first;
}

cudaStreamCaptureStatus CaptureGuard::status() const {
  cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
  TG_CUDA_CHECK(cudaStreamIsCapturing(stream_, &s));
  return s;
}

cuda::CudaGraph CaptureGuard::end() {
  active_ = false;
  cudaGraph_t g = nullptr;
  TG_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
  return cuda::CudaGraph(g);
}

cuda::CudaGraph capture_steps(cudaStream_t stream, int count, const std::function<void(int)>& issue,
                              const std::function<std::string(int)>& describe) {
  CaptureGuard guard(stream);
  for (int i = 0; i < count; ++i) {
    std::string why;
    try {
      issue(i);
      cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
      const cudaError_t e = cudaStreamIsCapturing(stream, &s);
      if (e != cudaSuccess || s != cudaStreamCaptureStatusActive) {
        const cudaError_t last = cudaGetLastError();
        const cudaError_t shown = e != cudaSuccess ? e : last != cudaSuccess ? last : cudaErrorStreamCaptureInvalidated;
        why = fmt::format("the capture was invalidated ({}: {})", cudaGetErrorName(shown), cudaGetErrorString(shown));
      }
    } catch (const std::exception& ex) {
      why = ex.what();
    }
    if (!why.empty()) {
      const cudaError_t e = guard.abort();
      throw CaptureError(fmt::format("CUDA Graph capture failed at op {} of {}: {} [{}]: {}; ops inside a captured "
                                     "schedule must only enqueue work on the capture stream (no cudaMalloc, no "
                                     "synchronize, no pageable copies)",
                                     i, count, describe(i), e == cudaSuccess ? "no CUDA error pending" : cudaGetErrorName(e), why),
                         i);
    }
  }
  return guard.end();
}

bool update_or_instantiate(cuda::GraphExec& exec, const cuda::CudaGraph& graph) {
  if (exec) {
    cudaGraphExecUpdateResultInfo info;
    std::memset(&info, 0, sizeof(info));
    if (cudaGraphExecUpdate(exec.get(), graph.get(), &info) == cudaSuccess) return true;
    cudaGetLastError();  // a refused update is an expected outcome, not an error to leave pending
  }
  exec = cuda::GraphExec::instantiate(graph);
  return false;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class CudaRunner final : public DeviceRunner {
 public:
  CudaRunner(CudaBackend& be, const Graph& g, const std::vector<ScheduledOp>& ops, std::vector<StagedInput> inputs,
             size_t staging_bytes, const RunnerOptions& opt)
      : be_(be), stream_(be.stream()), g_(g), ops_(ops), inputs_(std::move(inputs)), use_graph_(opt.use_cuda_graph),
        loss_device_(opt.loss_device), copies_in_graph_(opt.inputs_in_graph ? static_cast<int>(inputs_.size()) : 0) {
    has_side_ = std::any_of(ops_.begin(), ops_.end(), [](const ScheduledOp& op) { return op.side; });
    if (has_side_) {
      // The side stream and its two events: a fork before every side op (it waits for all
      // the main stream issued before it) and the join after the last one.
      side_ = cuda::Stream::create();
      fork_ = cuda::Event::create(cudaEventDisableTiming);
      join_ = cuda::Event::create(cudaEventDisableTiming);
    }
    staging_ = cuda::PinnedBuffer::allocate(staging_bytes);
    loss_host_ = cuda::PinnedBuffer::allocate(sizeof(float));
    *loss_host_.as<float>() = 0.0f;
    if (staging_bytes) std::memset(staging_.get(), 0, staging_bytes);
    if (!use_graph_) return;
    const auto t0 = std::chrono::steady_clock::now();
    trace::Span capture_span("capture");
    const int k = copies_in_graph_;
    graph_ = capture_steps(stream_, num_steps(), [&](int i) { issue(i); },
                           [&](int i) {
                             if (i < k) return fmt::format("input copy {} ({} bytes)", i, inputs_[static_cast<size_t>(i)].bytes);
                             if (i == k + static_cast<int>(ops_.size())) return std::string("loss copy to pinned host memory");
                             const Node& n = g_.nodes[static_cast<size_t>(ops_[static_cast<size_t>(i - k)].node)];
                             return fmt::format("{} ({})", quote_name(n.name), op_name(n.op));
                           });
    capture_ms = ms_since(t0);
    capture_span.end();
    if (opt.instantiate) instantiate();
  }
  ~CudaRunner() override {
    // Nothing may still read staging or the buffers when they are freed.
    TG_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
    if (side_) TG_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(side_.get()));  // a step stopped between fork and join
  }

  float* staging() override { return staging_.as<float>(); }
  void before_host_write() override {
    // A stream sync rather than an event recorded after each launch: it waits
    // for the same thing and keeps the replay path to one cudaGraphLaunch.
    if (pending_) synchronize();
  }
  void run() override {
    if (use_graph_) {
      for (size_t i = static_cast<size_t>(copies_in_graph_); i < inputs_.size(); ++i) copy_input(inputs_[i]);
      launch_graph();
    } else {
      for (const StagedInput& in : inputs_) copy_input(in);
      for (int i = 0, n = num_steps(); i < n; ++i) issue(i);
    }
    pending_ = true;
  }
  void replay_resident() override {
    if (!use_graph_ || copies_in_graph_ > 0)
      throw std::logic_error("static executor: replay_resident needs a CUDA graph captured without its input "
                             "copies; compile with inputs_in_graph = false");
    launch_graph();
    pending_ = true;
  }
  int kernels_per_run() const override {
    if (!use_graph_) return static_cast<int>(ops_.size());
    size_t n = 0;
    TG_CUDA_CHECK(cudaGraphGetNodes(graph_.get(), nullptr, &n));
    std::vector<cudaGraphNode_t> nodes(n);
    TG_CUDA_CHECK(cudaGraphGetNodes(graph_.get(), nodes.data(), &n));
    int kernels = 0;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType t{};
      TG_CUDA_CHECK(cudaGraphNodeGetType(node, &t));
      kernels += t == cudaGraphNodeTypeKernel ? 1 : 0;
    }
    return kernels;
  }
  void synchronize() override {
    TG_CUDA_CHECK(cudaStreamSynchronize(stream_));
    pending_ = false;
  }
  float loss_host() const override { return *loss_host_.as<float>(); }
  bool has_graph() const override { return use_graph_; }
  void instantiate() override {
    TG_TRACE_SCOPE("instantiate");
    const auto t0 = std::chrono::steady_clock::now();
    exec_ = cuda::GraphExec::instantiate(graph_);
    instantiate_ms = ms_since(t0);
  }
  bool update_from(DeviceRunner& previous) override {
    auto* prev = dynamic_cast<CudaRunner*>(&previous);
    if (!prev || !use_graph_ || !prev->use_graph_)
      throw std::logic_error("update_from: both plans must be captured CUDA graphs");
    prev->synchronize();  // the instance must be idle before it is rewritten
    TG_TRACE_SCOPE("graph update");
    const auto t0 = std::chrono::steady_clock::now();
    exec_ = std::move(prev->exec_);
    const bool updated = update_or_instantiate(exec_, graph_);
    instantiate_ms = ms_since(t0);
    return updated;
  }

 private:
  void launch_graph() {
    if (!exec_)
      throw std::logic_error("static executor: the CUDA graph was captured but never instantiated; call "
                             "instantiate() or update_from() first");
    exec_.launch(stream_);
  }
  void copy_input(const StagedInput& in) {
    TG_CUDA_CHECK(cudaMemcpyAsync(in.device, static_cast<char*>(staging_.get()) + in.staging_offset, in.bytes,
                                  cudaMemcpyHostToDevice, stream_));
  }
  // The captured steps: the input copies (when in the graph), the schedule, then
  // (training) the loss copy back. Plain launches run the same steps after all copies.
  int num_steps() const { return copies_in_graph_ + static_cast<int>(ops_.size()) + (loss_device_ ? 1 : 0); }
  void issue(int i) {
    const int k = copies_in_graph_;
    if (i == k + static_cast<int>(ops_.size())) {
      TG_CUDA_CHECK(cudaMemcpyAsync(loss_host_.get(), loss_device_, sizeof(float), cudaMemcpyDeviceToHost, stream_));
    } else if (i < k) {
      if (use_graph_) copy_input(inputs_[static_cast<size_t>(i)]);
    } else {
      const int at = i - k;
      const ScheduledOp& op = ops_[static_cast<size_t>(at)];
      if (op.side) {
        TG_CUDA_CHECK(cudaEventRecord(fork_.get(), stream_));
        TG_CUDA_CHECK(cudaStreamWaitEvent(side_.get(), fork_.get(), 0));
        be_.run_on(op.call, side_.get());
      } else {
        be_.run(op.call);
      }
      if (at == static_cast<int>(ops_.size()) - 1 && has_side_) {  // join before the loss copy and the end
        TG_CUDA_CHECK(cudaEventRecord(join_.get(), side_.get()));
        TG_CUDA_CHECK(cudaStreamWaitEvent(stream_, join_.get(), 0));
      }
    }
  }

  CudaBackend& be_;
  cudaStream_t stream_;
  const Graph& g_;
  const std::vector<ScheduledOp>& ops_;
  std::vector<StagedInput> inputs_;
  bool use_graph_;
  const float* loss_device_;
  int copies_in_graph_;  // the first inputs_ whose copies are graph nodes (all or none)
  cuda::PinnedBuffer staging_;
  cuda::PinnedBuffer loss_host_;
  bool pending_ = false;
  cuda::CudaGraph graph_;
  cuda::GraphExec exec_;
  bool has_side_ = false;  // some op runs on the side stream (the lanes pass)
  cuda::Stream side_;
  cuda::Event fork_, join_;
};

}  // namespace

std::unique_ptr<DeviceRunner> make_cuda_runner(Backend& backend, const Graph& g, const std::vector<ScheduledOp>& ops,
                                               std::vector<StagedInput> inputs, size_t staging_bytes,
                                               const RunnerOptions& opt) {
#ifdef TG_STATIC_HAVE_CUDA_BACKEND
  auto* cb = dynamic_cast<CudaBackend*>(&backend);
  if (!cb) throw std::invalid_argument("static executor: a CUDA-kind backend that is not tg::CudaBackend");
  return std::make_unique<CudaRunner>(*cb, g, ops, std::move(inputs), staging_bytes, opt);
#else
  (void)backend; (void)g; (void)ops; (void)inputs; (void)staging_bytes; (void)opt;
  throw std::logic_error("static executor: built before kernels/cuda/cuda_backend.h existed; rebuild");
#endif
}

}  // namespace tg
