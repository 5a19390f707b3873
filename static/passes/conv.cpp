// The passes of convolutional networks.
//
// bn_fold: an inference batch norm folded into the convolution before it.
//   batch_norm_inference(conv2d(x, w) [+ c], gamma, beta, stats) becomes
//   (w', b') = batch_norm_fold(w, gamma, beta, stats), then conv2d_bias_act(x, w', b'):
//   w' = w s per output channel and b' = beta - mean s, with s = gamma / sqrt(var + eps).
//   A conv bias c (conv2d_bias of graph/builder.h: an add of c broadcast over [N, K, P, Q])
//   adds c s to b', made by a second fold of c viewed as a [K, 1, 1, 1] weight.
//   The fold is a node of the graph, run at every step, rather than a constant computed at
//   compile time: the parameters live in the ParameterStore, which plans of several shapes
//   and a training plan share, and which training steps and weight loading change after the
//   plan is compiled; a fold on the device costs one small kernel per convolution. Training
//   graphs normalize with batch statistics (batch_norm), which do not fold; only inference
//   graphs hold the pattern.
//
// conv: what follows a convolution moves into its epilogue.
//  1. add(conv2d(x, w), c broadcast) -> conv2d_bias_act(x, w, c), act none.
//  2. add(conv2d_bias_act(...), r) -> conv2d_bias_add_act(x, w, c, r): the residual.
//  3. relu of either, act none -> act relu.
// A fused value is one only its consumer reads (and no graph output). The passes run after
// autodiff, so the fused ops need no gradient rule, and the conv pass applies to training
// graphs too wherever a backward op reads none of the values it removes (relu_grad reads
// the ReLU's output, which the fused op writes); a convolution that feeds a training batch
// norm has no bias or ReLU of its own to take.
#include <vector>

#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

const Node& node_of(const Graph& g, int n) { return g.nodes[static_cast<size_t>(n)]; }
const ValueInfo& value_of(const Graph& g, int v) { return g.values[static_cast<size_t>(v)]; }

// A per-channel bias c [K] broadcast to the output y [N, K, P, Q] by a chain of broadcast
// nodes (conv2d_bias's form): c, and the chain's nodes from the add down.
struct ChannelBias {
  int bias = -1;
  std::vector<int> chain;
};

bool channel_bias(const Graph& g, int v, const Shape& y, ChannelBias& out) {
  if (y.rank != 4 || value_of(g, v).shape != y) return false;
  std::vector<int> chain;
  std::vector<int> axes;
  int root = v;
  while (value_of(g, root).shape.rank > 1) {
    const int p = value_of(g, root).producer;
    if (p < 0 || node_of(g, p).op != OpKind::broadcast) return false;
    chain.push_back(p);
    axes.push_back(node_of(g, p).attrs.axis);
    root = node_of(g, p).inputs[0];
  }
  if (value_of(g, root).shape != Shape{y[1]}) return false;
  // Replay the inserted axes from [K]: the channel axis must end at dim 1.
  int pos = 0, rank = 1;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const int a = *it < 0 ? *it + rank + 1 : *it;
    if (a <= pos) ++pos;
    ++rank;
  }
  if (pos != 1 || rank != 4) return false;
  out.bias = root;
  out.chain = std::move(chain);
  return true;
}

// Removes the chain's nodes from the add down while each one's value has no other reader.
void remove_chain(GraphRewrite& rw, const ChannelBias& b, int reader) {
  int r = reader;
  for (int n : b.chain) {
    if (!rw.only_read_by(node_of(rw.source(), n).outputs[0], r)) return;
    rw.remove(n);
    r = n;
  }
}

int new_value(GraphRewrite& rw, const std::string& name, const Shape& shape, DType dt) {
  ValueInfo v;
  v.name = name;
  v.shape = shape;
  v.dtype = dt;
  v.role = Role::temporary;
  return rw.add_value(std::move(v));
}

Node make_node(std::string name, OpKind op, std::vector<int> inputs, std::vector<int> outputs, Attrs attrs = {}) {
  Node n;
  n.name = std::move(name);
  n.op = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = attrs;
  return n;
}

// x (of dtype dt) viewed under `shape` (a reshape node at `anchor`): the new value.
int view(GraphRewrite& rw, int x, DType dt, const Shape& shape, const std::string& name, int anchor) {
  Attrs at;
  at.shape = shape;
  const int v = new_value(rw, name, shape, dt);
  rw.add_node(make_node(name, OpKind::reshape, {x}, {v}, at), anchor);
  return v;
}

// x (of dtype `from`) cast to `to` (a cast node at `anchor`, unless x is a cast of a value
// of dtype `to`, which is taken as it is): the value.
int as_dtype(GraphRewrite& rw, int x, DType from, DType to, const Shape& shape, const std::string& name, int anchor) {
  if (from == to) return x;
  const Graph& g = rw.source();
  if (x < static_cast<int>(g.values.size())) {
    const int p = value_of(g, x).producer;
    if (p >= 0 && node_of(g, p).op == OpKind::cast && value_of(g, node_of(g, p).inputs[0]).dtype == to)
      return node_of(g, p).inputs[0];
  }
  Attrs at;
  at.to = to;
  const int v = new_value(rw, name, shape, to);
  rw.add_node(make_node(name, OpKind::cast, {x}, {v}, at), anchor);
  return v;
}

// The producer of v of kind `op` that may be fused into `reader`, directly or through a
// widening cast to f32 (a 16-bit graph's convolution before an f32 op, graph/precision.h):
// the node, and the cast in *cast (-1 when none); -1 when neither.
int fusable_through_cast(const GraphRewrite& rw, int v, OpKind op, int reader, int* cast) {
  *cast = -1;
  const int p = rw.fusable_producer(v, op, reader);
  if (p >= 0) return p;
  const Graph& g = rw.source();
  const int c = rw.fusable_producer(v, OpKind::cast, reader);
  if (c < 0 || value_of(g, v).dtype != DType::F32) return -1;
  const int u = node_of(g, c).inputs[0];
  if (value_of(g, u).dtype == DType::F32) return -1;
  const int q = rw.fusable_producer(u, op, c);
  if (q >= 0) *cast = c;
  return q;
}

// The fused node `f` in the place of `reader` and of the producer p (and the cast between,
// when cast >= 0) that it replaces. Through a cast, f writes p's value in p's dtype, and a
// cast widens it into the reader's output.
void replace(GraphRewrite& rw, int p, int cast, int reader, Node f) {
  if (cast < 0) return rw.fuse_into_reader(p, reader, std::move(f));
  const Graph& g = rw.source();
  const Node& r = node_of(g, reader);
  f.name = node_of(g, p).name;
  f.outputs = node_of(g, p).outputs;
  Node widen = node_of(g, cast);
  widen.name = r.name;
  widen.inputs = f.outputs;
  widen.outputs = r.outputs;
  rw.remove(p);
  rw.remove(cast);
  rw.remove(reader);
  rw.add_node(std::move(f), reader);
  rw.add_node(std::move(widen), reader);
}

// add(conv2d(x, w), c broadcast) at node `add`, the conv2d possibly through a widening
// cast: the conv2d's node (and the cast in *cast), the bias; -1 when not.
int conv_plus_bias(const GraphRewrite& rw, int add, ChannelBias& bias, int* cast) {
  const Graph& g = rw.source();
  const Node& a = node_of(g, add);
  if (a.op != OpKind::add || a.inputs[0] == a.inputs[1]) return -1;
  for (int side = 0; side < 2; ++side) {
    const int conv = fusable_through_cast(rw, a.inputs[static_cast<size_t>(side)], OpKind::conv2d, add, cast);
    if (conv >= 0 && channel_bias(g, a.inputs[static_cast<size_t>(1 - side)], value_of(g, a.outputs[0]).shape, bias))
      return conv;
  }
  return -1;
}

}  // namespace

Graph pass_bn_fold(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    const int id = static_cast<int>(i);
    if (bn.op != OpKind::batch_norm_inference || rw.removed(id)) continue;
    // The convolution, alone or with its bias added, possibly through a widening cast.
    int cast = -1;
    int conv = fusable_through_cast(rw, bn.inputs[0], OpKind::conv2d, id, &cast);
    int add = -1;
    ChannelBias cbias;
    if (conv < 0) {
      add = rw.producer(bn.inputs[0]);
      if (add < 0 || rw.removed(add) || !rw.only_read_by(bn.inputs[0], id)) continue;
      conv = conv_plus_bias(rw, add, cbias, &cast);
      if (conv < 0) continue;
    }
    const Node& cv = node_of(g, conv);
    // The fold runs in the dtype of the batch norm's per-channel values (f32 in a 16-bit graph,
    // from the f32 weight when the convolution's is a cast of it), the convolution in its own,
    // and a cast gives the batch norm's output its dtype where that differs.
    const DType fd = value_of(g, bn.inputs[1]).dtype, cd = value_of(g, cv.outputs[0]).dtype;
    const DType od = value_of(g, bn.outputs[0]).dtype;
    const int gamma = bn.inputs[1], beta = bn.inputs[2], stats = bn.inputs[3];
    const Shape& ws = value_of(g, cv.inputs[1]).shape;
    const int64_t k = ws[0];
    const int w = as_dtype(rw, cv.inputs[1], cd, fd, ws, bn.name + ".w_for_fold", id);
    Attrs eps;
    eps.eps = bn.attrs.eps;
    const int w_folded = new_value(rw, bn.name + ".folded_w", ws, fd);
    int b_folded = new_value(rw, bn.name + ".folded_b", Shape{k}, fd);
    rw.add_node(make_node(bn.name + ".fold", OpKind::batch_norm_fold, {w, gamma, beta, stats}, {w_folded, b_folded}, eps),
                id);
    if (add >= 0) {
      // c s, by the same fold of c as a [K, 1, 1, 1] weight, added to beta - mean s.
      const int c = as_dtype(rw, cbias.bias, value_of(g, cbias.bias).dtype, fd, Shape{k}, bn.name + ".conv_bias", id);
      const int c4 = view(rw, c, fd, Shape{k, 1, 1, 1}, bn.name + ".conv_bias_4d", id);
      const int cs4 = new_value(rw, bn.name + ".folded_conv_bias_4d", Shape{k, 1, 1, 1}, fd);
      const int unused = new_value(rw, bn.name + ".fold_conv_bias:1", Shape{k}, fd);
      rw.add_node(make_node(bn.name + ".fold_conv_bias", OpKind::batch_norm_fold, {c4, gamma, beta, stats}, {cs4, unused},
                            eps),
                  id);
      const int cs = view(rw, cs4, fd, Shape{k}, bn.name + ".folded_conv_bias", id);
      const int sum = new_value(rw, bn.name + ".folded_b_total", Shape{k}, fd);
      rw.add_node(make_node(bn.name + ".folded_b_total", OpKind::add, {cs, b_folded}, {sum}), id);
      b_folded = sum;
      remove_chain(rw, cbias, add);
      rw.remove(add);
    }
    Attrs at;
    at.conv = cv.attrs.conv;
    at.act = Act::none;
    const int w_conv = as_dtype(rw, w_folded, fd, cd, ws, bn.name + ".folded_w_cast", id);
    const int b_conv = as_dtype(rw, b_folded, fd, cd, Shape{k}, bn.name + ".folded_b_cast", id);
    const Shape& ys = value_of(g, bn.outputs[0]).shape;
    const int y = cd == od ? bn.outputs[0] : new_value(rw, bn.name + ".conv", ys, cd);
    rw.add_node(make_node(cd == od ? bn.name : bn.name + ".conv", OpKind::conv2d_bias_act, {cv.inputs[0], w_conv, b_conv},
                          {y}, at),
                id);
    if (cd != od) {
      Attrs to;
      to.to = od;
      rw.add_node(make_node(bn.name, OpKind::cast, {y}, bn.outputs, to), id);
    }
    // A 16-bit convolution's weight cast, which the fold read past: nothing reads it now.
    const int w_cast = rw.producer(cv.inputs[1]);
    if (w != cv.inputs[1] && w_cast >= 0 && !rw.removed(w_cast) && rw.only_read_by(cv.inputs[1], conv))
      rw.remove(w_cast);
    if (cast >= 0) rw.remove(cast);
    rw.remove(conv);
    rw.remove(id);
  }
  return rw.finish();
}

namespace {

// 1. add(conv2d, bias broadcast) -> conv2d_bias_act.
Graph fuse_conv_bias(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int id = static_cast<int>(i);
    if (rw.removed(id)) continue;
    ChannelBias cbias;
    int cast = -1;
    const int conv = conv_plus_bias(rw, id, cbias, &cast);
    if (conv < 0) continue;
    const Node& cv = node_of(g, conv);
    const DType cd = value_of(g, cv.outputs[0]).dtype;
    const int c = as_dtype(rw, cbias.bias, value_of(g, cbias.bias).dtype, cd, value_of(g, cbias.bias).shape,
                           g.nodes[i].name + ".bias", id);
    Attrs at;
    at.conv = cv.attrs.conv;
    remove_chain(rw, cbias, id);
    replace(rw, conv, cast, id, make_node("", OpKind::conv2d_bias_act, {cv.inputs[0], cv.inputs[1], c}, {}, at));
  }
  return rw.finish();
}

// 2. add(conv2d_bias_act, r) -> conv2d_bias_add_act.
Graph fuse_conv_residual(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& ad = g.nodes[i];
    const int id = static_cast<int>(i);
    if (ad.op != OpKind::add || rw.removed(id) || ad.inputs[0] == ad.inputs[1]) continue;
    for (int side = 1; side >= 0; --side) {  // the later operand first: the term just computed
      int cast = -1;
      const int p = fusable_through_cast(rw, ad.inputs[static_cast<size_t>(side)], OpKind::conv2d_bias_act, id, &cast);
      if (p < 0 || node_of(g, p).attrs.act != Act::none) continue;  // the residual goes before the activation
      const int r = ad.inputs[static_cast<size_t>(1 - side)];
      Node f = node_of(g, p);
      const DType cd = value_of(g, f.outputs[0]).dtype;
      f.op = OpKind::conv2d_bias_add_act;
      f.inputs.push_back(as_dtype(rw, r, value_of(g, r).dtype, cd, value_of(g, r).shape, ad.name + ".residual", id));
      replace(rw, p, cast, id, std::move(f));
      break;
    }
  }
  return rw.finish();
}

// 3. relu(fused convolution) -> its act relu.
Graph fuse_conv_relu(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& r = g.nodes[i];
    const int id = static_cast<int>(i);
    if (r.op != OpKind::relu || rw.removed(id)) continue;
    int cast = -1;
    int p = fusable_through_cast(rw, r.inputs[0], OpKind::conv2d_bias_act, id, &cast);
    if (p < 0) p = fusable_through_cast(rw, r.inputs[0], OpKind::conv2d_bias_add_act, id, &cast);
    if (p < 0 || node_of(g, p).attrs.act != Act::none) continue;
    // Widening is exact and keeps the sign: relu(widen(v)) = widen(relu(v)).
    Node f = node_of(g, p);
    f.attrs.act = Act::relu;
    replace(rw, p, cast, id, std::move(f));
  }
  return rw.finish();
}

}  // namespace

Graph pass_conv(const Graph& g) { return fuse_conv_relu(fuse_conv_residual(fuse_conv_bias(g))); }

}  // namespace tg
