// The rows pass: two row ops absorb what surrounds them.
//  - softmax(scale(x, a)) -> softmax(x) with alpha a, and scale(softmax_grad(dy, y), a) ->
//    softmax_grad(dy, y) with alpha a: the attention's 1/sqrt(d) scale, forward and back,
//    without its own pass over the scores. The kernels round a * x (and a * dx) as the
//    scale op does, so the result has the unfused graph's bits.
//  - layernorm_grad_gamma(dy, x) and the sum of dy's rows (layernorm's beta gradient,
//    sum_rows in graph/autodiff.cpp) -> layernorm_grad_params(dy, x): one op with two
//    outputs, so the CUDA kernel reads dy once for both.
//  - add(acc, layernorm_grad_x(dy, x, gamma)) -> layernorm_grad_x_acc(dy, x, gamma, acc): a
//    pre-LN residual stream's gradient, summed where each block's layernorm adds its part,
//    without a separate pass over it. f32 only, where the kernel's one rounding of acc + dx
//    is the add's (a 16-bit add would round dx first).
//  - batch_norm_grad_x(dy, x, gamma), batch_norm_grad_gamma(dy, x) and batch_norm_grad_beta(dy)
//    of one batch norm -> batch_norm_grad(dy, x, gamma): dx, and dgamma and dbeta as the two
//    rows of a [2, C] output, which the two gradients become views of. The three ops each
//    read dy (and two of them x) for the same per-channel sums; the fused op reads them once
//    and writes what the three wrote, in their bits.
//  - batch_norm(x, gamma, beta) and batch_norm_stats_update(stats, x) of one x ->
//    batch_norm_moments(x, gamma, beta), whose second output holds the batch's mean and
//    unbiased variance, and batch_norm_stats_blend(stats, moments): the running statistics'
//    update no longer reads x again for the statistics the batch norm has just taken. Both
//    the update and the blend blend the batch's values rounded to f32 (graph/batch_norm.h
//    bn_blend), so the running statistics keep their bits, as y does.
//  - relu(y) of that batch_norm_moments' y, where the relu alone reads it -> the same
//    batch_norm_moments with act relu (fuse_batch_norm_relu).
//  - cast(layernorm(x, gamma, beta)) of an f32 layernorm to a float dtype -> layernorm_cast: under
//    autocast every layernorm's f32 output is cast to bf16 or f16 for the GEMMs after it; the
//    kernel rounds its f32 values once on store, as the cast does (the same bits).
//  - layernorm_grad_*(cast(dy16, f32), ...) -> layernorm_grad_*(dy16, ...) where the layernorm
//    gradients are the cast's only readers (through a reshape too): under autocast each
//    layernorm's dy arrives in 16 bits and was widened into an f32 copy for them; they widen
//    it themselves, exactly.
#include <algorithm>
#include <utility>
#include <vector>

#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {


Graph fold_scales(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int id = static_cast<int>(i);
    if (n.op == OpKind::softmax && n.attrs.alpha == 1.0f) {
      const int s = rw.fusable_producer(n.inputs[0], OpKind::scale, id);
      if (s < 0) continue;
      const Node& sc = g.nodes[static_cast<size_t>(s)];
      Node f = n;
      f.inputs = {sc.inputs[0]};
      f.attrs.alpha = sc.attrs.alpha;
      rw.fuse_into_reader(s, id, std::move(f));
    } else if (n.op == OpKind::scale) {
      const int sg = rw.fusable_producer(n.inputs[0], OpKind::softmax_grad, id);
      if (sg < 0 || g.nodes[static_cast<size_t>(sg)].attrs.alpha != 1.0f) continue;
      Node f = g.nodes[static_cast<size_t>(sg)];
      f.attrs.alpha = n.attrs.alpha;
      rw.fuse_into_reader(sg, id, std::move(f));
    }
  }
  return rw.finish();
}

Graph fuse_layernorm_params(const Graph& g) {
  GraphRewrite rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& a = g.nodes[i];
    if (a.op != OpKind::layernorm_grad_gamma || rw.removed(static_cast<int>(i))) continue;
    const int dy = a.inputs[0];
    const Shape& s = g.values[static_cast<size_t>(dy)].shape;
    // The beta gradient: reduce_sum over axis 0 of dy, or of a [-1, n] view of it.
    std::vector<int> candidates = rw.consumers()[static_cast<size_t>(dy)];
    for (int c : rw.consumers()[static_cast<size_t>(dy)])
      if (g.nodes[static_cast<size_t>(c)].op == OpKind::reshape) {
        const std::vector<int>& more = rw.consumers()[static_cast<size_t>(g.nodes[static_cast<size_t>(c)].outputs[0])];
        candidates.insert(candidates.end(), more.begin(), more.end());
      }
    int beta = -1, view = -1;
    for (int j : candidates) {
      const Node& b = g.nodes[static_cast<size_t>(j)];
      if (b.op != OpKind::reduce_sum || rw.removed(j) || b.attrs.axis != 0) continue;
      const int in = b.inputs[0];
      const Shape& bs = g.values[static_cast<size_t>(in)].shape;
      if (bs.rank != 2 || bs[1] != s.last() || bs[0] * bs[1] != s.numel()) continue;
      beta = j;
      // The view feeding it goes too when nothing else reads it.
      if (in != dy && rw.only_read_by(in, j)) view = g.values[static_cast<size_t>(in)].producer;
      break;
    }
    if (beta < 0) continue;
    const Node& b = g.nodes[static_cast<size_t>(beta)];
    Node f = a;
    f.op = OpKind::layernorm_grad_params;
    f.outputs = {a.outputs[0], b.outputs[0]};
    rw.remove(static_cast<int>(i));
    rw.remove(beta);
    if (view >= 0) rw.remove(view);
    rw.add_node(std::move(f), std::max(static_cast<int>(i), beta));
  }
  return rw.finish();
}

Graph fuse_batch_norm_grads(const Graph& g) {
  GraphRewrite rw(g);
  FreshNames fresh(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& gx = g.nodes[i];
    if (gx.op != OpKind::batch_norm_grad_x || rw.removed(static_cast<int>(i))) continue;
    const int dy = gx.inputs[0], x = gx.inputs[1];
    int gamma = -1, beta = -1;
    for (int c : rw.consumers()[static_cast<size_t>(dy)]) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (rw.removed(c) || n.attrs.channels_last != gx.attrs.channels_last) continue;
      if (n.op == OpKind::batch_norm_grad_gamma && gamma < 0 && n.inputs[1] == x && n.attrs.eps == gx.attrs.eps)
        gamma = c;
      else if (n.op == OpKind::batch_norm_grad_beta && beta < 0)
        beta = c;
    }
    if (gamma < 0 || beta < 0) continue;
    changed = true;
    const int dgamma = g.nodes[static_cast<size_t>(gamma)].outputs[0];
    const int dbeta = g.nodes[static_cast<size_t>(beta)].outputs[0];
    const ValueInfo& dg = g.values[static_cast<size_t>(dgamma)];
    const int64_t channels = dg.shape[0];
    ValueInfo pv = dg;
    pv.name = fresh.next(dg.name + ".with_beta");
    pv.shape = Shape{2, channels};
    pv.producer = -1;
    const int params = rw.add_value(std::move(pv));
    const int anchor = std::max({static_cast<int>(i), gamma, beta});
    Node f = gx;
    f.op = OpKind::batch_norm_grad;
    f.outputs = {gx.outputs[0], params};
    rw.remove(static_cast<int>(i));
    rw.remove(gamma);
    rw.remove(beta);
    rw.add_node(std::move(f), anchor);
    // Row r of params as the gradient it holds: a [1, C] slice, then that as [C] (both views).
    for (const auto& [row, grad] : {std::pair<int64_t, int>{0, dgamma}, {1, dbeta}}) {
      ValueInfo rv = g.values[static_cast<size_t>(grad)];
      rv.name = fresh.next(rv.name + ".row");
      rv.shape = Shape{1, channels};
      rv.producer = -1;
      const int row_value = rw.add_value(std::move(rv));
      rw.add_slice(params, row_value, 0, row, 1, anchor);
      Node rs;
      rs.op = OpKind::reshape;
      rs.name = g.values[static_cast<size_t>(grad)].name;
      rs.attrs.shape = Shape{channels};
      rs.inputs = {row_value};
      rs.outputs = {grad};
      rw.add_node(std::move(rs), anchor);
    }
  }
  return changed ? rw.finish() : g;
}

Graph fuse_batch_norm_moments(const Graph& g) {
  GraphRewrite rw(g);
  FreshNames fresh(g);
  bool changed = false;
  const int nodes = static_cast<int>(g.nodes.size());
  for (int u = 0; u < nodes; ++u) {
    const Node& up = g.nodes[static_cast<size_t>(u)];
    if (up.op != OpKind::batch_norm_stats_update || rw.removed(u)) continue;
    const int stats = up.inputs[0], x = up.inputs[1];
    if (rw.consumers()[static_cast<size_t>(stats)].size() != 1) continue;  // the blend moves the write
    int bn = -1;
    for (int c : rw.consumers()[static_cast<size_t>(x)]) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (n.op == OpKind::batch_norm && !rw.removed(c) && n.inputs[0] == x && n.attrs.channels_last == up.attrs.channels_last) {
        bn = c;
        break;
      }
    }
    if (bn < 0) continue;
    changed = true;
    const Node& b = g.nodes[static_cast<size_t>(bn)];
    ValueInfo mv;  // a temporary of the step, not the persistent statistics
    mv.name = fresh.next(b.name + ".moments");
    mv.shape = g.values[static_cast<size_t>(stats)].shape;
    const int moments = rw.add_value(std::move(mv));
    Node f = b;
    f.op = OpKind::batch_norm_moments;
    f.outputs = {b.outputs[0], moments};
    Node blend;
    blend.op = OpKind::batch_norm_stats_blend;
    blend.name = up.name;
    blend.inputs = {stats, moments};
    blend.attrs.momentum = up.attrs.momentum;
    rw.remove(bn);
    rw.remove(u);
    rw.add_node(std::move(f), bn);
    rw.add_node(std::move(blend), std::max(bn, u));
  }
  return changed ? rw.finish() : g;
}

// batch_norm_moments and the relu of its y, where the relu alone reads y -> batch_norm_moments
// with act relu, writing the relu's output in its bits (relu commutes with each dtype's
// rounding), so that y is neither written nor read again. Training reads no pre-activation y
// (relu's gradient reads relu's output, batch norm's reads x). The fused node stays at the
// batch norm's place, before the blend that reads its moments.
Graph fuse_batch_norm_relu(const Graph& g) {
  GraphRewrite rw(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int id = static_cast<int>(i);
    if (n.op != OpKind::relu || rw.removed(id)) continue;
    const int bn = rw.fusable_producer(n.inputs[0], OpKind::batch_norm_moments, id);
    if (bn < 0) continue;
    const Node& b = g.nodes[static_cast<size_t>(bn)];
    if (b.attrs.act != Act::none || b.outputs[0] != n.inputs[0]) continue;
    Node f = b;
    f.name = n.name;  // a node shares its name with its (first) output
    f.attrs.act = Act::relu;
    f.outputs = {n.outputs[0], b.outputs[1]};
    rw.remove(bn);
    rw.remove(id);
    rw.add_node(std::move(f), bn);
    changed = true;
  }
  return changed ? rw.finish() : g;
}

// A layernorm's output cast on its store (layernorm_cast) and a layernorm input gradient
// added into its accumulation (layernorm_grad_x_acc): one walk, the two patterns reading
// disjoint nodes (the forward op and its gradient).
Graph fuse_layernorm_epilogues(const Graph& g) {
  GraphRewrite rw(g);
  auto f32 = [&](int v) { return g.values[static_cast<size_t>(v)].dtype == DType::F32; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int id = static_cast<int>(i);
    // An f32 layernorm only: from 16 bits the pair rounds twice, the fused kernel once.
    if (n.op == OpKind::cast && !dtype_is_int(n.attrs.to) && f32(n.inputs[0])) {
      const int ln = rw.fusable_producer(n.inputs[0], OpKind::layernorm, id);
      if (ln < 0) continue;
      const Node& l = g.nodes[static_cast<size_t>(ln)];
      Node f = n;
      f.op = OpKind::layernorm_cast;
      f.inputs = l.inputs;
      f.attrs = l.attrs;
      f.attrs.to = n.attrs.to;
      rw.fuse_into_reader(ln, id, std::move(f));
    } else if (n.op == OpKind::add && n.inputs[0] != n.inputs[1] && f32(n.outputs[0])) {
      for (int k = 1; k >= 0; --k) {
        const int ln = rw.fusable_producer(n.inputs[static_cast<size_t>(k)], OpKind::layernorm_grad_x, id);
        if (ln < 0) continue;
        const Node& l = g.nodes[static_cast<size_t>(ln)];
        Node f = n;
        f.op = OpKind::layernorm_grad_x_acc;
        f.inputs = {l.inputs[0], l.inputs[1], l.inputs[2], n.inputs[static_cast<size_t>(1 - k)]};
        f.attrs = l.attrs;
        rw.fuse_into_reader(ln, id, std::move(f));
        break;
      }
    }
  }
  return rw.finish();
}

// Reads kTypeLowGrad's one exception (graph/op.h): a layernorm gradient may take a 16-bit dy
// beside f32 inputs and widens it exactly on load. Under autocast every layernorm's dy is the
// gradient of the cast after it, cast back to f32 (and, for a final layernorm before a 2-D
// head, reshaped) and read by that layernorm's gradients alone: they read the 16-bit gradient
// (a reshape of it) instead, and the f32 copy goes.
Graph read_low_layernorm_dy(const Graph& g) {
  GraphRewrite rw(g);
  FreshNames fresh(g);
  bool changed = false;
  const auto reads_as_dy = [&](int r, int v) {
    const Node& n = g.nodes[static_cast<size_t>(r)];
    if (op_traits(n.op).dtype_rule != op_table::kTypeLowGrad || rw.removed(r) || n.inputs[0] != v) return false;
    return std::count(n.inputs.begin(), n.inputs.end(), v) == 1 &&
           g.values[static_cast<size_t>(n.inputs[1])].dtype == DType::F32;
  };
  // Whether every reader of v (at least one) is a layernorm gradient reading it as dy.
  const auto only_dy = [&](int v) {
    const std::vector<int>& readers = rw.consumers()[static_cast<size_t>(v)];
    return !rw.is_output(v) && !readers.empty() &&
           std::all_of(readers.begin(), readers.end(), [&](int r) { return reads_as_dy(r, v); });
  };
  const auto read_instead = [&](int v, int low) {
    for (int r : rw.consumers()[static_cast<size_t>(v)]) {
      Node n = g.nodes[static_cast<size_t>(r)];
      n.inputs[0] = low;
      rw.remove(r);
      rw.add_node(std::move(n), r);
    }
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& c = g.nodes[i];
    if (c.op != OpKind::cast || c.attrs.to != DType::F32 || rw.removed(static_cast<int>(i))) continue;
    const DType from = g.values[static_cast<size_t>(c.inputs[0])].dtype;
    const int wide = c.outputs[0];
    if (from != DType::BF16 && from != DType::F16) continue;
    if (only_dy(wide)) {
      rw.remove(static_cast<int>(i));
      read_instead(wide, c.inputs[0]);
      changed = true;
      continue;
    }
    // cast -> reshape -> the layernorm gradients: the reshape moves before the cast's input.
    const std::vector<int>& readers = rw.consumers()[static_cast<size_t>(wide)];
    if (readers.size() != 1 || rw.is_output(wide)) continue;
    const int rs = readers[0];
    const Node& view = g.nodes[static_cast<size_t>(rs)];
    if (view.op != OpKind::reshape || rw.removed(rs) || !only_dy(view.outputs[0])) continue;
    ValueInfo lv = g.values[static_cast<size_t>(view.outputs[0])];
    lv.name = fresh.next(lv.name + ".low");
    lv.dtype = from;
    lv.producer = -1;
    const int low = rw.add_value(std::move(lv));
    Node moved = view;
    moved.name = rw.value_info(low).name;  // a node shares its name with its output
    moved.inputs = {c.inputs[0]};
    moved.outputs = {low};
    rw.remove(static_cast<int>(i));
    rw.remove(rs);
    rw.add_node(std::move(moved), rs);
    read_instead(view.outputs[0], low);
    changed = true;
  }
  return changed ? rw.finish() : g;
}

}  // namespace

Graph pass_rows(const Graph& g) {
  return fuse_batch_norm_relu(fuse_batch_norm_moments(
      fuse_batch_norm_grads(read_low_layernorm_dy(fuse_layernorm_epilogues(fuse_layernorm_params(fold_scales(g)))))));
}

}  // namespace tg
