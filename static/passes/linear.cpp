// The linear pass: what surrounds a GEMM moves into its epilogue (cuBLASLt computes it
// while the product is still in registers), so the values between never go to memory.
//  1. matmul(a, dz, trans_a) + the sum of dz's rows -> matmul_bias_grad: a weight
//     gradient and the bias gradient of the same dz (bias_add's gradient).
//  2. bias_add(matmul(x, w), b) -> linear(x, w, b), and a relu of it -> act relu. GELU
//     only where nothing else reads its input: a training graph's gelu_grad does.
//  3. add(r, linear(...)) -> linear_add: the residual added in the epilogue (beta = 1).
//  4. add(g, matmul(...)) -> matmul_add: a gradient accumulated into the product.
//  5. relu_grad(matmul(...), y) / gelu_grad(matmul(...), x) -> matmul_act_grad: the
//     activation's gradient of a backward product (dz W^T) in its epilogue.
// Each step runs over the graph the previous one made. A fused value is one only its
// consumer reads (and no graph output), so nothing else sees it disappear.
#include <vector>

#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

const Node& node_of(const Graph& g, int n) { return g.nodes[static_cast<size_t>(n)]; }
const Shape& shape_of(const Graph& g, int v) { return g.values[static_cast<size_t>(v)].shape; }


// 1. Weight and bias gradients of one dz.
Graph fuse_bias_grads(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& r = g.nodes[i];
    if (r.op != OpKind::reduce_sum || r.attrs.axis != 0 || shape_of(g, r.inputs[0]).rank != 2) continue;
    const int dz = r.inputs[0];
    // The same dz, or another [-1, n] view of the value it views, as a weight gradient's B.
    const int src = g.values[static_cast<size_t>(dz)].producer;
    const bool dz_is_view = src >= 0 && node_of(g, src).op == OpKind::reshape;
    const int root = dz_is_view ? node_of(g, src).inputs[0] : dz;
    std::vector<int> candidates = rw.consumers()[static_cast<size_t>(dz)];
    for (int c : rw.consumers()[static_cast<size_t>(root)])
      if (node_of(g, c).op == OpKind::reshape)
        for (int cc : rw.consumers()[static_cast<size_t>(node_of(g, c).outputs[0])]) candidates.push_back(cc);
    int wgrad = -1;
    for (int c : candidates) {
      const Node& m = node_of(g, c);
      if (m.op != OpKind::matmul || rw.removed(c) || !m.attrs.trans_a || m.attrs.trans_b) continue;
      const Shape& a = shape_of(g, m.inputs[0]);
      const Shape& b = shape_of(g, m.inputs[1]);
      if (a.rank != 2 || b != shape_of(g, dz)) continue;
      const int mb = m.inputs[1];
      const int mroot = [&] {
        const int p = g.values[static_cast<size_t>(mb)].producer;
        return p >= 0 && node_of(g, p).op == OpKind::reshape ? node_of(g, p).inputs[0] : mb;
      }();
      if (mb == dz || mroot == root) {
        wgrad = c;
        break;
      }
    }
    if (wgrad < 0) continue;
    const Node& m = node_of(g, wgrad);
    Node f;
    f.name = m.name;
    f.op = OpKind::matmul_bias_grad;
    f.inputs = {m.inputs[0], m.inputs[1]};
    f.outputs = {m.outputs[0], r.outputs[0]};
    rw.remove(wgrad);
    rw.remove(static_cast<int>(i));
    // The view feeding the reduction goes too when nothing else reads it.
    if (dz_is_view && dz != m.inputs[1] && rw.only_read_by(dz, static_cast<int>(i))) rw.remove(src);
    rw.add_node(std::move(f), std::max(wgrad, static_cast<int>(i)));
  }
  return rw.finish();
}

// 2. bias_add(matmul(x, w), b) [-> relu | gelu] -> linear.
Graph fuse_linears(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& ba = g.nodes[i];
    const int id = static_cast<int>(i);
    if (ba.op != OpKind::bias_add || rw.removed(id)) continue;
    const int mm = rw.fusable_producer(ba.inputs[0], OpKind::matmul, id);
    if (mm < 0) continue;
    const Node& m = node_of(g, mm);
    if (m.attrs.trans_a || shape_of(g, m.inputs[1]).rank != 2 || shape_of(g, m.inputs[0]).rank < 2) continue;
    Node f;
    f.name = ba.name;
    f.op = OpKind::linear;
    f.inputs = {m.inputs[0], m.inputs[1], ba.inputs[1]};
    f.attrs.trans_b = m.attrs.trans_b;
    f.outputs = ba.outputs;
    int anchor = id;
    // The activation reading the result, when it is its only reader.
    const std::vector<int>& readers = rw.consumers()[static_cast<size_t>(ba.outputs[0])];
    if (readers.size() == 1 && rw.only_read_by(ba.outputs[0], readers[0])) {
      const Node& act = node_of(g, readers[0]);
      if (act.op == OpKind::relu || act.op == OpKind::gelu) {
        f.attrs.act = act.op == OpKind::relu ? Act::relu : Act::gelu;
        f.name = act.name;
        f.outputs = act.outputs;
        rw.remove(readers[0]);
        anchor = readers[0];
      }
    }
    rw.remove(mm);
    rw.remove(id);
    rw.add_node(std::move(f), anchor);
  }
  return rw.finish();
}

// 3 and 4. add(r, product) -> the product with r accumulated (beta = 1).
Graph fuse_accumulations(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& ad = g.nodes[i];
    const int id = static_cast<int>(i);
    if (ad.op != OpKind::add || rw.removed(id) || ad.inputs[0] == ad.inputs[1]) continue;
    for (int side = 1; side >= 0; --side) {  // the later operand first: the term just computed
      const int v = ad.inputs[static_cast<size_t>(side)];
      const int other = ad.inputs[static_cast<size_t>(1 - side)];
      const int lin = rw.fusable_producer(v, OpKind::linear, id);
      const int mm = lin < 0 ? rw.fusable_producer(v, OpKind::matmul, id) : -1;
      const int p = lin >= 0 ? lin : mm;
      if (p < 0) continue;
      const Node& prod = node_of(g, p);
      if (lin >= 0 && prod.attrs.act != Act::none) continue;  // the residual is added after the bias, not the activation
      Node f = prod;
      f.op = lin >= 0 ? OpKind::linear_add : OpKind::matmul_add;
      f.inputs.push_back(other);
      rw.fuse_into_reader(p, id, std::move(f));
      break;
    }
  }
  return rw.finish();
}

// 5. relu_grad / gelu_grad of a product -> matmul_act_grad.
Graph fuse_act_grads(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& ag = g.nodes[i];
    const int id = static_cast<int>(i);
    if ((ag.op != OpKind::relu_grad && ag.op != OpKind::gelu_grad) || rw.removed(id) || ag.inputs[0] == ag.inputs[1])
      continue;
    const int mm = rw.fusable_producer(ag.inputs[0], OpKind::matmul, id);
    if (mm < 0) continue;
    Node f = node_of(g, mm);
    f.op = OpKind::matmul_act_grad;
    f.attrs.act = ag.op == OpKind::relu_grad ? Act::relu : Act::gelu;
    f.inputs.push_back(ag.inputs[1]);
    rw.fuse_into_reader(mm, id, std::move(f));
  }
  return rw.finish();
}

}  // namespace

Graph pass_linear(const Graph& g) {
  return fuse_act_grads(fuse_accumulations(fuse_linears(fuse_bias_grads(g))));
}

}  // namespace tg
