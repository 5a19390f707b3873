#pragma once
// The device-specific half of a StaticExecutable, behind an interface without
// CUDA types so that executable.cpp compiles in CPU-only builds. The CUDA runner
// (cuda_graph.cpp) owns the pinned staging buffer, the captured graph and its
// executable instance.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kernels/backend.h"
#include "kernels/op_call.h"

namespace tg {

struct ScheduledOp {
  kernels::OpCall call;
  int node = -1;      // graph node id, for error messages and NVTX names
  bool side = false;  // the lanes pass: issued on the side stream (static/passes/lanes.cpp)
};

struct StagedInput {
  void* device = nullptr;     // fixed device buffer of the input
  size_t staging_offset = 0;  // bytes into the pinned staging buffer
  size_t bytes = 0;
};

struct RunnerOptions {
  bool use_cuda_graph = true;
  bool instantiate = true;
  // When set, the last node of every run copies these 4 bytes (the loss) into
  // pinned host memory, so that step() needs no separate (pageable, ~10 us) read.
  const float* loss_device = nullptr;
  // The inputs' H2D copies as the graph's first nodes (true), or issued before each
  // launch (false), which lets replay_resident() replay the computation alone, as a
  // CUDA Graph benchmark with inputs already on the device does.
  bool inputs_in_graph = true;
};

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // Pinned host memory holding every input back to back (StagedInput offsets).
  virtual float* staging() = 0;
  // Waits until the previous run has finished reading staging.
  virtual void before_host_write() = 0;
  // Copies staging into the input buffers and runs the schedule: one graph
  // launch, or (use_cuda_graph = false) the same copies and ops launched eagerly.
  virtual void run() = 0;
  // The graph alone, the inputs left as they are on the device (inputs_in_graph false).
  virtual void replay_resident() = 0;
  // Kernels one run launches: the captured graph's kernel nodes (a cuBLAS call can be
  // more than one), or the schedule's ops with plain launches.
  virtual int kernels_per_run() const = 0;
  virtual void synchronize() = 0;
  // The loss copied back by the last run (valid after synchronize()).
  virtual float loss_host() const = 0;
  virtual bool has_graph() const = 0;
  virtual void instantiate() = 0;
  // Takes previous's instance and tries cudaGraphExecUpdate; re-instantiates
  // when refused. True when the update was accepted.
  virtual bool update_from(DeviceRunner& previous) = 0;
  double capture_ms = 0, instantiate_ms = 0;
};

// Captures (when opt.use_cuda_graph) `ops` into a CUDA Graph on the backend's
// stream. `ops` and the buffers they point to must outlive the runner. Throws
// CaptureError (cuda_graph.h) naming the op that failed to capture.
// In builds without CUDA it throws std::logic_error.
std::unique_ptr<DeviceRunner> make_cuda_runner(Backend& backend, const Graph& g, const std::vector<ScheduledOp>& ops,
                                               std::vector<StagedInput> inputs, size_t staging_bytes,
                                               const RunnerOptions& opt);

}  // namespace tg
