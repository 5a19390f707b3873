// The eager builder. The hot path is apply(): a few integer checks, shape
// inference, one tape entry (training only), one allocator call, one Backend::run
// and the planned frees. No map lookup, no std::function, and once the vectors
// have grown in the first iteration no heap allocation but the tape entry's.
#include "dynamic/eager_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/init.h"
#include "graph/shape_inference.h"
#include "kernels/dtype_copy.h"
#include "trace/trace.h"

namespace tg {

namespace {
using Clock = std::chrono::steady_clock;
int64_t ns(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}
size_t bytes_of(const Shape& s, DType dt) { return static_cast<size_t>(s.numel()) * static_cast<size_t>(dtype_size(dt)); }

}  // namespace

EagerBuilder::EagerBuilder(Backend& backend, Allocator& allocator, EagerOptions opt)
    : backend_(backend), alloc_(allocator), opt_(opt) {
  if (opt_.sample_period < 1 || (opt_.sample_period & (opt_.sample_period - 1)) != 0)
    throw std::invalid_argument(
        fmt::format("EagerOptions::sample_period must be a power of two >= 1, got {}", opt_.sample_period));
  sample_mask_ = opt_.timing == Timing::every_op ? 0 : opt_.sample_period - 1;
  alloc_.set_role_breakdown([this] { return role_breakdown(); });
  shapes_.reserve(3);
  node_name_.reserve(16);
}

EagerBuilder::~EagerBuilder() {
  for (size_t i = 0; i < slots_.size(); ++i) release(static_cast<int>(i));
  for (Slot& s : pslots_) alloc_.free(s.block);
  alloc_.set_role_breakdown(nullptr);
}

// ---- slots ---------------------------------------------------------------------

EagerBuilder::Slot& EagerBuilder::slot(int id) {
  return id >= kPersistentBase ? pslots_[static_cast<size_t>(id - kPersistentBase)] : slots_[static_cast<size_t>(id)];
}

EagerBuilder::Slot& EagerBuilder::live_slot(int id, OpKind op, int pos) {
  const bool persistent = id >= kPersistentBase;
  const size_t n = persistent ? pslots_.size() : slots_.size();
  const size_t i = static_cast<size_t>(persistent ? id - kPersistentBase : id);
  if (id < 0 || i >= n)
    graph_error("{} (eager op {}): input {} is value id {}, which is not a tensor of this iteration; values do not "
                "survive end_iteration(), only parameters and optimizer state do",
                op_name(op), trace_.size(), pos, id);
  Slot& s = persistent ? pslots_[i] : slots_[i];
  if (!s.alive)
    graph_error("{} (eager op {}): input {} (value {}, shape {}) was already freed: the previous iteration's last use "
                "of it came earlier, so the model's op sequence changed between iterations. Keep it with "
                "mark_output(), or run with EagerOptions::free_early = false",
                op_name(op), trace_.size(), pos, id, s.shape.str());
  return s;
}

int EagerBuilder::new_slot(const Shape& shape, Role role, DType dtype) {
  Slot s;
  s.shape = shape;
  s.dtype = dtype;
  s.role = role;
  slots_.push_back(s);
  return static_cast<int>(slots_.size() - 1);
}

void EagerBuilder::alloc_slot(int id) {
  Slot& s = slot(id);
  const size_t bytes = bytes_of(s.shape, s.dtype);
  s.block = alloc_.allocate(bytes);
  s.data = static_cast<float*>(s.block.ptr);
  s.owner = id;
  s.aliases = 1;
  s.alive = true;
  role_bytes_[static_cast<size_t>(s.role)] += static_cast<int64_t>(bytes);
  if (track_roles_ && id < kPersistentBase) role_events_.push_back(id);
  count_memory();
}

void EagerBuilder::count_memory() const {
  if (!trace::recording()) return;
  const AllocatorStats st = alloc_.stats();
  trace::counter("memory: dynamic allocator", "allocated", st.current, "reserved", st.reserved);
}

void EagerBuilder::release(int id) {
  Slot& s = slots_[static_cast<size_t>(id)];
  if (!s.alive) return;
  s.alive = false;
  if (s.owner >= kPersistentBase) return;  // a view of a parameter: the parameter keeps the memory
  Slot& o = slots_[static_cast<size_t>(s.owner)];
  if (--o.aliases > 0) return;
  role_bytes_[static_cast<size_t>(o.role)] -= static_cast<int64_t>(o.block.size);
  if (track_roles_) role_events_.push_back(~s.owner);
  alloc_.free(o.block);
  o.block = Block{};
  count_memory();
}

int EagerBuilder::new_persistent(const std::string& name, const Shape& shape, Role role, ParamInit init,
                                 DType dtype) {
  const int id = kPersistentBase + static_cast<int>(pslots_.size());
  Slot s;
  s.shape = shape;
  s.dtype = dtype;
  s.role = role;
  pslots_.push_back(s);
  alloc_slot(id);
  ValueInfo info;
  info.name = name;
  info.shape = shape;
  info.role = role;
  info.init = init;
  info.dtype = dtype;
  copy_to_device_as(backend_, slot(id).data, initial_values(info, opt_.seed), dtype);
  persistent_.push_back(Persistent{name, shape, dtype, role, id});
  persistent_by_name_.emplace(name, static_cast<int>(persistent_.size() - 1));
  return id;
}

Value EagerBuilder::handle(int id) const {
  const Slot& s = id >= kPersistentBase ? pslots_.at(static_cast<size_t>(id - kPersistentBase))
                                        : slots_.at(static_cast<size_t>(id));
  Value v;
  v.id = id;
  v.shape = s.shape;
  v.dtype = s.dtype;
  return v;
}

// ---- Builder -------------------------------------------------------------------

Value EagerBuilder::input(const std::string& name, const Shape& shape, DType dtype) {
  if (!in_iteration_) throw std::logic_error("EagerBuilder::input called outside begin_iteration()/end_iteration()");
  auto it = feeds_->find(name);
  if (it == feeds_->end())
    throw std::invalid_argument(fmt::format("input {} {} was not fed; add feeds[\"{}\"] with {} floats", quote_name(name),
                                            shape.str(), escape_text(name), shape.numel()));
  int64_t n = 0;
  if (!numel_checked(shape, n) || n < 1)
    graph_error("input {}: shape {} has a dim < 1 or too many elements", quote_name(name), shape.str());
  if (it->second.size() != static_cast<size_t>(n))
    throw std::invalid_argument(fmt::format("input {} has shape {} ({} floats) but its feed holds {} floats", quote_name(name),
                                            shape.str(), n, it->second.size()));
  TG_TRACE_SCOPE("feed");
  const int id = new_slot(shape, Role::input, dtype);
  alloc_slot(id);
  copy_to_device_as(backend_, slot(id).data, it->second, dtype);
  return handle(id);
}

// Models ask for their parameters and optimizer state in the same order every
// iteration, so the entry after the last one asked for is usually the one wanted and
// the map is the fallback; -1 when the name is new.
int EagerBuilder::find_persistent(const std::string& name) const {
  if (param_cursor_ < persistent_.size() && persistent_[param_cursor_].name == name)
    return static_cast<int>(param_cursor_);
  const auto it = persistent_by_name_.find(name);
  return it == persistent_by_name_.end() ? -1 : it->second;
}

Value EagerBuilder::take_persistent(int idx) {
  param_cursor_ = static_cast<size_t>(idx) + 1;
  return handle(persistent_[static_cast<size_t>(idx)].id);
}

Value EagerBuilder::parameter(const std::string& name, const Shape& shape, ParamInit init, DType dtype) {
  int idx = find_persistent(name);
  if (idx < 0) {
    int64_t n = 0;
    if (!numel_checked(shape, n) || n < 1)
      graph_error("parameter {}: shape {} has a dim < 1 or too many elements", quote_name(name), shape.str());
    new_persistent(name, shape, Role::parameter, init, dtype);
    idx = static_cast<int>(persistent_.size() - 1);
  } else if (persistent_[static_cast<size_t>(idx)].shape != shape) {
    graph_error("parameter {} was {} in an earlier iteration and is {} now; parameters keep their shape",
                quote_name(name), persistent_[static_cast<size_t>(idx)].shape.str(), shape.str());
  } else if (persistent_[static_cast<size_t>(idx)].dtype != dtype) {
    graph_error("parameter {} was {} in an earlier iteration and is {} now; parameters keep their dtype",
                quote_name(name), dtype_name(persistent_[static_cast<size_t>(idx)].dtype), dtype_name(dtype));
  }
  return take_persistent(idx);
}

Value EagerBuilder::optimizer_state(const Value& param, const std::string& name) {
  int idx = find_persistent(name);
  if (idx < 0) {
    new_persistent(name, param.shape, Role::optimizer_state, optimizer_state_init(), param.dtype);
    idx = static_cast<int>(persistent_.size() - 1);
  }
  return take_persistent(idx);
}

Value EagerBuilder::training_state(const std::string& name, const Shape& shape, ParamInit init, DType dtype) {
  int idx = find_persistent(name);
  if (idx < 0) {
    new_persistent(name, shape, Role::optimizer_state, std::move(init), dtype);
    idx = static_cast<int>(persistent_.size() - 1);
  }
  return take_persistent(idx);
}

void EagerBuilder::mark_output(const Value& v) {
  if (v.id >= kPersistentBase) return;
  live_slot(v.id, OpKind::copy, 0).pinned = true;
}

Value EagerBuilder::apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs, const std::string& name) {
  if (!in_iteration_) throw std::logic_error("EagerBuilder::apply called outside begin_iteration()/end_iteration()");
  if (op_is_update(op) && !run_updates_) return Value{};
  const bool timed = opt_.timing != Timing::off && (op_counter_++ & sample_mask_) == 0;
  trace::Steps steps(op_name(op), "build");
  Clock::time_point t0, t1, t2, t3;
  if (timed) t0 = Clock::now();
  ++times_.ops;

  const int nin = static_cast<int>(inputs.size());
  if (op_is_fused(op))
    graph_error("{}: a fused op, made by the static compiler's graph passes; the dynamic executor runs the ops "
                "it fuses, one by one (eager execution cannot see ahead)", op_name(op));
  if (nin > kMaxOpInputs) graph_error("{}: {} inputs given; no op takes more than {}", op_name(op), nin, kMaxOpInputs);
  kernels::OpCall call;
  call.op = op;
  call.attrs = &attrs;
  call.num_inputs = nin;
  TraceOp tr{op, nin, {}, -1};
  std::fill(std::begin(tr.in), std::end(tr.in), -1);
  shapes_.clear();
  bool all_f32 = op != OpKind::cast;
  for (int i = 0; i < nin; ++i) {
    const int id = inputs[static_cast<size_t>(i)].id;
    Slot& s = live_slot(id, op, i);
    shapes_.push_back(s.shape);
    all_f32 = all_f32 && s.dtype == DType::F32;
    call.in[static_cast<size_t>(i)] = kernels::TensorView{s.data, s.shape, s.dtype};
    tr.in[i] = id;
  }
  const std::string* nm = &name;
  if (name.empty()) {
    node_name_.clear();
    fmt::format_to(std::back_inserter(node_name_), "n{}", trace_.size());
    nm = &node_name_;
  }
  Shape out_shape;
  try {
    out_shape = infer_shape(op, shapes_, attrs, *nm);
  } catch (const GraphError&) {
    // Quoting costs an allocation per op, so only on the failing path: the same
    // inference again, with the name as every message shows it.
    out_shape = infer_shape(op, shapes_, attrs, quote_name(*nm));
  }
  DType out_dtype = DType::F32;
  if (!all_f32) {  // the dtype rule; f32 in, f32 out for every op but cast
    dtypes_.clear();
    for (int i = 0; i < nin; ++i) dtypes_.push_back(call.in[static_cast<size_t>(i)].dtype);
    out_dtype = infer_dtype(op, dtypes_, attrs, quote_name(*nm));
    require_kernel(backend_, "the dynamic executor", *nm, op, nin > 0 ? dtypes_[0] : out_dtype);
  }

  // The output: none (updates), a view of input 0 (reshape, a block slice, in-place relu), or
  // new memory.
  Value out;
  bool needs_memory = false;
  bool view = false;  // no kernel runs
  if (!op_is_update(op)) {
    // Aliasing input 0 (in-place relu, a slice view) is for temporaries: the memory's owner must be
    // neither a parameter nor an input, also when input 0 is a view (a reshape) of one.
    const bool alias_ok = nin > 0 && tr.in[0] < kPersistentBase && [&] {
      const int owner = slots_[static_cast<size_t>(tr.in[0])].owner;
      return owner >= 0 && owner < kPersistentBase && slots_[static_cast<size_t>(owner)].role != Role::input;
    }();
    // A slice that is one block of a temporary, starting on kViewAlignment, is a view of it, as
    // the static planner makes it (PyTorch's chunk and unbind are views too).
    int64_t block = -1;
    if (op == OpKind::slice && alias_ok) {
      const Slot& x = slots_[static_cast<size_t>(tr.in[0])];
      const int64_t at = contiguous_slice_offset(x.shape, attrs.axis, attrs.start);
      const int64_t at_bytes = at * dtype_size(x.dtype);
      const auto base = reinterpret_cast<uintptr_t>(x.data);
      if (at >= 0 && (base + static_cast<uintptr_t>(at_bytes)) % kViewAlignment == 0) block = at_bytes;
    }
    view = op_is_view(op) || block >= 0;
    const bool alias = view || (op == OpKind::relu && (attrs.in_place || opt_.in_place_relu) && alias_ok);
    out.id = new_slot(out_shape, role_, out_dtype);
    out.shape = out_shape;
    out.dtype = out_dtype;
    tr.out = out.id;
    Slot& o = slots_.back();
    if (alias) {
      const Slot& base = slot(tr.in[0]);  // slots_ may have moved: look it up again
      o.data = block > 0 ? reinterpret_cast<float*>(reinterpret_cast<char*>(base.data) + block) : base.data;
      o.owner = base.owner;
      o.alive = true;
      if (o.owner < kPersistentBase) ++slots_[static_cast<size_t>(o.owner)].aliases;
    } else {
      needs_memory = true;
    }
  }
  if (training_ && taping_) tape_.push_back(TapeEntry{op, attrs, inputs, out});
  trace_.push_back(tr);
  if (track_roles_) op_untaped_.push_back(training_ && !taping_ ? 1 : 0);
  if (plan_ok_) check_trace(tr);

  if (timed) t1 = Clock::now();
  steps.next("allocate");
  if (needs_memory) alloc_slot(out.id);
  if (timed) t2 = Clock::now();
  steps.next("launch");
  if (out.valid() && !view) {
    const Slot& o = slots_[static_cast<size_t>(out.id)];
    call.out = kernels::TensorView{o.data, o.shape, o.dtype};
  }
  if (!view) {
    try {
      backend_.run(call);
    } catch (const InputError& e) {  // fed data the op cannot use (labels, counts): name the node
      rethrow_at_node(e, op, *nm);
    }
  }
  if (timed) t3 = Clock::now();
  steps.next("free");
  if (plan_ok_) {
    const size_t k = trace_.size() - 1;
    for (int j = plan_->offsets[k]; j < plan_->offsets[k + 1]; ++j) release(plan_->frees[static_cast<size_t>(j)]);
  }
  if (timed) {
    const Clock::time_point t4 = Clock::now();
    ++times_.timed_ops;
    build_ns_ += ns(t0, t1);
    alloc_ns_ += ns(t1, t2) + ns(t3, t4);
    launch_ns_ += ns(t2, t3);
  }
  return out;
}

// ---- iterations ----------------------------------------------------------------

void EagerBuilder::begin_iteration(const Feeds& feeds, bool training) {
  if (in_iteration_) end_iteration();
  feeds_ = &feeds;
  training_ = training && opt_.record_tape;
  run_updates_ = training;
  taping_ = training_;
  role_ = training_ ? Role::activation : Role::temporary;
  in_iteration_ = true;
  param_cursor_ = 0;
  times_ = {};
  build_ns_ = alloc_ns_ = launch_ns_ = 0;
  tape_.clear();
  trace_.clear();
  slots_.clear();
  role_events_.clear();
  op_untaped_.clear();
  feed_sizes_.clear();
  for (const auto& kv : feeds) feed_sizes_.push_back(kv.second.size());
  plan_ = &plans_[training_ ? 1 : 0];
  plan_ok_ = opt_.free_early && plan_->valid && plan_->feed_sizes == feed_sizes_;
}

void EagerBuilder::set_taping(bool on, Role role) {
  taping_ = on && training_;
  role_ = role;
}

void EagerBuilder::check_trace(const TraceOp& t) {
  const size_t k = trace_.size() - 1;
  if (k >= plan_->trace.size()) {
    plan_ok_ = false;
    return;
  }
  const TraceOp& p = plan_->trace[k];
  bool same = p.op == t.op && p.nin == t.nin && p.out == t.out;
  for (int i = 0; i < t.nin && same; ++i) same = p.in[i] == t.in[i];
  if (!same) plan_ok_ = false;  // from here on tensors live to end_iteration(), as in the first iteration
}

void EagerBuilder::end_iteration() {
  if (!in_iteration_) return;
  TG_TRACE_SCOPE("end iteration");
  for (size_t i = 0; i < slots_.size(); ++i) release(static_cast<int>(i));
  if (track_roles_) replay_role_peaks();
  learn_plan();
  tape_.clear();
  in_iteration_ = false;
  feeds_ = nullptr;
}

void EagerBuilder::abort_iteration() {
  if (!in_iteration_) return;
  for (size_t i = 0; i < slots_.size(); ++i) release(static_cast<int>(i));
  plan_->valid = false;
  tape_.clear();
  in_iteration_ = false;
  feeds_ = nullptr;
}

void EagerBuilder::learn_plan() {
  Plan& plan = *plan_;
  if (!opt_.free_early) return;
  // The last op that reads or writes each tensor of this iteration; pinned ones stay to the end.
  last_use_.assign(slots_.size(), -1);
  for (size_t k = 0; k < trace_.size(); ++k) {
    const TraceOp& t = trace_[k];
    for (int i = 0; i < t.nin; ++i)
      if (t.in[i] < kPersistentBase) last_use_[static_cast<size_t>(t.in[i])] = static_cast<int>(k);
    if (t.out >= 0) last_use_[static_cast<size_t>(t.out)] = std::max(last_use_[static_cast<size_t>(t.out)], static_cast<int>(k));
  }
  plan.offsets.assign(trace_.size() + 1, 0);
  for (size_t s = 0; s < slots_.size(); ++s)
    if (last_use_[s] >= 0 && !slots_[s].pinned) ++plan.offsets[static_cast<size_t>(last_use_[s]) + 1];
  for (size_t k = 0; k < trace_.size(); ++k) plan.offsets[k + 1] += plan.offsets[k];
  plan.frees.assign(static_cast<size_t>(plan.offsets.back()), -1);
  std::vector<int>& fill = last_use_;  // reused as the per-op write cursor after this pass
  std::vector<int> cursor(plan.offsets.begin(), plan.offsets.end() - 1);
  for (size_t s = 0; s < slots_.size(); ++s)
    if (fill[s] >= 0 && !slots_[s].pinned)
      plan.frees[static_cast<size_t>(cursor[static_cast<size_t>(fill[s])]++)] = static_cast<int>(s);
  plan.trace = trace_;
  plan.feed_sizes = feed_sizes_;
  plan.valid = true;
}

void EagerBuilder::set_role_tracking(bool on) {
  if (in_iteration_)
    throw std::logic_error("EagerBuilder::set_role_tracking: call it between iterations (after end_iteration())");
  track_roles_ = on;
}

// build_training_graph's labels for this iteration's tensors, then the
// allocations and frees replayed in order under them.
void EagerBuilder::replay_role_peaks() {
  const size_t n = slots_.size();
  std::vector<uint8_t> read_back(n, 0), update_grad(n, 0), made_back(n, 0);
  for (size_t k = 0; k < trace_.size(); ++k) {
    const TraceOp& t = trace_[k];
    if (t.out >= 0) made_back[static_cast<size_t>(t.out)] = op_untaped_[k];
    if (!op_untaped_[k]) continue;
    for (int i = 0; i < t.nin; ++i)
      if (t.in[i] >= 0 && t.in[i] < kPersistentBase) read_back[static_cast<size_t>(t.in[i])] = 1;
    if (op_is_update(t.op) && t.nin >= 2 && t.in[1] >= 0 && t.in[1] < kPersistentBase)
      update_grad[static_cast<size_t>(t.in[1])] = 1;
  }
  std::vector<Role> label(n);
  for (size_t s = 0; s < n; ++s) {
    Role r = slots_[s].role;
    if (r != Role::input) {
      if (made_back[s]) r = update_grad[s] ? Role::gradient : Role::temporary;
      else r = read_back[s] ? Role::activation : Role::temporary;
      if (slots_[s].pinned && r != Role::gradient) r = Role::output;  // as RecordingBuilder::mark_output
    }
    label[s] = r;
  }
  std::array<int64_t, 8> live{};
  for (const Slot& p : pslots_) live[static_cast<size_t>(p.role)] += static_cast<int64_t>(bytes_of(p.shape, p.dtype));
  for (size_t r = 0; r < live.size(); ++r) role_peak_[r] = std::max(role_peak_[r], live[r]);
  for (int e : role_events_) {
    const size_t s = static_cast<size_t>(e >= 0 ? e : ~e);
    const size_t r = static_cast<size_t>(label[s]);
    const auto bytes = static_cast<int64_t>(bytes_of(slots_[s].shape, slots_[s].dtype));
    live[r] += e >= 0 ? bytes : -bytes;
    role_peak_[r] = std::max(role_peak_[r], live[r]);
  }
}

// ---- data and reports -----------------------------------------------------------

std::vector<float> EagerBuilder::read(const Value& v) {
  std::vector<float> out;
  read_into(v, out);
  return out;
}

void EagerBuilder::read_into(const Value& v, std::vector<float>& out) {
  const Slot& s = live_slot(v.id, OpKind::copy, 0);
  TG_TRACE_SCOPE("read back");
  copy_to_host_into(backend_, s.data, s.shape.numel(), s.dtype, out, read_staging_);
}

void EagerBuilder::write(const Value& v, const std::vector<float>& host) {
  Slot& s = live_slot(v.id, OpKind::copy, 0);
  if (host.size() != static_cast<size_t>(s.shape.numel()))
    throw std::invalid_argument(fmt::format("write: value {} has shape {} ({} floats) but {} floats were given",
                                            v.id, s.shape.str(), s.shape.numel(), host.size()));
  TG_TRACE_SCOPE("feed");
  copy_to_device_as(backend_, s.data, host, s.dtype);
}

PhaseTimes EagerBuilder::phase_times() const {
  PhaseTimes t = times_;
  if (t.timed_ops > 0) {
    const double scale = static_cast<double>(t.ops) / static_cast<double>(t.timed_ops) * 1e-9;
    t.build_s = static_cast<double>(build_ns_) * scale;
    t.alloc_s = static_cast<double>(alloc_ns_) * scale;
    t.launch_s = static_cast<double>(launch_ns_) * scale;
  }
  return t;
}

std::string EagerBuilder::role_breakdown() const {
  std::string out;
  for (Role r : {Role::parameter, Role::optimizer_state, Role::input, Role::activation, Role::gradient,
                 Role::temporary, Role::output}) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", role_name(r), format_bytes(role_bytes_[static_cast<size_t>(r)]));
  }
  return out;
}

}  // namespace tg
