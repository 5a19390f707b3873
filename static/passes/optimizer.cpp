// The optimizer pass: the update nodes of a training step (one sgd_momentum, sgd or adamw
// per parameter) become one sgd_momentum_multi (sgd_multi, adamw_multi) node per set of
// hyperparameters, so one kernel launch updates every tensor, as PyTorch's foreach/fused
// SGD and AdamW do: a model of P parameters pays one launch instead of P. The kernels
// compute each group exactly as the single update does, so the parameters get the same bits.
// Under autocast a weight's gradient is a bf16/f16 GEMM's output cast to f32 for its update:
// the multi update reads the 16-bit gradient itself (graph/op.h op_input_is_multi_grad) and
// the cast goes, one kernel and one f32 copy of the gradient less per weight, the same bits.
//
// A multi update writes its groups in parallel, so a value that two update nodes write
// (or that one writes and another reads as its gradient) keeps its updates unfused, in
// their order. The fused node takes the place of the last update it replaces; updates
// run after every reader of what they write (Graph::topo_order), so moving them later
// changes no value anything reads.
//
// Before that, a large weight's sgd_momentum whose gradient is a weight-gradient GEMM
// (matmul(a, dz) with trans_a, or matmul_bias_grad's first result) read by nothing else
// becomes one matmul_sgd_momentum: the gradient is computed inside the update's kernel
// and never stored, so the update's reads of the gradient and its separate pass over the
// parameter and velocity are gone (kernels/cuda/gemm/gemm_update.cu). matmul_bias_grad's bias
// gradient goes back to a reduce_sum of dz's rows. Only shapes of that kernel's tiles, with
// enough tiles to fill the GPU (PassOptions::gemm_update_min_tiles), are fused;
// PassOptions::gemm_updates turns it off.
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/name_index.h"
#include "kernels/gemm/gemm_update_shape.h"
#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

// The inputs an update writes: its parameter and, for sgd_momentum, its velocity.
bool written_input(const Node& n, size_t i) {
  return op_update_writes(n.op, static_cast<int>(i), static_cast<int>(n.inputs.size()));
}

// A guarded update's found-inf flag (loss scaling, graph/loss_scale.h), else -1.
int guard_of(const Node& n) {
  return op_update_guarded(n.op, static_cast<int>(n.inputs.size())) ? n.inputs.back() : -1;
}

// What puts two updates in one multi update: the op, the bits of its learning rate,
// momentum (sgd_momentum only) and AdamW hyperparameters (adamw only), the node that made
// the gradient (-1: any) and the found-inf flag (-1: none), which the multi update takes
// once, last.
struct GroupKey {
  OpKind op;
  uint32_t lr, momentum;
  std::array<uint32_t, 4> adam;
  int source, guard;
  bool operator<(const GroupKey& o) const {
    return std::tie(op, lr, momentum, adam, source, guard) < std::tie(o.op, o.lr, o.momentum, o.adam, o.source, o.guard);
  }
};

// The updates that have a multi-tensor form, and that form.
OpKind multi_form(OpKind op) {
  switch (op) {
    case OpKind::sgd: return OpKind::sgd_multi;
    case OpKind::sgd_momentum: return OpKind::sgd_momentum_multi;
    case OpKind::adamw: return OpKind::adamw_multi;
    default: return op;
  }
}
bool has_multi_form(OpKind op) { return multi_form(op) != op; }

uint32_t bits_of(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

GroupKey group_key(const Node& n, int source) {
  const bool adam = n.op == OpKind::adamw;
  const AdamAttr& a = n.attrs.adam;
  return {n.op,
          bits_of(n.attrs.lr),
          n.op == OpKind::sgd_momentum ? bits_of(n.attrs.momentum) : 0u,
          adam ? std::array<uint32_t, 4>{bits_of(a.beta1), bits_of(a.beta2), bits_of(a.eps), bits_of(a.weight_decay)}
               : std::array<uint32_t, 4>{},
          source,
          guard_of(n)};
}

// The weight-gradient GEMMs fused into their updates (see the top of the file); nothing
// when there is none to fuse.
std::optional<Graph> fuse_gemm_updates(const Graph& g, int64_t min_tiles) {
  GraphRewrite rw(g);
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& u = g.nodes[i];
    // A guarded update's gradient is checked before any update runs, so it is stored: there
    // is no GEMM to fold into it (and matmul_sgd_momentum takes no flag).
    if (u.op != OpKind::sgd_momentum || guard_of(u) >= 0) continue;
    const int grad = u.inputs[1];
    const int m = rw.producer(grad);
    if (m < 0 || rw.removed(m) || !rw.only_read_by(grad, static_cast<int>(i))) continue;
    const Node& mm = g.nodes[static_cast<size_t>(m)];
    const bool bias_grad = mm.op == OpKind::matmul_bias_grad && mm.outputs[0] == grad;
    const bool plain = mm.op == OpKind::matmul && mm.attrs.trans_a && !mm.attrs.trans_b;
    if (!bias_grad && !plain) continue;
    const Shape& a = g.values[static_cast<size_t>(mm.inputs[0])].shape;
    const Shape& dz = g.values[static_cast<size_t>(mm.inputs[1])].shape;
    if (a.rank != 2 || dz.rank != 2 || !kernels::gemm_update_fast_shape(a[0], a[1], dz[1]) ||
        (a[1] / kernels::kGemmUpdateTile) * (dz[1] / kernels::kGemmUpdateTile) < min_tiles)
      continue;
    Node f;
    f.op = OpKind::matmul_sgd_momentum;
    f.name = u.name;
    f.attrs.lr = u.attrs.lr;
    f.attrs.momentum = u.attrs.momentum;
    f.inputs = {u.inputs[0], mm.inputs[0], u.inputs[2], mm.inputs[1]};
    rw.remove(static_cast<int>(i));
    rw.remove(m);
    if (bias_grad) {
      Node r;
      r.op = OpKind::reduce_sum;
      r.name = mm.name;
      r.attrs.axis = 0;
      r.inputs = {mm.inputs[1]};
      r.outputs = {mm.outputs[1]};
      rw.add_node(std::move(r), m);
    }
    rw.add_node(std::move(f), static_cast<int>(i));
    any = true;
  }
  if (!any) return std::nullopt;
  return rw.finish();
}

}  // namespace

Graph pass_optimizer(const Graph& g, const PassOptions& opt, int64_t split_bytes) {
  return pass_optimizer(g, split_bytes, opt.gemm_update_threshold());
}

Graph pass_optimizer(const Graph& given, int64_t split_bytes, int64_t gemm_min_tiles) {
  const std::optional<Graph> fused = gemm_min_tiles > 0 ? fuse_gemm_updates(given, gemm_min_tiles) : std::nullopt;
  const Graph& g = fused ? *fused : given;
  // How many updates write each value, and the values some update reads as a gradient.
  std::unordered_map<int, int> writes;
  std::unordered_set<int> grads;
  for (const Node& n : g.nodes) {
    if (!has_multi_form(n.op)) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (written_input(n, i)) ++writes[n.inputs[i]];
      else grads.insert(n.inputs[i]);
    }
  }
  auto fusable = [&](const Node& n) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (written_input(n, i) ? writes[v] != 1 || grads.count(v) : writes.count(v) > 0) return false;
    }
    return true;
  };
  struct Group {
    OpKind op;
    Attrs attrs;  // the first update's: the hyperparameters its key holds
    int source;   // the node that made the gradients (large updates with split_bytes), else -1
    int guard;    // the found-inf flag, else -1
    std::vector<int> nodes;
  };
  GraphRewrite rw(g);
  // An autocast gradient (a 16-bit weight gradient cast to f32 for update n alone): the cast,
  // which the multi update makes unnecessary; else -1.
  auto low_cast = [&](const Node& u, int n) {
    const int cast = rw.fusable_producer(u.inputs[1], OpKind::cast, n);
    if (cast < 0 || g.values[static_cast<size_t>(u.inputs[1])].dtype != DType::F32) return -1;
    const DType from = g.values[static_cast<size_t>(g.nodes[static_cast<size_t>(cast)].inputs[0])].dtype;
    return from == DType::BF16 || from == DType::F16 ? cast : -1;
  };
  // The node that made a large update's gradient, looking through its autocast.
  auto source_of = [&](const Node& n, int id) {
    const ValueInfo& param = g.values[static_cast<size_t>(n.inputs[0])];
    if (split_bytes <= 0 || param.bytes() < split_bytes) return -1;
    const int cast = low_cast(n, id);
    const int grad = cast >= 0 ? g.nodes[static_cast<size_t>(cast)].inputs[0] : n.inputs[1];
    return g.values[static_cast<size_t>(grad)].producer;
  };
  std::vector<Group> groups;
  std::map<GroupKey, size_t> group_of;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!has_multi_form(n.op) || !fusable(n)) continue;
    const auto [at, fresh] = group_of.emplace(group_key(n, source_of(n, static_cast<int>(i))), groups.size());
    if (fresh) groups.push_back({n.op, n.attrs, at->first.source, at->first.guard, {}});
    groups[at->second].nodes.push_back(static_cast<int>(i));
  }

  FreshNames names(g);
  for (const Group& gr : groups) {
    // One update stays as it is, unless it is a large weight's (split_bytes) with an autocast
    // gradient: a multi update of one group then reads the 16-bit gradient, without the cast.
    if (gr.nodes.size() < 2 && (gr.source < 0 || low_cast(g.nodes[static_cast<size_t>(gr.nodes[0])], gr.nodes[0]) < 0))
      continue;
    Node f;
    f.op = multi_form(gr.op);
    f.name = names.next(op_name(f.op));
    f.attrs.lr = gr.attrs.lr;
    if (gr.op == OpKind::sgd_momentum) f.attrs.momentum = gr.attrs.momentum;
    if (gr.op == OpKind::adamw) f.attrs.adam = gr.attrs.adam;
    for (int n : gr.nodes) {
      const Node& u = g.nodes[static_cast<size_t>(n)];
      const size_t at = f.inputs.size();
      f.inputs.insert(f.inputs.end(), u.inputs.begin(), u.inputs.begin() + op_group_inputs(u.op, static_cast<int>(u.inputs.size())));
      // The multi update reads an autocast gradient's 16-bit value and widens it, to the same bits.
      const int cast = low_cast(u, n);
      if (cast >= 0) {
        f.inputs[at + 1] = g.nodes[static_cast<size_t>(cast)].inputs[0];
        rw.remove(cast);
      }
      rw.remove(n);
    }
    if (gr.guard >= 0) f.inputs.push_back(gr.guard);
    rw.add_node(std::move(f), gr.nodes.back());
  }
  return rw.finish();
}

}  // namespace tg
