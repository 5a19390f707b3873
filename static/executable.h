#pragma once
// A compiled static plan, ready to run: the arena, fixed input buffers, the
// persistent parameters (ParameterStore) and the schedule -- a flat list of
// prebuilt OpCalls whose pointers are all resolved at build time.
//
// CPU: run() copies the feeds into the input buffers and runs the schedule as is.
// CUDA: the schedule is stream-captured once into a CUDA Graph and replayed.
// Inputs are copied INSIDE the graph: its first nodes are H2D memcpys from one
// pinned staging buffer into the fixed device input buffers, so a replay is one
// copy of the feeds into staging (host; from 1 MiB of feeds on, split over the
// shared copy threads, kernels/parallel_memcpy.h) plus one cudaGraphLaunch. Before
// staging is overwritten, run() waits for the previous replay's copy to finish
// (a stream synchronize, only when feeds are given), so a replay never reads
// half-new inputs.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "kernels/backend.h"
#include "kernels/op_call.h"
#include "static/device_runner.h"
#include "static/parameter_store.h"
#include "static/planner.h"

namespace tg {

// Feeds (graph/graph.h): an input left out keeps its previous contents.

// How StaticExecutable::feed copies the feeds into pinned staging (CUDA; the
// CPU backend copies into its input buffers). tg-train measures each (`feed`,
// `step_by_feed_copy`). threads_streaming is the default because the training
// step is fastest with it at every size from 1 MiB of feeds on: threads copy
// faster than one core, and cached stores on threads leave dirty lines in four
// cores' caches that slow the graph's H2D read of staging (CHANGELOG.md has the
// figures); below 1 MiB all three are one memcpy on the caller.
enum class FeedCopy {
  serial,            // one memcpy per feed on the caller
  threads,           // from 1 MiB of feeds on, split over shared_host_copier()'s threads
  threads_streaming  // the same with non-temporal stores (kernels/parallel_memcpy.h)
};
const char* feed_copy_name(FeedCopy f);

struct ExecutableOptions {
  bool use_cuda_graph = true;  // CUDA only: false = plain launches of the same schedule (the
                               // switch that measures the graph's own effect)
  bool instantiate = true;     // CUDA graph only: false = capture but leave instantiation to
                               // update_from() (the `update` shape strategy)
  // Inputs the model declares but the compiled graph does not read (an inference
  // graph prunes the loss's target): feeds for them are accepted and ignored, so
  // that the same feeds drive both executors. Any other unknown name is an error.
  std::vector<std::string> pruned_inputs;
  bool poison_arena = false;   // fill the arena with NaN once, so that a value read before it is
                               // written (a planner bug) shows up in the results
  FeedCopy feed_copy = FeedCopy::threads_streaming;  // CUDA: how feeds go into pinned staging
  bool inputs_in_graph = true;  // CUDA graph: the inputs' H2D copies are its first nodes (else issued
                                // before each launch; replay_resident() then replays without them)
};

// The call of one node: its op, attributes and tensors, with pointers from `ptr` (per
// value id) or null ones (for Backend::prepare, which reads shapes only). Inputs past
// kMaxOpInputs (variadic ops) go into `more`, which the call points at.
kernels::OpCall node_call(const Graph& g, const Node& node, const std::vector<float*>* ptr,
                          std::vector<kernels::TensorView>& more);
// The workspaces the nodes' kernels need on this backend (Backend::prepare). A convolution's
// is its own (PlanOptions::node_workspace: planned like a value live at its step, since a
// cuDNN algorithm may want hundreds of MiB), and so is any the backend marks as the call's
// own (Prepared::own_workspace: a GEMM's aligned copies of a vocabulary-sized operand); the
// others share one region of the largest (PlanOptions::workspace_bytes: the GEMMs'
// workspace, at most the backend's 32 MiB).
struct NodeWorkspaces {
  int64_t shared = 0;
  std::vector<int64_t> own;  // per node id
};
NodeWorkspaces node_workspaces(const Graph& g, Backend& backend);

class StaticExecutable {
 public:
  using Launch = ScheduledOp;

  StaticExecutable(std::shared_ptr<const Graph> graph, std::vector<int> order, MemoryPlan plan,
                   std::shared_ptr<ParameterStore> params, int loss_value, const ExecutableOptions& opt = {});
  ~StaticExecutable();
  StaticExecutable(const StaticExecutable&) = delete;
  StaticExecutable& operator=(const StaticExecutable&) = delete;

  // Copies `feeds` in and runs (replays) the schedule once. Asynchronous on CUDA.
  void run(const Feeds& feeds = {});
  // The first half of run(feeds): waits until the previous run has read its
  // inputs, then copies `feeds` into staging (CUDA) or the input buffers (CPU).
  void feed(const Feeds& feeds);
  // run() then the loss (synchronizes). Throws when the graph has no loss.
  float step(const Feeds& feeds = {});
  // The computation alone: one graph launch, the inputs left as they are on the device
  // (compiled with inputs_in_graph = false; CUDA). What a CUDA Graph benchmark whose
  // inputs are already on the GPU replays. Asynchronous.
  void replay_resident();
  // Kernels one run launches: the CUDA graph's kernel nodes (a cuBLAS call may be more
  // than one); the schedule's ops otherwise.
  int kernels_per_run() const;
  // Waits for the last run() (CUDA); nothing to do on the CPU.
  void synchronize() const;
  // A value's current contents on the host (synchronizes). Views and in-place
  // values read the storage they share: read a value before a later node reuses
  // its bytes is only meaningful for graph outputs, parameters and inputs.
  std::vector<float> read(int value) const;
  std::vector<float> read(const std::string& name) const;
  // read() into a vector the caller keeps from run to run: after the first, a read of the
  // same value allocates nothing and touches no fresh page (copy_to_host_into).
  void read_into(int value, std::vector<float>& out) const;
  void read_into(const std::string& name, std::vector<float>& out) const;
  // Fast path: host pointer to the input's slot in staging (CUDA) or its buffer
  // (CPU); write there, then run() with no feeds.
  float* input_slot(const std::string& name);

  const Graph& graph() const { return *graph_; }
  const MemoryPlan& plan() const { return plan_; }
  const std::vector<Launch>& schedule() const { return launches_; }
  const std::vector<int>& order() const { return order_; }
  Backend& backend() const { return params_->backend(); }
  ParameterStore& parameters() const { return *params_; }
  int loss_value() const { return loss_; }
  bool uses_cuda_graph() const { return runner_ && runner_->has_graph(); }
  // Device memory this plan owns: arena + input buffers (parameters are shared).
  int64_t device_bytes() const;
  double capture_ms() const { return runner_ ? runner_->capture_ms : 0.0; }
  double instantiate_ms() const { return runner_ ? runner_->instantiate_ms : 0.0; }

  // `update` strategy: take `previous`'s instantiated graph and try
  // cudaGraphExecUpdate with this plan's captured graph; re-instantiate when the
  // update is refused (topology changed). Returns true when the update was used.
  // `previous` is left without an executable graph (it must not run again).
  bool update_from(StaticExecutable& previous);
  // Instantiates when constructed with instantiate = false (or after a failed update).
  void instantiate();

  // Resolved device pointer of a value (its storage root).
  float* pointer(int value) const;

 private:
  void allocate();
  // For out-of-memory messages: bytes per place (arena, inputs, parameters) and per role.
  std::string memory_breakdown() const;
  void build_schedule();
  // After a run: the copies (the low_copies pass) of the parameters this plan updates but
  // whose copies it does not write, bound in the shared store by a plan compiled with the
  // pass, filled again from their parameters, so that plan reads what a cast would give.
  void refresh_unwritten_copies();

  std::shared_ptr<const Graph> graph_;
  mutable std::vector<unsigned char> read_staging_;  // read_into's 16-bit bytes before widening
  std::vector<int> order_;
  MemoryPlan plan_;
  std::shared_ptr<ParameterStore> params_;
  int loss_ = -1;
  ExecutableOptions opt_;
  void* arena_ = nullptr;
  std::vector<float*> ptr_;  // per value id
  struct InputSlot {
    int value;
    float* device;
    size_t staging_offset;  // bytes into staging
    size_t bytes;
  };
  std::vector<InputSlot> inputs_;
  const InputSlot& slot(const std::string& name) const;
  std::vector<void*> input_buffers_;
  int64_t staging_bytes_ = 0, input_bytes_ = 0;
  std::vector<Launch> launches_;
  std::vector<std::vector<kernels::TensorView>> more_;  // variadic inputs past kMaxOpInputs, per launch
  std::unique_ptr<DeviceRunner> runner_;  // CUDA only
  // The parameters this plan updates, each with the copies of it the plan writes (none
  // without the low_copies pass; the padded one only with vocab_pad).
  std::unordered_map<std::string, std::vector<std::string>> updated_;
  std::vector<std::string> masters_to_refresh_;  // those of them the store holds other copies of
  uint64_t copies_seen_ = ~uint64_t{0};          // ParameterStore::copies_bound() when masters_to_refresh_ was made
};

}  // namespace tg
