// The attention pass: attention(q, k, v) and attention_lse(q, k) of the same q, k, key
// lengths and attributes -> one attention_fwd_lse(q, k, v) with both results.
//
// The gradient rule of attention (graph/autodiff.cpp) recomputes the row statistic in the
// backward with attention_lse, because the dynamic executor applies ops of one output; a
// training step thus runs each layer's attention forward twice. The fused op runs it once
// and keeps the statistic for attention_grad, as a flash-attention training forward does.
// Its kernels give both ops' results (kernels/cpu/attention.cpp runs the two references;
// the CUDA backend's cuDNN path runs one forward with statistics, kernels/cuda/attention_cudnn.h
// says which bits that keeps).
//
// attention_lse's output becomes the fused node's second output, under its own name (an
// activation now: the forward makes it, the backward reads it); both values stay, so
// nothing another node reads is fused away. The fused node takes the
// attention's place, where its inputs are ready; a pair is fused only when the attention
// comes before the attention_lse in a topological order, so that nothing the attention
// reads can depend on the statistic (the order autodiff records them in).
#include <vector>

#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

// Whether attention_lse node l computes the statistic of attention node a: the same q, k,
// key lengths (or none) and attributes.
bool same_scores(const Node& a, const Node& l) {
  const bool a_len = op_has_key_lengths(a.op, static_cast<int>(a.inputs.size()));
  const bool l_len = op_has_key_lengths(l.op, static_cast<int>(l.inputs.size()));
  if (a_len != l_len || a.inputs[0] != l.inputs[0] || a.inputs[1] != l.inputs[1]) return false;
  if (a_len && a.inputs.back() != l.inputs.back()) return false;
  return a.attrs == l.attrs;
}

}  // namespace

Graph pass_attention(const Graph& g) {
  GraphRewrite rw(g);
  const std::vector<int> order = g.topo_order();
  std::vector<size_t> pos(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) pos[static_cast<size_t>(order[i])] = i;
  for (size_t li = 0; li < g.nodes.size(); ++li) {
    const Node& l = g.nodes[li];
    if (l.op != OpKind::attention_lse) continue;
    for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
      const Node& a = g.nodes[ai];
      if (a.op != OpKind::attention || rw.removed(static_cast<int>(ai)) || pos[ai] > pos[li] || !same_scores(a, l))
        continue;
      Node f = a;
      f.op = OpKind::attention_fwd_lse;
      f.outputs = {a.outputs[0], l.outputs[0]};
      rw.remove(static_cast<int>(ai));
      rw.remove(static_cast<int>(li));
      rw.add_node(std::move(f), static_cast<int>(ai));
      break;
    }
  }
  Graph out = rw.finish();
  // The statistic is now made by the forward and kept for the backward: an activation, as
  // graph/training.cpp names such values, where it was the backward's temporary.
  for (const Node& n : out.nodes)
    if (n.op == OpKind::attention_fwd_lse) {
      ValueInfo& lse = out.values[static_cast<size_t>(n.outputs[1])];
      if (lse.role == Role::temporary) lse.role = Role::activation;
    }
  return out;
}

}  // namespace tg
