#include "graph/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/fixed_data.h"
#include "graph/shape_inference.h"

namespace tg {

namespace {

bool valid_op(OpKind op) { return static_cast<int>(op) < kNumOps; }
bool valid_role(Role r) { return static_cast<int>(r) <= static_cast<int>(Role::output); }
bool is_leaf_role(Role r) { return r == Role::input || r == Role::parameter || r == Role::optimizer_state; }

class Checker {
 public:
  explicit Checker(const Graph& g) : g_(g) {}

  std::vector<std::string> run() {
    check_values();
    check_nodes();
    check_outputs();
    // topo_order indexes through ids; only ask it once every id is in range.
    if (ids_ok_) {
      try {
        g_.topo_order();
      } catch (const GraphError& e) {
        errs_.push_back(e.what());
      }
    }
    // The data the graph fixes itself (fill values, parameter inits) that an op reads
    // with a domain (labels, counts): checked once the structure is sound.
    if (errs_.empty()) fixed_data_errors(g_, errs_);
    return std::move(errs_);
  }

 private:
  template <typename... Args>
  void err(fmt::format_string<Args...> f, Args&&... args) {
    errs_.push_back(fmt::format(f, std::forward<Args>(args)...));
  }
  int num_values() const { return static_cast<int>(g_.values.size()); }
  int num_nodes() const { return static_cast<int>(g_.nodes.size()); }
  const ValueInfo& val(int id) const { return g_.values[static_cast<size_t>(id)]; }

  // False (with an error) when the shape cannot be used: callers then skip
  // every check that would multiply its dims.
  bool check_shape(const ValueInfo& v) {
    const Shape& s = v.shape;
    if (s.rank < 1 || s.rank > kMaxRank) {
      err("value {}: rank {} is not supported; give 1 to {} dims (a scalar is [1])", quote_name(v.name), s.rank, kMaxRank);
      return false;
    }
    for (int d = 0; d < s.rank; ++d)
      if (s[d] <= 0) {
        err("value {}: shape {} has dim {} = {}; every dim must be >= 1", quote_name(v.name), s.str(), d, s[d]);
        return false;
      }
    int64_t n = 0;
    if (!numel_checked(s, n)) {
      err("value {}: shape {} has an element count or byte size that overflows int64; use smaller dims",
          quote_name(v.name), s.str());
      return false;
    }
    const int64_t bytes = n * dtype_size(v.dtype);
    if (bytes > kMaxValueBytes) {
      err("value {}: shape {} needs {:.0f} GiB ({} bytes); a value may hold at most {} GiB, more than any device "
          "has; use smaller dims", quote_name(v.name), s.str(), static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30), bytes,
          kMaxValueBytes >> 30);
      return false;
    }
    return true;
  }

  void check_values() {
    shape_ok_.assign(g_.values.size(), false);
    value_ids_.reserve(g_.values.size());
    for (int id = 0; id < num_values(); ++id) {
      const ValueInfo& v = val(id);
      const auto [first, fresh] = value_ids_.emplace(v.name, id);
      if (v.name.empty()) err("value #{}: has no name; give every value a unique name", id);
      else if (!fresh)
        err("value {} (#{}): has the same name as value #{}; value names must be unique, rename one", quote_name(v.name), id,
            first->second);
      if (!valid_role(v.role)) err("value {}: role {} is not a role", quote_name(v.name), static_cast<int>(v.role));
      if (!dtype_is_known(v.dtype))
        err("value {}: dtype #{} is not a dtype; use f32, bf16, f16, i32 or i64", quote_name(v.name),
            static_cast<int>(v.dtype));
      else if (dtype_is_int(v.dtype) && v.role == Role::parameter && v.producer < 0)
        err("value {}: a {} of dtype {}; integers are data (ids, labels) fed as inputs, or training state (dropout's "
            "rng state): make it an input, or give it a float dtype", quote_name(v.name), role_name(v.role),
            dtype_name(v.dtype));
      shape_ok_[static_cast<size_t>(id)] = check_shape(v);
      if (shape_ok_[static_cast<size_t>(id)] && v.init.kind == ParamInit::Kind::running_stats &&
          (v.shape.rank != 2 || v.shape[0] != 2))
        err("value {}: init running_stats fills a [2, C] (the running mean, then the running variance), but the "
            "value is {}; give it shape [2, C] or another init", quote_name(v.name), v.shape.str());
      check_producer(id, v);
    }
  }

  void check_producer(int id, const ValueInfo& v) {
    const bool role_ok = valid_role(v.role);
    if (v.producer < 0) {
      if (role_ok && !is_leaf_role(v.role))
        err("value {} ({}): has no producer (a dangling value); only inputs, parameters and optimizer_state "
            "values may be leaves: add the node that computes it, or declare it as an input",
            quote_name(v.name), role_name(v.role));
      return;
    }
    if (v.producer >= num_nodes()) {
      err("value {}: producer is node id {}, but the graph has {} nodes", quote_name(v.name), v.producer, num_nodes());
      ids_ok_ = false;
      return;
    }
    const Node& p = g_.nodes[static_cast<size_t>(v.producer)];
    bool listed = false;
    for (int o : p.outputs) listed = listed || o == id;
    if (!listed)
      err("value {}: says node {} produces it, but that node's outputs do not list it; set the producer "
          "with Graph::add_node", quote_name(v.name), quote_name(p.name));
    if (role_ok && is_leaf_role(v.role))
      err("value {} is {} but node {} produces it; a computed value cannot be {} (use role temporary, "
          "activation, gradient or output)", quote_name(v.name), role_name(v.role), quote_name(p.name), role_name(v.role));
  }

  void check_nodes() {
    std::unordered_map<std::string, int> seen;
    seen.reserve(g_.nodes.size());
    std::vector<int> produced_by(g_.values.size(), -1);
    for (int id = 0; id < num_nodes(); ++id) {
      const Node& n = g_.nodes[static_cast<size_t>(id)];
      if (!valid_op(n.op)) {
        err("node {} (#{}): op kind {} is not an op; see graph/op.h for the list", quote_name(n.name), id,
            static_cast<int>(n.op));
        ids_ok_ = false;
        continue;
      }
      const char* op = op_name(n.op);
      if (n.name.empty()) err("{} node #{}: has no name; give every node a unique name", op, id);
      else if (!seen.emplace(n.name, id).second)
        err("{} {}: node #{} has the same name as node #{}; node names must be unique, rename one", op, quote_name(n.name),
            id, seen[n.name]);
      auto same = value_ids_.find(n.name);
      const int same_name = same == value_ids_.end() ? -1 : same->second;
      if (!n.name.empty() && same_name >= 0 && val(same_name).producer != id)
        err("{} {}: node name is also the name of value #{} which it does not produce; a node shares its name "
            "only with its own output, rename one", op, quote_name(n.name), same_name);
      // Both checks run (each reports its own errors); shapes only when both passed.
      const bool arity_ok = check_arity(n);
      const bool ids_ok = check_ids(id, n, produced_by);
      if (arity_ok && ids_ok) check_shapes(n);
    }
  }

  bool check_arity(const Node& n) {
    const char* op = op_name(n.op);
    bool ok = true;
    const int nout = op_num_outputs(n.op);
    if (!op_arity_ok(n.op, static_cast<int>(n.inputs.size()))) {
      err("{} {}: takes {}, got {}; check the node's inputs list", op, quote_name(n.name), op_arity_text(n.op),
          n.inputs.size());
      ok = false;
    }
    if (static_cast<int>(n.outputs.size()) != nout) {
      err("{} {}: has {} outputs, but the op produces {}", op, quote_name(n.name), n.outputs.size(), nout);
      ok = false;
    }
    return ok;
  }

  bool check_ids(int id, const Node& n, std::vector<int>& produced_by) {
    const char* op = op_name(n.op);
    bool ok = true;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] < 0 || n.inputs[i] >= num_values()) {
        err("{} {}: input {} refers to value id {}, but the graph has {} values (a dangling reference); "
            "connect it to an existing value", op, quote_name(n.name), i, n.inputs[i], num_values());
        ok = ids_ok_ = false;
      }
    for (int o : n.outputs) {
      if (o < 0 || o >= num_values()) {
        err("{} {}: output refers to value id {}, but the graph has {} values", op, quote_name(n.name), o, num_values());
        ok = ids_ok_ = false;
        continue;
      }
      int& first = produced_by[static_cast<size_t>(o)];
      if (first >= 0)
        err("value {}: is produced by both node {} and node {}; every value has exactly one producer, "
            "give each node its own output", quote_name(val(o).name), quote_name(g_.nodes[static_cast<size_t>(first)].name),
            quote_name(n.name));
      else
        first = id;
      if (val(o).producer != id)
        err("{} {}: lists {} as its output, but that value's producer is {}; set it with Graph::add_node", op,
            quote_name(n.name), quote_name(val(o).name), val(o).producer);
    }
    return ok;
  }

  // Runs a rule that throws GraphError: false, with its message kept, when it throws.
  template <typename Rule>
  bool reported(const Rule& rule) {
    try {
      rule();
      return true;
    } catch (const GraphError& e) {
      errs_.push_back(e.what());
      return false;
    }
  }

  void check_shapes(const Node& n) {
    std::vector<Shape> shapes;
    for (int in : n.inputs) {
      if (!shape_ok_[static_cast<size_t>(in)]) return;  // already reported on the value
      shapes.push_back(val(in).shape);
    }
    std::vector<Shape> expect;
    if (!reported([&] { expect = infer_shapes(n.op, shapes, n.attrs, quote_name(n.name)); })) return;
    for (size_t k = 0; k < n.outputs.size() && k < expect.size(); ++k) {
      const int o = n.outputs[k];
      if (!shape_ok_[static_cast<size_t>(o)] || val(o).shape == expect[k]) continue;
      std::string ins;
      for (const Shape& s : shapes) ins += (ins.empty() ? "" : ", ") + s.str();
      err("{} {}: output {} is recorded as {}, but inputs {} with these attributes give {}; fix the recorded "
          "shape or the inputs", op_name(n.op), quote_name(n.name), quote_name(val(o).name), val(o).shape.str(), ins,
          expect[k].str());
    }
    check_dtypes(n);
    check_update_roles(n);
  }

  void check_dtypes(const Node& n) {
    std::vector<DType> dtypes;
    for (int in : n.inputs) dtypes.push_back(val(in).dtype);
    std::vector<DType> expect;
    if (!reported([&] { expect = infer_dtypes(n.op, dtypes, n.attrs, quote_name(n.name)); })) return;
    for (size_t k = 0; k < n.outputs.size() && k < expect.size(); ++k) {
      const ValueInfo& o = val(n.outputs[k]);
      if (o.dtype != expect[k])
        err("{} {}: output {} is recorded as {}, but its inputs give {}; fix the recorded dtype or the inputs",
            op_name(n.op), quote_name(n.name), quote_name(o.name), dtype_name(o.dtype), dtype_name(expect[k]));
    }
  }

  // Per group of an update (one for sgd, sgd_momentum, adamw and matmul_sgd_momentum, many
  // for the multi ops): the parameter, and the state it writes (op_update_writes): the
  // velocity, or adamw's moments and step count.
  // A multi op writes its groups in parallel, so nothing it writes may appear twice in it.
  // update_scale writes the loss scaler's state, which is optimizer state.
  void check_update_roles(const Node& n) {
    if (!op_is_update(n.op)) return;
    const int num_inputs = static_cast<int>(n.inputs.size());
    const size_t k = static_cast<size_t>(op_num_inputs(n.op));
    const size_t groups = static_cast<size_t>(op_group_inputs(n.op, num_inputs));
    const bool velocity = op_update_has_velocity(n.op);
    if (n.op == OpKind::update_scale || n.op == OpKind::rng_advance) {
      const ValueInfo& s = val(n.inputs[0]);
      if (s.role != Role::optimizer_state)
        err("{} {}: {} {} is {}, not optimizer_state; declare it under \"optimizer_state\"", op_name(n.op),
            quote_name(n.name), n.op == OpKind::update_scale ? "scaler" : "rng state", quote_name(s.name),
            valid_role(s.role) ? role_name(s.role) : "?");
      return;
    }
    for (size_t i = 0; i < groups; i += k) {
      const ValueInfo& p = val(n.inputs[i]);
      if (p.role != Role::parameter)
        err("{} {}: updates {}, which is {}, not a parameter; an optimizer update writes a parameter in place: "
            "pass the parameter as input {}", op_name(n.op), quote_name(n.name), quote_name(p.name), valid_role(p.role) ? role_name(p.role) : "?",
            i);
      for (size_t j = 2; j < k; ++j) {
        if (!op_update_writes(n.op, static_cast<int>(i + j), num_inputs)) continue;
        const ValueInfo& v = val(n.inputs[i + j]);
        if (v.role != Role::optimizer_state)
          err("{} {}: {} {} is {}, not optimizer_state; declare it under \"optimizer_state\" "
              "(zeros at the start) and pass it as input {}", op_name(n.op), quote_name(n.name),
              velocity ? "velocity" : "state", quote_name(v.name), valid_role(v.role) ? role_name(v.role) : "?", i + j);
      }
    }
    if (groups <= k) return;
    std::unordered_map<int, size_t> written;  // value -> the input that writes it
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!op_update_writes(n.op, static_cast<int>(i), num_inputs)) continue;  // gradients are read only
      auto [it, fresh] = written.emplace(n.inputs[i], i);
      if (!fresh)
        err("{} {}: {} is written by inputs {} and {}; each parameter and velocity may appear in one group only",
            op_name(n.op), quote_name(n.name), quote_name(val(n.inputs[i]).name), it->second, i);
    }
    for (size_t i = 1; i < groups; i += k) {
      auto it = written.find(n.inputs[i]);
      if (it != written.end())
        err("{} {}: gradient {} (input {}) is also written by input {}; the groups run in parallel, so a gradient "
            "cannot be a parameter or velocity of the same update", op_name(n.op), quote_name(n.name), quote_name(val(n.inputs[i]).name), i,
            it->second);
    }
  }

  void check_outputs() {
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const int o = g_.outputs[i];
      if (o < 0 || o >= num_values())
        err("graph output {}: value id {} is not a value (the graph has {}); list existing values as outputs", i, o,
            num_values());
    }
  }

  const Graph& g_;
  std::vector<std::string> errs_;
  std::vector<bool> shape_ok_;
  std::unordered_map<std::string, int> value_ids_;  // first value of each name
  bool ids_ok_ = true;
};

}  // namespace

std::vector<std::string> validation_errors(const Graph& g) { return Checker(g).run(); }

void validate(const Graph& g) {
  const std::vector<std::string> errs = validation_errors(g);
  if (errs.empty()) return;
  const size_t shown = std::min(errs.size(), kMaxListedErrors);
  std::string msg = fmt::format("invalid graph ({} error{}{}):", errs.size(), errs.size() == 1 ? "" : "s",
                                shown < errs.size() ? fmt::format("; the first {}", shown) : "");
  for (size_t i = 0; i < shown; ++i) msg += "\n  " + errs[i];
  if (shown < errs.size())
    msg += fmt::format("\n  ... and {} more, left out; fix these and check again", errs.size() - shown);
  throw GraphError(msg);
}

}  // namespace tg
