#include "static/executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/validate.h"
#include "kernels/dtype_copy.h"
#include "kernels/out_of_memory.h"
#include "kernels/parallel_memcpy.h"
#include "static/passes/pass.h"
#include "trace/trace.h"

namespace tg {

namespace {
constexpr size_t kStagingAlign = 256;

// Refused before anything is allocated: a node whose op the backend has no kernel for in
// the dtype of its first input (its output when it has none).
void require_kernels(const Graph& g, const Backend& be) {
  for (const Node& node : g.nodes) {
    const int v = node.inputs.empty() ? (node.outputs.empty() ? -1 : node.outputs[0]) : node.inputs[0];
    if (v < 0) continue;
    require_kernel(be, "the static executor", node.name, node.op, g.values[static_cast<size_t>(v)].dtype);
  }
}

// Bytes held by the live plans (arena and inputs), for the trace's memory counter.
std::atomic<int64_t> g_plan_bytes{0};
void count_plan_bytes(int64_t delta) {
  const int64_t now = g_plan_bytes.fetch_add(delta) + delta;
  trace::counter("memory: static plans", "allocated", now);
}
}  // namespace

StaticExecutable::StaticExecutable(std::shared_ptr<const Graph> graph, std::vector<int> order, MemoryPlan plan,
                                   std::shared_ptr<ParameterStore> params, int loss_value,
                                   const ExecutableOptions& opt)
    : graph_(std::move(graph)), order_(std::move(order)), plan_(std::move(plan)), params_(std::move(params)),
      loss_(loss_value), opt_(opt) {
  if (!graph_ || !params_) throw std::invalid_argument("StaticExecutable: graph and parameter store are required");
  if (plan_.offset.size() != graph_->values.size())
    throw std::invalid_argument("StaticExecutable: the memory plan was made for another graph");
  require_kernels(*graph_, backend());
  try {
    allocate();
    build_schedule();
    if (backend().kind() == DeviceKind::cuda) {
      std::vector<StagedInput> staged;
      for (const InputSlot& s : inputs_) staged.push_back({s.device, s.staging_offset, s.bytes});
      RunnerOptions ro;
      ro.use_cuda_graph = opt_.use_cuda_graph;
      ro.instantiate = opt_.instantiate;
      ro.inputs_in_graph = opt_.inputs_in_graph;
      if (loss_ >= 0) ro.loss_device = ptr_[static_cast<size_t>(loss_)];
      runner_ = make_cuda_runner(backend(), *graph_, launches_, std::move(staged),
                                 static_cast<size_t>(staging_bytes_), ro);
    }
    count_plan_bytes(device_bytes());
  } catch (...) {
    runner_.reset();
    for (void* p : input_buffers_) backend().raw_free(p);
    if (arena_) backend().raw_free(arena_);
    throw;
  }
}

StaticExecutable::~StaticExecutable() {
  // The graph instance points into the buffers: destroy it first.
  runner_.reset();
  for (void* p : input_buffers_) backend().raw_free(p);
  if (arena_) backend().raw_free(arena_);
  count_plan_bytes(-device_bytes());
}

std::string StaticExecutable::memory_breakdown() const {
  int64_t inputs = 0;
  for (size_t v = 0; v < graph_->values.size(); ++v)
    if (plan_.placement[v] == Placement::external && graph_->values[v].role == Role::input)
      inputs += graph_->values[v].bytes();
  const int64_t persistent = plan_.external_bytes - inputs;
  std::string roles;
  for (Role r : {Role::parameter, Role::optimizer_state, Role::gradient, Role::activation, Role::temporary,
                 Role::output, Role::input})
    roles += fmt::format("{}{} {}", roles.empty() ? "" : ", ", role_name(r), format_bytes(plan_.role(r)));
  return fmt::format("the plan needs arena {} + inputs {} + parameters and optimizer state {} = {} (plan mode {}); "
                     "allocated so far: arena {}, inputs {}, parameter store {}; by role: {}",
                     format_bytes(plan_.arena_bytes), format_bytes(inputs), format_bytes(persistent),
                     format_bytes(plan_.arena_bytes + plan_.external_bytes), plan_mode_name(plan_.mode),
                     format_bytes(arena_ ? plan_.arena_bytes : 0), format_bytes(input_bytes_),
                     format_bytes(params_->bytes()), roles);
}

void StaticExecutable::allocate() {
  TG_TRACE_SCOPE("allocate");
  const Graph& g = *graph_;
  Backend& be = backend();
  const std::string advice = plan_.mode == PlanMode::naive
                                 ? "Plan with mode planned (naive gives every value its own buffer), or reduce "
                                   "the batch or model size."
                                 : "Reduce the batch or model size.";
  const std::function<std::string()> held = [this] { return memory_breakdown(); };
  if (plan_.arena_bytes > 0) {
    arena_ = raw_alloc_or_throw(be, static_cast<size_t>(plan_.arena_bytes), "static plan (arena)", held, advice);
    if (opt_.poison_arena) {  // a NaN as f32, and two NaNs as bf16 or f16
      std::vector<uint32_t> nan(static_cast<size_t>(plan_.arena_bytes) / sizeof(uint32_t), 0x7FC07FC0u);
      be.copy_to_device(arena_, nan.data(), nan.size() * sizeof(uint32_t));
    }
  }
  ptr_.assign(g.values.size(), nullptr);
  // The low-precision weight copies (the low_copies pass) are filled from their parameters:
  // bound after every parameter.
  std::vector<int> master_of(g.values.size(), -1);
  for (const Node& n : g.nodes)
    if (op_update_writes_copy(n.op))
      for (const auto& [param, copy] : weight_copies_of(n)) master_of[static_cast<size_t>(copy)] = param;
  size_t staging = 0;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& info = g.values[v];
    if (master_of[v] >= 0) continue;
    switch (plan_.placement[v]) {
      case Placement::arena:
        ptr_[v] = reinterpret_cast<float*>(static_cast<char*>(arena_) + plan_.offset[v]);
        break;
      case Placement::external:
        if (info.role == Role::input) {
          const size_t bytes = static_cast<size_t>(info.bytes());
          auto* p = static_cast<float*>(raw_alloc_or_throw(
              be, bytes, fmt::format("static plan (input {})", quote_name(info.name)), held, advice));
          input_buffers_.push_back(p);
          ptr_[v] = p;
          inputs_.push_back({static_cast<int>(v), p, staging, bytes});
          staging += align_up(bytes, kStagingAlign);
          input_bytes_ += static_cast<int64_t>(bytes);
        } else {
          ptr_[v] = params_->bind(info, held, advice);
        }
        break;
      case Placement::view:
      case Placement::unused: break;
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (master_of[v] >= 0)
      ptr_[v] = params_->bind_copy(g.values[v], g.values[static_cast<size_t>(master_of[v])], held, advice);
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (op_update_writes(n.op, static_cast<int>(i), static_cast<int>(n.inputs.size())) &&
          g.values[static_cast<size_t>(v)].role == Role::parameter)
        updated_.emplace(g.values[static_cast<size_t>(v)].name, std::vector<std::string>{});
    }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (master_of[v] >= 0) {
      auto it = updated_.find(g.values[static_cast<size_t>(master_of[v])].name);
      if (it != updated_.end()) it->second.push_back(g.values[v].name);
    }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (plan_.placement[v] == Placement::view)
      ptr_[v] = reinterpret_cast<float*>(reinterpret_cast<char*>(ptr_[static_cast<size_t>(plan_.storage[v])]) +
                                         plan_.view_offset[v]);
  if (be.kind() == DeviceKind::cuda) staging_bytes_ = static_cast<int64_t>(staging);
}

kernels::OpCall node_call(const Graph& g, const Node& node, const std::vector<float*>* ptr,
                          std::vector<kernels::TensorView>& more) {
  auto view = [&](int v) {
    const ValueInfo& info = g.values[static_cast<size_t>(v)];
    return kernels::TensorView{ptr ? (*ptr)[static_cast<size_t>(v)] : nullptr, info.shape, info.dtype};
  };
  kernels::OpCall c;
  c.op = node.op;
  c.attrs = &node.attrs;
  c.num_inputs = static_cast<int>(node.inputs.size());
  more.clear();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i < c.in.size()) c.in[i] = view(node.inputs[i]);
    else more.push_back(view(node.inputs[i]));
  }
  c.more = more.empty() ? nullptr : more.data();
  if (!node.outputs.empty()) c.out = view(node.outputs[0]);
  if (node.outputs.size() > 1) c.out2 = view(node.outputs[1]);
  return c;
}

NodeWorkspaces node_workspaces(const Graph& g, Backend& backend) {
  NodeWorkspaces w;
  w.own.assign(g.nodes.size(), 0);
  std::vector<kernels::TensorView> more;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const Backend::Prepared p = backend.prepare(node_call(g, node, nullptr, more));
    const auto b = static_cast<int64_t>(p.workspace_bytes);
    if (op_in_family(node.op, "conv") || p.own_workspace) w.own[n] = b;
    else w.shared = std::max(w.shared, b);
  }
  return w;
}

void StaticExecutable::build_schedule() {
  TG_TRACE_SCOPE("schedule");
  const Graph& g = *graph_;
  launches_.clear();
  launches_.reserve(order_.size());
  more_.clear();
  more_.reserve(order_.size());  // the calls point into these vectors: no reallocation below
  void* workspace =
      plan_.workspace_offset >= 0 ? static_cast<char*>(arena_) + plan_.workspace_offset : nullptr;
  // With a side stream (the lanes pass) the GEMM workspace is two halves, the main
  // stream's and the side stream's, since GEMMs of both may run at once.
  const bool lanes = std::find(plan_.live_to_end.begin(), plan_.live_to_end.end(), true) != plan_.live_to_end.end();
  const int64_t ws_each = lanes ? plan_.workspace_bytes / 2 / 256 * 256 : plan_.workspace_bytes;
  for (int n : order_) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    // A view (a reshape, a slice the plan made a view) costs nothing at run time: its pointer is
    // into its source's storage.
    if (!node.outputs.empty() && plan_.placement[static_cast<size_t>(node.outputs[0])] == Placement::view) continue;
    Launch l;
    l.node = n;
    l.side = lanes && plan_.live_to_end[static_cast<size_t>(n)];
    more_.emplace_back();
    l.call = node_call(g, node, &ptr_, more_.back());
    // The algorithm is settled now, once (a GEMM's cuBLASLt heuristic, a convolution's
    // cuDNN one), and its workspace is the plan's region of the arena.
    const Backend::Prepared p = backend().prepare(l.call);
    l.call.prepared = p.state;
    const size_t nsz = static_cast<size_t>(n);
    const bool own = nsz < plan_.node_workspace_offset.size() && plan_.node_workspace_offset[nsz] >= 0;
    if (own) {
      if (p.workspace_bytes > static_cast<size_t>(plan_.node_workspace_bytes[nsz]))
        graph_error("{} {}: its kernel needs {} bytes of workspace, the plan gives it {}; plan with "
                    "PlanOptions::node_workspace = node_workspaces(graph, backend).own",
                    op_name(node.op), quote_name(node.name), p.workspace_bytes, plan_.node_workspace_bytes[nsz]);
      l.call.workspace = static_cast<char*>(arena_) + plan_.node_workspace_offset[nsz];
      l.call.workspace_bytes = static_cast<size_t>(plan_.node_workspace_bytes[nsz]);
    } else if (p.state && p.workspace_bytes > static_cast<size_t>(ws_each))
      graph_error("{} {}: its kernel needs {} bytes of workspace, the plan has {}; plan with "
                  "PlanOptions::workspace_bytes = node_workspaces(graph, backend).shared (twice that with a side stream)",
                  op_name(node.op), quote_name(node.name), p.workspace_bytes, ws_each);
    if (p.state && !own) {
      l.call.workspace = static_cast<char*>(workspace) + (l.side ? ws_each : 0);
      l.call.workspace_bytes = static_cast<size_t>(ws_each);
    }
    launches_.push_back(l);
  }
}

const StaticExecutable::InputSlot& StaticExecutable::slot(const std::string& name) const {
  for (const InputSlot& s : inputs_)
    if (graph_->values[static_cast<size_t>(s.value)].name == name) return s;
  std::string names;
  for (const InputSlot& s : inputs_) names += (names.empty() ? "" : ", ") + quote_name(graph_->values[static_cast<size_t>(s.value)].name);
  throw std::invalid_argument(fmt::format("feed {} is not an input of this graph; its inputs are: {}", quote_name(name),
                                          names.empty() ? "(none)" : names));
}

float* StaticExecutable::input_slot(const std::string& name) {
  const InputSlot& s = slot(name);
  if (!runner_) return s.device;
  runner_->before_host_write();
  return reinterpret_cast<float*>(reinterpret_cast<char*>(runner_->staging()) + s.staging_offset);
}

const char* feed_copy_name(FeedCopy f) {
  switch (f) {
    case FeedCopy::serial: return "serial";
    case FeedCopy::threads: return "threads";
    case FeedCopy::threads_streaming: return "threads_streaming";
  }
  return "?";
}

void StaticExecutable::feed(const Feeds& feeds) {
  if (feeds.empty()) return;
  TG_TRACE_SCOPE("feed");
  // Every feed is checked before any is copied: a bad one leaves the inputs as they were.
  // The staging pointer is fixed; only writing through it must wait for the previous run.
  char* staged = runner_ ? reinterpret_cast<char*>(runner_->staging()) : nullptr;
  std::vector<ParallelMemcpy::Job> jobs;
  // Feeds of bf16, f16, i32 and i64 inputs, converted on the host (graph/float_formats.h).
  std::vector<std::vector<unsigned char>> narrowed;
  narrowed.reserve(feeds.size());
  for (const auto& [name, data] : feeds) {
    if (std::find(opt_.pruned_inputs.begin(), opt_.pruned_inputs.end(), name) != opt_.pruned_inputs.end() &&
        graph_->find_value(name) < 0)
      continue;
    const InputSlot& s = slot(name);
    const ValueInfo& v = graph_->values[static_cast<size_t>(s.value)];
    if (static_cast<int64_t>(data.size()) != v.shape.numel())
      throw std::invalid_argument(fmt::format("feed {} has {} elements but input {} needs {}; compile a plan for "
                                              "this shape (or use a shape strategy)",
                                              quote_name(name), data.size(), v.shape.str(), v.shape.numel()));
    const void* src = data.data();
    if (v.dtype != DType::F32) {
      narrowed.emplace_back(data.size() * static_cast<size_t>(dtype_size(v.dtype)));
      store_as_dtype(data.data(), data.size(), v.dtype, narrowed.back().data());
      src = narrowed.back().data();
    }
    jobs.push_back({runner_ ? staged + s.staging_offset : static_cast<void*>(s.device), src, s.bytes});
  }
  if (!runner_) {
    for (const ParallelMemcpy::Job& j : jobs) backend().copy_to_device(j.dst, j.src, j.bytes);
    return;
  }
  runner_->before_host_write();
  switch (opt_.feed_copy) {
    case FeedCopy::serial:
      for (const ParallelMemcpy::Job& j : jobs) std::memcpy(j.dst, j.src, j.bytes);
      break;
    case FeedCopy::threads:  // one hand-off for all feeds, on the caller alone when small
      shared_host_copier().copy_all(jobs, ParallelMemcpy::Stores::cached);
      break;
    case FeedCopy::threads_streaming:
      shared_host_copier().copy_all(jobs, ParallelMemcpy::Stores::streaming);
      break;
  }
}

void StaticExecutable::run(const Feeds& feeds) {
  feed(feeds);
  if (runner_) {
    TG_TRACE_SCOPE(runner_->has_graph() ? "replay" : "launch schedule");
    runner_->run();
    refresh_unwritten_copies();
    return;
  }
  TG_TRACE_SCOPE("run schedule");
  Backend& be = backend();
  for (const Launch& l : launches_) {
    try {
      be.run(l.call);
    } catch (const InputError& e) {  // fed data the op cannot use (labels, counts): name the node
      rethrow_at_node(e, l.call.op, graph_->nodes[static_cast<size_t>(l.node)].name);
    }
  }
  refresh_unwritten_copies();
}

void StaticExecutable::refresh_unwritten_copies() {
  if (updated_.empty()) return;
  if (params_->copies_bound() != copies_seen_) {
    copies_seen_ = params_->copies_bound();
    masters_to_refresh_.clear();
    for (const auto& [copy, master] : params_->copies()) {
      const auto it = updated_.find(master);
      if (it != updated_.end() && std::find(it->second.begin(), it->second.end(), copy) == it->second.end())
        masters_to_refresh_.push_back(master);
    }
    std::sort(masters_to_refresh_.begin(), masters_to_refresh_.end());
    masters_to_refresh_.erase(std::unique(masters_to_refresh_.begin(), masters_to_refresh_.end()),
                              masters_to_refresh_.end());
  }
  for (const std::string& master : masters_to_refresh_) params_->refresh_copies_of(master, updated_.at(master));
}

void StaticExecutable::replay_resident() {
  if (!runner_) throw std::logic_error("StaticExecutable::replay_resident: a CUDA plan only (this one runs on the CPU)");
  TG_TRACE_SCOPE("replay");
  runner_->replay_resident();
  refresh_unwritten_copies();
}

int StaticExecutable::kernels_per_run() const {
  return runner_ ? runner_->kernels_per_run() : static_cast<int>(launches_.size());
}

float StaticExecutable::step(const Feeds& feeds) {
  if (loss_ < 0) throw std::logic_error("StaticExecutable::step: this plan has no loss (an inference plan); use run()");
  run(feeds);
  if (runner_) {
    TG_TRACE_SCOPE("synchronize");
    runner_->synchronize();
    return runner_->loss_host();
  }
  TG_TRACE_SCOPE("read back");
  float loss = 0;
  backend().copy_to_host(&loss, ptr_[static_cast<size_t>(loss_)], sizeof(float));
  return loss;
}

float* StaticExecutable::pointer(int value) const {
  if (value < 0 || value >= static_cast<int>(ptr_.size()))
    throw std::invalid_argument(fmt::format("value id {} is not in this graph ({} values)", value, ptr_.size()));
  return ptr_[static_cast<size_t>(value)];
}

std::vector<float> StaticExecutable::read(int value) const {
  std::vector<float> out;
  read_into(value, out);
  return out;
}

void StaticExecutable::read_into(int value, std::vector<float>& out) const {
  float* p = pointer(value);
  const ValueInfo& v = graph_->values[static_cast<size_t>(value)];
  if (!p)
    throw std::invalid_argument(fmt::format("value {} has no storage: no node writes it and it is not an input", quote_name(v.name)));
  TG_TRACE_SCOPE("read back");
  if (runner_) runner_->synchronize();
  copy_to_host_into(backend(), p, v.shape.numel(), v.dtype, out, read_staging_);
}

std::vector<float> StaticExecutable::read(const std::string& name) const {
  std::vector<float> out;
  read_into(name, out);
  return out;
}

void StaticExecutable::read_into(const std::string& name, std::vector<float>& out) const {
  const int id = graph_->find_value(name);
  if (id < 0) throw std::invalid_argument(fmt::format("read: no value named {} in this graph", quote_name(name)));
  read_into(id, out);
}

void StaticExecutable::synchronize() const {
  TG_TRACE_SCOPE("synchronize");
  if (runner_) runner_->synchronize();
  else backend().synchronize();
}

int64_t StaticExecutable::device_bytes() const { return plan_.arena_bytes + input_bytes_; }

bool StaticExecutable::update_from(StaticExecutable& previous) {
  if (!runner_ || !previous.runner_)
    throw std::logic_error("update_from: both plans must run on the CUDA backend with use_cuda_graph");
  return runner_->update_from(*previous.runner_);
}

void StaticExecutable::instantiate() {
  if (runner_) runner_->instantiate();
}

#ifndef TWOGRAPH_HAVE_CUDA
std::unique_ptr<DeviceRunner> make_cuda_runner(Backend&, const Graph&, const std::vector<ScheduledOp>&,
                                               std::vector<StagedInput>, size_t, const RunnerOptions&) {
  throw std::logic_error("static executor: this build has no CUDA support (configure with -DTWOGRAPH_CUDA=ON)");
}
#endif

}  // namespace tg
