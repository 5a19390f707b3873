// The vocab_pad pass: a language model's output layer in a step of 16-bit weights
// (autocast with the low_copies pass) computes three GEMMs over the vocabulary,
//
//   logits  [N, V]  = h  [N, D] . W^T          (W: the weight's copy [V, D])
//   dh      [N, D]  = dlogits [N, V] . W
//   dW      [V, D]  = dlogits^T . h'
//
// and GPT-2's V = 50257 leaves every row of the logits, of dlogits and of W's transpose
// unaligned to 16 bytes. The CUDA backend then computes each product at padded extents
// on copies of its operands (kernels/gemm/gemm_staging.h): six copies of up to N x V
// elements a step. This pass makes the padding part of the graph instead, so nothing is
// copied: the weight copy gets Vp - V zero rows (Vp = V rounded up to a 16-byte step: the
// update writes its first V rows, the parameter store zeros the rest), the logits and
// their gradient get Vp columns, cross_entropy and its gradient read the first V as the
// classes (attrs.size; the gradient is 0 in the padding columns), and the weight's
// gradient is the first V rows of the padded product (a view). The products are then the
// very ones the backend would compute on its copies, the padding adding products of zeros,
// so the bits do not change. A logits value that is a graph output (the prediction) is
// kept, cut from the padded logits by one slice.
//
// The pass rewrites only where the backend would pad (PassOptions::backend_pads_gemms and
// the same rule: plan_gemm_staging stages all three products), so a plan computes what the
// dynamic executor computes call by call.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/gemm/gemm_staging.h"
#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

bool is_plain_matmul(const Node& n, bool trans_a, bool trans_b) {
  return n.op == OpKind::matmul && n.attrs.trans_a == trans_a && n.attrs.trans_b == trans_b && n.inputs.size() == 2;
}

bool is_class_loss(const Node& n, int logits) {
  return (n.op == OpKind::cross_entropy || n.op == OpKind::cross_entropy_grad) && n.attrs.size == 0 &&
         n.inputs[0] == logits && std::count(n.inputs.begin(), n.inputs.end(), logits) == 1;
}

bool staged(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
            int esize, int64_t min_product) {
  kernels::GemmStagingShape s;
  s.trans_a = trans_a, s.trans_b = trans_b;
  s.m = m, s.n = n, s.k = k, s.lda = lda, s.ldb = ldb, s.ldd = ldd;
  s.esize = esize;
  return kernels::plan_gemm_staging(s, min_product).bytes > 0;
}

// One output layer the pass pads: the node ids of its parts.
struct Head {
  int weight = -1, update = -1;
  std::vector<int> losses;        // cross_entropy and cross_entropy_grad reading the logits
  std::vector<int> input_grads;   // dh = dlogits . W
  std::vector<int> weight_grads;  // dW = dlogits^T . h'
};

// The output layer whose logits node `n` makes, when the pass can pad it.
bool match_head(const Graph& g, const GraphRewrite& rw, int n, int64_t min, Head& head) {
  const Node& mm = g.nodes[static_cast<size_t>(n)];
  if (!is_plain_matmul(mm, false, true)) return false;
  const int h = mm.inputs[0], w = mm.inputs[1], logits = mm.outputs[0];
  const ValueInfo& wv = g.values[static_cast<size_t>(w)];
  const ValueInfo& hv = g.values[static_cast<size_t>(h)];
  if (wv.shape.rank != 2 || hv.shape.rank != 2 || h == w || !is_weight_copy(g, w)) return false;
  const int esize = dtype_size(wv.dtype);
  const int64_t vocab = wv.shape[0], dim = wv.shape[1], rows = hv.shape[0];
  if (kernels::gemm_extent_aligned(vocab, esize)) return false;
  // Rows of at most 1024 classes in whole 4-element steps take the CUDA cross-entropy
  // gradient's 4-wide frame (rows.cuh launch_rows), whose order depends on the row stride;
  // padded, they would take the scalar frame and other bits. Such a head is left as it is.
  if (vocab % 4 == 0 && vocab <= 1024) return false;
  const auto& readers = rw.consumers();
  head = Head{};
  head.weight = w;
  if (!staged(false, true, rows, vocab, dim, dim, dim, vocab, esize, min)) return false;
  for (int r : readers[static_cast<size_t>(logits)]) {
    const Node& loss = g.nodes[static_cast<size_t>(r)];
    if (!is_class_loss(loss, logits)) return false;
    head.losses.push_back(r);
    if (loss.op != OpKind::cross_entropy_grad) continue;
    const int dlogits = loss.outputs[0];
    if (rw.is_output(dlogits)) return false;
    for (int u : readers[static_cast<size_t>(dlogits)]) {
      const Node& p = g.nodes[static_cast<size_t>(u)];
      if (p.op != OpKind::matmul || p.inputs.size() != 2 || p.inputs[0] != dlogits || p.inputs[1] == dlogits)
        return false;
      if (is_plain_matmul(p, false, false) && p.inputs[1] == w) {
        if (!staged(false, false, rows, dim, vocab, vocab, dim, dim, esize, min)) return false;
        head.input_grads.push_back(u);
      } else if (is_plain_matmul(p, true, false)) {
        const Shape& other = g.values[static_cast<size_t>(p.inputs[1])].shape;
        if (other.rank != 2 || rw.is_output(p.outputs[0])) return false;
        if (!staged(true, false, vocab, other[1], rows, vocab, other[1], other[1], esize, min)) return false;
        head.weight_grads.push_back(u);
      } else {
        return false;
      }
    }
  }
  if (head.losses.empty()) return false;
  // The weight copy: read by these products and written by its update alone.
  std::unordered_set<int> known(head.input_grads.begin(), head.input_grads.end());
  known.insert(n);
  for (int r : readers[static_cast<size_t>(w)]) {
    if (known.count(r)) continue;
    if (head.update >= 0 || !op_update_writes_copy(g.nodes[static_cast<size_t>(r)].op)) return false;
    head.update = r;
  }
  return head.update >= 0;
}

}  // namespace

Graph pass_vocab_pad(const Graph& g, const PassOptions& opt) {
  if (!opt.backend_pads_gemms) return g;
  GraphRewrite rw(g);
  FreshNames fresh(g);
  bool changed = false;
  std::unordered_set<int> updates_done;
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    Head head;
    if (!match_head(g, rw, n, opt.vocab_pad_min_product, head) || updates_done.count(head.update)) continue;
    updates_done.insert(head.update);
    changed = true;
    const ValueInfo& wv = g.values[static_cast<size_t>(head.weight)];
    const int64_t vocab = wv.shape[0];
    const int64_t padded = kernels::gemm_padded_extent(vocab, dtype_size(wv.dtype));
    auto padded_value = [&](int like, int axis, Role role) {
      ValueInfo v = g.values[static_cast<size_t>(like)];
      v.name = fresh.next(v.name + ".padded");
      v.shape[axis] = padded;
      v.role = role;
      v.producer = -1;
      return rw.add_value(std::move(v));
    };
    const int weight = padded_value(head.weight, 0, Role::optimizer_state);
    rw.drop_leaf(head.weight);

    // The logits, at Vp columns; the prediction, when it is an output, cut from them.
    Node mm = g.nodes[static_cast<size_t>(n)];
    const int logits = mm.outputs[0];
    const bool keep_logits = rw.is_output(logits);
    const int wide_logits = padded_value(logits, 1, keep_logits ? Role::activation : g.values[static_cast<size_t>(logits)].role);
    mm.inputs[1] = weight;
    mm.outputs = {wide_logits};
    // A node shares its name only with its output: a slice takes its output's (the value it
    // keeps), the product before it its padded output's.
    if (keep_logits) mm.name = rw.value_info(wide_logits).name;
    rw.remove(n);
    rw.add_node(mm, n);
    if (keep_logits) rw.add_slice(wide_logits, logits, 1, 0, vocab, n);

    std::vector<int> wide_grad(g.values.size(), -1);  // dlogits -> its padded value
    for (int l : head.losses) {
      Node loss = g.nodes[static_cast<size_t>(l)];
      loss.inputs[0] = wide_logits;
      loss.attrs.size = vocab;
      if (loss.op == OpKind::cross_entropy_grad) {
        const int dlogits = loss.outputs[0];
        wide_grad[static_cast<size_t>(dlogits)] = padded_value(dlogits, 1, g.values[static_cast<size_t>(dlogits)].role);
        loss.outputs = {wide_grad[static_cast<size_t>(dlogits)]};
      }
      rw.remove(l);
      rw.add_node(std::move(loss), l);
    }
    for (int u : head.input_grads) {
      Node p = g.nodes[static_cast<size_t>(u)];
      p.inputs = {wide_grad[static_cast<size_t>(p.inputs[0])], weight};
      rw.remove(u);
      rw.add_node(std::move(p), u);
    }
    for (int u : head.weight_grads) {
      Node p = g.nodes[static_cast<size_t>(u)];
      const int grad = p.outputs[0];
      const int wide = padded_value(grad, 0, g.values[static_cast<size_t>(grad)].role);
      p.inputs[0] = wide_grad[static_cast<size_t>(p.inputs[0])];
      p.outputs = {wide};
      p.name = rw.value_info(wide).name;
      rw.remove(u);
      rw.add_node(p, u);
      rw.add_slice(wide, grad, 0, 0, vocab, u);
    }
    Node update = g.nodes[static_cast<size_t>(head.update)];
    for (int& v : update.inputs)
      if (v == head.weight) v = weight;
    rw.remove(head.update);
    rw.add_node(std::move(update), head.update);
  }
  return changed ? rw.finish() : g;
}

}  // namespace tg
