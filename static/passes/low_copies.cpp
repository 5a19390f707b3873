// The low_copies pass: under bf16 or fp16 autocast (graph/precision.h) every GEMM reads its
// weight through a `cast` of the f32 master parameter, one kernel per weight per step that
// reads 4 bytes and writes 2 of every element. The update that writes the master already
// reads and writes every element of it, so it can store the rounded copy in the same pass:
// each parameter that is cast to one 16-bit dtype and written by exactly one sgd,
// sgd_momentum or adamw update (or a multi form of it) gets a persistent copy, an
// optimizer-state value that its update, now the *_multi_cast form (graph/op.h kWeightCopy),
// writes last in the parameter's group. The cast goes; its readers read the copy.
//
// The copy holds cast(param) at every point a reader sees it: the update rounds the new
// value to nearest even as `cast` does, so at the next step the copy is bitwise what the
// cast would make; a guarded update that skips its step (loss scaling's found-inf flag)
// writes neither, so the copy still matches the unchanged master. Updates run after every
// reader of what they write (Graph::topo_order), so this step's readers see the copy
// before the update rewrites it. Before the first step, and after any write to the
// parameters from outside a step, the parameter store fills the copies from their
// parameters (static/parameter_store.h); the executors' comparison stays bitwise.
//
// A multi update whose groups do not all have a copy splits in two: the groups with one in
// the *_multi_cast node, the others left in the plain multi node, both taking the guard.
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/name_index.h"
#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

// The update ops whose groups can carry a copy, and the form that writes it.
OpKind copy_form(OpKind op) {
  switch (op) {
    case OpKind::sgd:
    case OpKind::sgd_multi: return OpKind::sgd_multi_cast;
    case OpKind::sgd_momentum:
    case OpKind::sgd_momentum_multi: return OpKind::sgd_momentum_multi_cast;
    case OpKind::adamw:
    case OpKind::adamw_multi: return OpKind::adamw_multi_cast;
    default: return op;
  }
}
bool has_copy_form(OpKind op) { return copy_form(op) != op; }

// The multi form an update without copies takes when its node splits (a single update's
// one group is never split).
OpKind plain_multi_form(OpKind op) {
  switch (op) {
    case OpKind::sgd: return OpKind::sgd_multi;
    case OpKind::sgd_momentum: return OpKind::sgd_momentum_multi;
    case OpKind::adamw: return OpKind::adamw_multi;
    default: return op;
  }
}

bool is_low_float(DType d) { return d == DType::BF16 || d == DType::F16; }

}  // namespace

std::vector<std::pair<int, int>> weight_copies_of(const Node& update) {
  std::vector<std::pair<int, int>> out;
  if (!op_update_writes_copy(update.op)) return out;
  const int k = op_num_inputs(update.op);
  const int end = op_group_inputs(update.op, static_cast<int>(update.inputs.size()));
  for (int i = 0; i + k <= end; i += k)
    out.emplace_back(update.inputs[static_cast<size_t>(i)], update.inputs[static_cast<size_t>(i + k - 1)]);
  return out;
}

bool is_weight_copy(const Graph& g, int v) {
  if (g.values[static_cast<size_t>(v)].role != Role::optimizer_state) return false;
  for (const Node& n : g.nodes)
    for (const auto& pc : weight_copies_of(n))
      if (pc.second == v) return true;
  return false;
}

Graph pass_low_copies(const Graph& g) {
  const int nv = static_cast<int>(g.values.size());
  // Per parameter: how many update inputs write it, and the update group (node, first input)
  // that does when it is one of copy_form's.
  std::vector<int> writes(static_cast<size_t>(nv), 0);
  std::vector<std::pair<int, int>> group_of(static_cast<size_t>(nv), {-1, -1});
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& u = g.nodes[n];
    if (!op_is_update(u.op)) continue;
    const int ni = static_cast<int>(u.inputs.size());
    for (int i = 0; i < ni; ++i)
      if (op_update_writes(u.op, i, ni)) ++writes[static_cast<size_t>(u.inputs[static_cast<size_t>(i)])];
    if (!has_copy_form(u.op)) continue;
    for (int i = 0; i < op_group_inputs(u.op, ni); i += op_num_inputs(u.op))
      group_of[static_cast<size_t>(u.inputs[static_cast<size_t>(i)])] = {static_cast<int>(n), i};
  }
  std::vector<bool> is_output(static_cast<size_t>(nv), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;

  // Per parameter that can have a copy: its casts, all to one 16-bit dtype (a parameter cast
  // to both, or whose cast is a graph output, keeps its casts).
  std::map<int, std::vector<int>> casts_of;  // ordered: copies are made in parameter order
  std::unordered_set<int> refused;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& c = g.nodes[n];
    if (c.op != OpKind::cast) continue;
    const int p = c.inputs[0];
    const ValueInfo& pv = g.values[static_cast<size_t>(p)];
    if (pv.role != Role::parameter || pv.dtype != DType::F32) continue;
    if (!is_low_float(c.attrs.to) || is_output[static_cast<size_t>(c.outputs[0])] ||
        writes[static_cast<size_t>(p)] != 1 || group_of[static_cast<size_t>(p)].first < 0) {
      refused.insert(p);
      continue;
    }
    std::vector<int>& list = casts_of[p];
    if (!list.empty() && g.nodes[static_cast<size_t>(list[0])].attrs.to != c.attrs.to) refused.insert(p);
    list.push_back(static_cast<int>(n));
  }
  for (int p : refused) casts_of.erase(p);
  if (casts_of.empty()) return g;

  // One copy per parameter, named after it; per update node, the copy of each group that has one.
  GraphRewrite rw(g);
  FreshNames fresh(g);
  std::vector<int> replacement(static_cast<size_t>(nv), -1);  // cast output -> the copy
  std::map<int, std::map<int, int>> copies_of_update;          // node -> first input -> copy
  for (const auto& [p, casts] : casts_of) {
    const ValueInfo& pv = g.values[static_cast<size_t>(p)];
    const DType low = g.nodes[static_cast<size_t>(casts[0])].attrs.to;
    ValueInfo copy;
    copy.name = fresh.next(pv.name + "." + dtype_name(low));
    copy.shape = pv.shape;
    copy.dtype = low;
    copy.role = Role::optimizer_state;
    copy.init = pv.init;  // what it starts as: the store fills it from the parameter
    const int id = rw.add_value(std::move(copy));
    for (int c : casts) {
      replacement[static_cast<size_t>(g.nodes[static_cast<size_t>(c)].outputs[0])] = id;
      rw.remove(c);
    }
    const auto [node, first] = group_of[static_cast<size_t>(p)];
    copies_of_update[node][first] = id;
  }

  // The casts' readers read the copies (in their places).
  std::unordered_set<int> readers;
  for (size_t v = 0; v < replacement.size(); ++v)
    if (replacement[v] >= 0)
      for (int r : rw.consumers()[v]) readers.insert(r);
  for (int r : readers) {
    if (copies_of_update.count(r)) continue;  // an update reading a copy is rewritten below
    Node n = g.nodes[static_cast<size_t>(r)];
    for (int& v : n.inputs)
      if (replacement[static_cast<size_t>(v)] >= 0) v = replacement[static_cast<size_t>(v)];
    rw.remove(r);
    rw.add_node(std::move(n), r);
  }

  // The updates: the groups with a copy into the *_multi_cast form, the rest as they were.
  for (const auto& [node, copies] : copies_of_update) {
    const Node& u = g.nodes[static_cast<size_t>(node)];
    const int ni = static_cast<int>(u.inputs.size());
    const int k = op_num_inputs(u.op);
    const int end = op_group_inputs(u.op, ni);
    Node with, without;
    with.op = copy_form(u.op);
    with.attrs = u.attrs;
    with.name = fresh.next(op_name(with.op));
    without.op = plain_multi_form(u.op);
    without.attrs = u.attrs;
    without.name = u.name;
    for (int i = 0; i < end; i += k) {
      const auto it = copies.find(i);
      Node& dst = it != copies.end() ? with : without;
      for (int j = 0; j < k; ++j) {
        int v = u.inputs[static_cast<size_t>(i + j)];
        if (replacement[static_cast<size_t>(v)] >= 0) v = replacement[static_cast<size_t>(v)];
        dst.inputs.push_back(v);
      }
      if (it != copies.end()) dst.inputs.push_back(it->second);
    }
    if (end < ni) {  // the found-inf flag: both halves skip together
      with.inputs.push_back(u.inputs.back());
      if (!without.inputs.empty()) without.inputs.push_back(u.inputs.back());
    }
    rw.remove(node);
    if (!without.inputs.empty()) rw.add_node(std::move(without), node);
    rw.add_node(std::move(with), node);
  }
  return rw.finish();
}

}  // namespace tg
