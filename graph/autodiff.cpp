#include "graph/autodiff.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/errors.h"

namespace tg {

namespace {

int normalize_axis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Swaps the last two dims (matmul's implicit transpose made explicit).
Value transpose_last2(Builder& b, const Value& x) {
  Perm perm = identity_perm();
  perm[static_cast<size_t>(x.shape.rank - 2)] = x.shape.rank - 1;
  perm[static_cast<size_t>(x.shape.rank - 1)] = x.shape.rank - 2;
  return transpose(b, x, perm);
}

// Sum of dy over every axis but the last: the gradient of a [n] vector that was
// added to every row (bias_add's bias, layernorm's beta).
Value sum_rows(Builder& b, const Value& dy) {
  if (dy.shape.rank == 2) return reduce_sum(b, dy, 0);
  return reduce_sum(b, reshape(b, dy, Shape{-1, dy.shape.last()}), 0);
}

// dy summed down to `to`, the shape an input broadcast from (graph/broadcast.h): over the
// leading dims `to` lacks and the dims where it is 1.
Value sum_to(Builder& b, Value dy, const Shape& to) {
  if (dy.shape == to) return dy;
  // reduce_sum keeps a rank-1 input's one dim ([n] -> [1]): a scalar `to` takes the reshape.
  while (dy.shape.rank > std::max(to.rank, 1)) dy = reduce_sum(b, dy, 0);
  if (to.rank == 0 && dy.shape[0] != 1) dy = reduce_sum(b, dy, 0);
  for (int d = to.rank - 1; d >= 0; --d)
    if (to[d] == 1 && dy.shape[d] != 1) dy = reduce_sum(b, dy, d);  // from the last: d's index stays
  return dy.shape == to ? dy : reshape(b, dy, to);
}

struct MatmulGrads {
  Value da, db;
};

// C = op(A) op(B). For the rank-2 and both-batched cases each gradient is one
// matmul with suitable flags; for a batched A times a shared [k,n] B, dA stays
// batched while dB sums over the batch as one 2-D matmul over the folded rows.
MatmulGrads matmul_vjp(Builder& b, const TapeEntry& e, const Value& dc, bool need_a, bool need_b) {
  const Value& a = e.inputs[0];
  const Value& w = e.inputs[1];
  const bool ta = e.attrs.trans_a, tb = e.attrs.trans_b;
  MatmulGrads g;
  const bool shared_b = a.shape.rank >= 3 && w.shape.rank == 2;
  if (!shared_b) {
    if (need_a) {
      if (!ta)
        g.da = matmul(b, dc, w, false, !tb);  // dC op(B)^T
      else
        g.da = matmul(b, w, dc, tb, true);  // (dC op(B)^T)^T = op(B) dC^T
    }
    if (need_b) {
      if (!tb)
        g.db = matmul(b, a, dc, !ta, false);  // op(A)^T dC
      else
        g.db = matmul(b, dc, a, true, ta);  // (op(A)^T dC)^T = dC^T op(A)
    }
    return g;
  }
  if (need_a) {
    // dC op(B)^T is [.., m, k]; with trans_a, A is [.., k, m], so transpose it back.
    Value t = matmul(b, dc, w, false, !tb);
    g.da = ta ? transpose_last2(b, t) : t;
  }
  if (need_b) {
    const Value a_mk = ta ? transpose_last2(b, a) : a;  // [.., m, k], rows contiguous
    const Value a2 = reshape(b, a_mk, Shape{-1, a_mk.shape.last()});
    const Value dc2 = reshape(b, dc, Shape{-1, dc.shape.last()});
    g.db = tb ? matmul(b, dc2, a2, true, false) : matmul(b, a2, dc2, true, false);
  }
  return g;
}

}  // namespace

std::vector<Value> vjp(Builder& b, const TapeEntry& e, const Value& dy, const std::vector<bool>& needs) {
  if (!op_is_differentiable(e.op))
    graph_error("autodiff: {} has no gradient rule ({}); the backward ops and the optimizer updates "
                "cannot be differentiated again; keep them out of the forward pass you differentiate",
                op_name(e.op), op_is_update(e.op) ? "an optimizer update"
                               : op_is_fused(e.op) ? "a fused op: the graph passes make it after autodiff"
                                                   : "a backward or constant op");
  if (!op_arity_ok(e.op, static_cast<int>(e.inputs.size())) || needs.size() != e.inputs.size())
    graph_error("autodiff: {} entry has {} inputs and {} needs flags; it takes {}", op_name(e.op),
                e.inputs.size(), needs.size(), op_num_inputs(e.op));
  std::vector<Value> g(e.inputs.size());
  // Only the inputs the op table marks have a gradient (not cross_entropy's labels, ...), and
  // never an integer value: ids and labels are data, with no gradient to give.
  auto need = [&](size_t i) {
    return needs[i] && op_has_gradient_for(e.op, static_cast<int>(i)) && !dtype_is_int(e.inputs[i].dtype);
  };
  const Value& x = e.inputs[0];
  switch (e.op) {
    case OpKind::matmul: {
      MatmulGrads m = matmul_vjp(b, e, dy, need(0), need(1));
      g[0] = m.da;
      g[1] = m.db;
      break;
    }
    case OpKind::add:
      if (need(0)) g[0] = dy;
      if (need(1)) g[1] = dy;
      break;
    case OpKind::sub:
      if (need(0)) g[0] = dy;
      if (need(1)) g[1] = scale(b, dy, -1.0f);
      break;
    case OpKind::mul:
      if (need(0)) g[0] = mul(b, dy, e.inputs[1]);
      if (need(1)) g[1] = mul(b, dy, x);
      break;
    case OpKind::scale:
      if (need(0)) g[0] = scale(b, dy, e.attrs.alpha);
      break;
    case OpKind::bias_add:
      if (need(0)) g[0] = dy;
      if (need(1)) g[1] = sum_rows(b, dy);
      break;
    case OpKind::relu:  // reads the output, so an in-place relu keeps its gradient
      if (need(0)) g[0] = b.apply(OpKind::relu_grad, {dy, e.output});
      break;
    case OpKind::gelu:
      if (need(0)) g[0] = b.apply(OpKind::gelu_grad, {dy, x});
      break;
    // tanh, sigmoid and exp read their output, so that an in-place forward keeps its gradient.
    case OpKind::tanh:
      if (need(0)) g[0] = b.apply(OpKind::tanh_grad, {dy, e.output});
      break;
    case OpKind::sigmoid:
      if (need(0)) g[0] = b.apply(OpKind::sigmoid_grad, {dy, e.output});
      break;
    case OpKind::exp:
      if (need(0)) g[0] = mul(b, dy, e.output);
      break;
    case OpKind::log:
      if (need(0)) g[0] = b.apply(OpKind::log_grad, {dy, x});
      break;
    case OpKind::gelu_erf:
      if (need(0)) g[0] = b.apply(OpKind::gelu_erf_grad, {dy, x});
      break;
    case OpKind::softmax:  // of softmax(alpha x): alpha softmax_grad, one op
      if (need(0)) {
        Attrs at;
        at.alpha = e.attrs.alpha;
        g[0] = b.apply(OpKind::softmax_grad, {dy, e.output}, at);
      }
      break;
    case OpKind::layernorm: {
      Attrs at;
      at.eps = e.attrs.eps;
      if (need(0)) g[0] = b.apply(OpKind::layernorm_grad_x, {dy, x, e.inputs[1]}, at);
      if (need(1)) g[1] = b.apply(OpKind::layernorm_grad_gamma, {dy, x}, at);
      if (need(2)) g[2] = sum_rows(b, dy);
      break;
    }
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: {
      if (!need(0)) break;
      const int axis = normalize_axis(e.attrs.axis, x.shape.rank);
      const int64_t len = x.shape[axis];
      Value d = e.op == OpKind::reduce_mean ? scale(b, dy, 1.0f / static_cast<float>(len)) : dy;
      if (x.shape.rank == 1)  // [n] -> [1]: broadcast gives [n,1], reshape to [n]
        g[0] = reshape(b, broadcast(b, d, 0, len), x.shape);
      else
        g[0] = broadcast(b, d, axis, len);
      break;
    }
    case OpKind::broadcast:
      if (need(0)) g[0] = reduce_sum(b, dy, normalize_axis(e.attrs.axis, x.shape.rank + 1));
      break;
    case OpKind::transpose:
      if (need(0)) {
        Perm inv = identity_perm();
        for (int d = 0; d < x.shape.rank; ++d) inv[static_cast<size_t>(e.attrs.perm[static_cast<size_t>(d)])] = d;
        g[0] = transpose(b, dy, inv);
      }
      break;
    case OpKind::reshape:
      if (need(0)) g[0] = reshape(b, dy, x.shape);
      break;
    case OpKind::mse_loss:
      if (need(0) || need(1)) {
        const Value dp = b.apply(OpKind::mse_loss_grad, {x, e.inputs[1], dy});
        if (need(0)) g[0] = dp;
        if (need(1)) g[1] = scale(b, dp, -1.0f);
      }
      break;
    case OpKind::padded_mse_loss:  // the count is an integer: no gradient
      if (need(0) || need(1)) {
        const Value dp = b.apply(OpKind::padded_mse_loss_grad, {x, e.inputs[1], e.inputs[2], dy});
        if (need(0)) g[0] = dp;
        if (need(1)) g[1] = scale(b, dp, -1.0f);
      }
      break;
    case OpKind::cross_entropy:  // labels are class indices: no gradient
      if (need(0)) {
        Attrs at;
        at.ignore_index = e.attrs.ignore_index;
        at.size = e.attrs.size;
        g[0] = b.apply(OpKind::cross_entropy_grad, {x, e.inputs[1], dy}, at);
      }
      break;
    case OpKind::embedding:  // the ids are integers: no gradient
      if (need(0)) {
        Attrs at;
        at.size = x.shape[0];
        g[0] = b.apply(OpKind::embedding_grad, {dy, e.inputs[1]}, at);
      }
      break;
    // y = x * m with m the mask times 1 / (1 - p): dx = dy * m, the same dropout (the same rng
    // state, p and stream) of dy. The mask is drawn again rather than stored: it is a pure
    // function of the rng state, which changes only at the end of the step (rng_advance).
    case OpKind::dropout:
      if (need(0)) {
        Attrs at;
        at.p = e.attrs.p;
        at.rng_stream = e.attrs.rng_stream;
        g[0] = b.apply(OpKind::dropout, {dy, e.inputs[1]}, at);
      }
      break;
    case OpKind::copy:
      if (need(0)) g[0] = dy;
      break;
    case OpKind::batch_norm: {
      Attrs at;
      at.eps = e.attrs.eps;
      at.channels_last = e.attrs.channels_last;
      if (need(0)) g[0] = b.apply(OpKind::batch_norm_grad_x, {dy, x, e.inputs[1]}, at);
      // dgamma and dbeta are f32 sums (graph/op.h kTypeChannels); a 16-bit gamma or beta
      // takes them rounded once.
      auto as_param = [&](const Value& sums, int i) {
        const DType dt = e.inputs[static_cast<size_t>(i)].dtype;
        return sums.dtype == dt ? sums : cast(b, sums, dt);
      };
      if (need(1)) g[1] = as_param(b.apply(OpKind::batch_norm_grad_gamma, {dy, x}, at), 1);
      if (need(2)) g[2] = as_param(b.apply(OpKind::batch_norm_grad_beta, {dy}, at), 2);
      break;
    }
    case OpKind::concat: {
      const int axis = normalize_axis(e.attrs.axis, x.shape.rank);
      int64_t start = 0;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        const int64_t len = e.inputs[i].shape[axis];
        if (need(i)) g[i] = slice(b, dy, axis, start, len);
        start += len;
      }
      break;
    }
    case OpKind::slice:
      if (need(0)) {
        // dy in its place along the axis, zeros before and after it.
        const int axis = normalize_axis(e.attrs.axis, x.shape.rank);
        const int64_t before = e.attrs.start, after = x.shape[axis] - e.attrs.start - e.attrs.size;
        auto zeros = [&](int64_t len) {
          Shape s = x.shape;
          s.dims[static_cast<size_t>(axis)] = len;
          const Value z = fill(b, s, 0.0f);
          return dy.dtype == DType::F32 ? z : cast(b, z, dy.dtype);
        };
        std::vector<Value> parts;
        if (before > 0) parts.push_back(zeros(before));
        parts.push_back(dy);
        if (after > 0) parts.push_back(zeros(after));
        g[0] = parts.size() == 1 ? dy : concat(b, parts, axis);
      }
      break;
    case OpKind::conv2d: {
      Attrs at;
      at.conv = e.attrs.conv;
      const Value& w = e.inputs[1];
      if (need(0)) g[0] = b.apply(OpKind::conv2d_grad_input, {dy, w, x}, at);
      if (need(1)) g[1] = b.apply(OpKind::conv2d_grad_weight, {dy, x, w}, at);
      break;
    }
    case OpKind::conv_transpose2d: {
      // y = A^T x, A the conv2d of weight w taking y's shape to x's (graph/conv.h): dx = A dy
      // is that conv2d of dy, and dw, from <dy, A_w^T x> = <A_w dy, x>, is its weight
      // gradient with x in the place of its output gradient and dy in the place of its input.
      Attrs at;
      at.conv = e.attrs.conv;
      at.conv.output_padding = {0, 0};
      const Value& w = e.inputs[1];
      if (need(0)) g[0] = b.apply(OpKind::conv2d, {dy, w}, at);
      if (need(1)) g[1] = b.apply(OpKind::conv2d_grad_weight, {x, dy, w}, at);
      break;
    }
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
      if (need(0)) {
        Attrs at;
        at.conv = e.attrs.conv;
        g[0] = b.apply(e.op == OpKind::max_pool2d ? OpKind::max_pool2d_grad : OpKind::avg_pool2d_grad, {dy, x}, at);
      }
      break;
    case OpKind::where: {
      // dy where cond picked the input, zeros elsewhere; summed over the dims it broadcast along.
      Value zero = fill(b, Shape{1}, 0.0f);
      if (dy.dtype != DType::F32) zero = cast(b, zero, dy.dtype);
      if (need(1)) g[1] = sum_to(b, where(b, x, dy, zero), e.inputs[1].shape);
      if (need(2)) g[2] = sum_to(b, where(b, x, zero, dy), e.inputs[2].shape);
      break;
    }
    case OpKind::cast:  // the gradient goes back to the input's dtype
      if (need(0)) g[0] = cast(b, dy, x.dtype);
      break;
    case OpKind::attention: {
      // The row statistic is recomputed (one more pass over the scores) rather than saved by
      // the forward: the dynamic executor applies ops of one output. The static compiler's
      // attention pass (static/passes/attention.cpp) fuses the two forwards back into one.
      // The key lengths of a padding mask (the last input, when given) go to both.
      std::vector<Value> lse_in{x, e.inputs[1]}, grad_in{dy, x, e.inputs[1], e.inputs[2], e.output};
      if (e.inputs.size() == 4) lse_in.push_back(e.inputs[3]);
      const Value lse = b.apply(OpKind::attention_lse, lse_in, e.attrs);
      grad_in.push_back(lse);
      if (e.inputs.size() == 4) grad_in.push_back(e.inputs[3]);
      const Value grads = b.apply(OpKind::attention_grad, grad_in, e.attrs);
      for (size_t i = 0; i < 3; ++i)
        if (need(i)) g[i] = reshape(b, slice(b, grads, 0, static_cast<int64_t>(i), 1), x.shape);
      break;
    }
    // No gradient rule (the table's grad column is kNone): refused above.
    case OpKind::relu_grad:
    case OpKind::gelu_grad:
    case OpKind::tanh_grad:
    case OpKind::sigmoid_grad:
    case OpKind::log_grad:
    case OpKind::gelu_erf_grad:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_grad_beta:
    case OpKind::batch_norm_inference:
    case OpKind::batch_norm_stats_update:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d_grad:
    case OpKind::softmax_grad:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_gamma:
    case OpKind::mse_loss_grad:
    case OpKind::padded_mse_loss_grad:
    case OpKind::cross_entropy_grad:
    case OpKind::embedding_grad:
    case OpKind::rng_advance:
    case OpKind::fill:
    case OpKind::sgd:
    case OpKind::sgd_momentum:
    case OpKind::unscale:
    case OpKind::found_inf:
    case OpKind::update_scale:
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad:
    case OpKind::matmul_heads:
    case OpKind::layernorm_grad_params:
    case OpKind::layernorm_grad_x_acc:
    case OpKind::layernorm_cast:
    case OpKind::fused_elementwise:
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::matmul_sgd_momentum:
    case OpKind::adamw:
    case OpKind::adamw_multi:
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast:
    case OpKind::adamw_multi_cast:
    case OpKind::batch_norm_fold:
    case OpKind::batch_norm_grad:
    case OpKind::batch_norm_moments:
    case OpKind::batch_norm_stats_blend:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act:
    case OpKind::global_norm:
    case OpKind::clip_by_norm:
    case OpKind::all_reduce: break;
  }
  for (size_t i = 0; i < g.size(); ++i)
    if (need(i) && !g[i].valid())
      graph_error("autodiff: the gradient rule of {} gave no gradient for input {}, which the op table "
                  "(graph/op.h, grad column) says it has; write it in vjp() or take the input out of the column",
                  op_name(e.op), i);
  return g;
}

std::vector<Value> backward(Builder& b, const std::vector<TapeEntry>& tape, const Value& loss,
                            const std::vector<Value>& wrt, const GradientReady& ready) {
  if (!loss.valid())
    graph_error("autodiff: the loss is not a valid value; pass the value the model returns as its loss");
  if (loss.shape.numel() != 1)
    graph_error("autodiff: the loss has shape {}; backward needs a scalar loss of shape [1] (reduce it with "
                "reduce_sum or reduce_mean first)", loss.shape.str());

  // Forward sweep: which values depend on some wrt value. Also checks that ids
  // are fresh, since gradients are keyed by id.
  std::unordered_set<int> depends;
  // An integer value has no gradient: it starts no path to the loss, and no path runs
  // through it (a cast to an integer ends one).
  for (const Value& w : wrt)
    if (w.valid() && !dtype_is_int(w.dtype)) depends.insert(w.id);
  std::unordered_set<int> produced;
  std::vector<bool> live(tape.size(), false);
  for (size_t i = 0; i < tape.size(); ++i) {
    const TapeEntry& e = tape[i];
    if (!e.output.valid()) continue;
    if (!produced.insert(e.output.id).second)
      graph_error("autodiff: tape entry {} ({}) outputs value id {}, which an earlier entry also output; every "
                  "op must return a fresh value id (an in-place op too)", i, op_name(e.op), e.output.id);
    bool any = false;
    for (const Value& in : e.inputs) {
      if (in.id == e.output.id)
        graph_error("autodiff: tape entry {} ({}) outputs its own input id {}; return a fresh value id even "
                    "when the op runs in place", i, op_name(e.op), in.id);
      any = any || depends.count(in.id) > 0;
    }
    if (any && !dtype_is_int(e.output.dtype)) {
      live[i] = true;
      depends.insert(e.output.id);
    }
  }

  std::unordered_map<int, Value> grads;
  auto accumulate = [&](const Value& v, const Value& g) {
    auto it = grads.find(v.id);
    if (it == grads.end())
      grads.emplace(v.id, g);
    else
      it->second = add(b, it->second, g);
  };

  // The earliest live entry reading each wrt value: walking in reverse, its gradient is final
  // once that entry is done.
  std::unordered_map<size_t, std::vector<size_t>> final_after;
  std::vector<bool> reported(wrt.size(), false);
  if (ready) {
    std::unordered_map<int, size_t> first_reader;
    for (size_t i = tape.size(); i-- > 0;)
      if (live[i])
        for (const Value& in : tape[i].inputs) first_reader[in.id] = i;
    for (size_t w = 0; w < wrt.size(); ++w) {
      auto it = wrt[w].valid() ? first_reader.find(wrt[w].id) : first_reader.end();
      if (it != first_reader.end()) final_after[it->second].push_back(w);
    }
  }
  auto report = [&](size_t w) {
    reported[w] = true;
    auto it = wrt[w].valid() ? grads.find(wrt[w].id) : grads.end();
    ready(w, it == grads.end() ? Value{} : it->second);
  };

  if (depends.count(loss.id)) {
    accumulate(loss, fill(b, loss.shape, 1.0f));
    for (size_t r = tape.size(); r-- > 0;) {
      if (!live[r]) continue;
      const TapeEntry& e = tape[r];
      auto it = grads.find(e.output.id);
      if (it != grads.end()) {  // else it does not lead to the loss
        const Value dy = it->second;
        std::vector<bool> needs(e.inputs.size());
        for (size_t j = 0; j < e.inputs.size(); ++j) needs[j] = depends.count(e.inputs[j].id) > 0;
        const std::vector<Value> gin = vjp(b, e, dy, needs);
        for (size_t j = 0; j < e.inputs.size(); ++j)
          if (gin[j].valid()) accumulate(e.inputs[j], gin[j]);
      }
      auto f = final_after.find(r);
      if (f != final_after.end())
        for (size_t w : f->second) report(w);
    }
  }
  if (ready)
    for (size_t w = 0; w < wrt.size(); ++w)
      if (!reported[w]) report(w);

  std::vector<Value> out;
  out.reserve(wrt.size());
  for (const Value& w : wrt) {
    auto it = w.valid() ? grads.find(w.id) : grads.end();
    out.push_back(it == grads.end() ? Value{} : it->second);
  }
  return out;
}

std::vector<TapeEntry> tape_from_graph(const Graph& g) {
  std::vector<TapeEntry> tape;
  const std::vector<int> order = g.topo_order();
  tape.reserve(order.size());
  for (int id : order) {
    const Node& n = g.nodes[static_cast<size_t>(id)];
    TapeEntry e;
    e.op = n.op;
    e.attrs = n.attrs;
    for (int in : n.inputs) e.inputs.push_back(RecordingBuilder::handle(g, in));
    if (!n.outputs.empty()) e.output = RecordingBuilder::handle(g, n.outputs[0]);
    tape.push_back(std::move(e));
  }
  return tape;
}

}  // namespace tg
