// The importer's tensor ops: matrix products, shape ops, softmax, LayerNorm and
// reductions. Names: helper nodes get "<onnx output>.<what>", the node that
// computes an ONNX value carries its name (Importer::finish).
#include <fmt/format.h>

#include <algorithm>

#include "graph/quote.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

void matmul_op(Importer& im) {
  const Sym a = im.in(0), b = im.in(1);
  const Dims& da = a.dims;
  const Dims& db = b.dims;
  const std::string& name = im.out_name();
  if (da.size() < 2 || db.size() < 2)
    im.refuse(fmt::format("multiplies {} by {}: a vector operand (rank 1); reshape it to a matrix in the model",
                          dims_str(da), dims_str(db)));
  const int64_t k = da.back(), kb = db[db.size() - 2];
  if (k != kb) im.refuse(fmt::format("cannot multiply {} by {}: inner dims {} != {}", dims_str(da), dims_str(db), k, kb));
  Dims out = da;
  out.back() = db.back();
  const Value va = im.value(0), vb = im.value(1);
  if (db.size() == 2) return im.finish(im.apply(OpKind::matmul, {va, vb}, {}, im.fresh(name + ".matmul")), out);
  if (da.size() != db.size() || !std::equal(da.begin(), da.end() - 2, db.begin()))
    im.refuse(fmt::format("is a batched product of {} and {}: the IR multiplies equal batches only (no "
                          "broadcasting of batch dims)", dims_str(da), dims_str(db)));
  if (da.size() == 3) return im.finish(im.apply(OpKind::matmul, {va, vb}, {}, im.fresh(name + ".matmul")), out);
  // [p, q, m, k] x [p, q, k, n] (attention's heads) as [p*q, m, k] x [p*q, k, n]
  const int64_t batch = numel(Dims(da.begin(), da.end() - 2), im.where());
  const Value a3 = im.reshape_to(va, {batch, da[da.size() - 2], k}, im.fresh(name + ".a3"));
  const Value b3 = im.reshape_to(vb, {batch, k, db.back()}, im.fresh(name + ".b3"));
  const Value p = im.apply(OpKind::matmul, {a3, b3}, {}, im.fresh(name + ".bmm"));
  im.finish(im.reshape_to(p, out, im.fresh(name + ".unbatch")), out);
}

void gemm_op(Importer& im) {
  const Sym a = im.in(0), b = im.in(1);
  if (a.dims.size() != 2 || b.dims.size() != 2)
    im.refuse(fmt::format("Gemm of {} and {}: both operands must be matrices", dims_str(a.dims), dims_str(b.dims)));
  const bool ta = im.attr_i("transA", 0) != 0;
  bool tb = im.attr_i("transB", 0) != 0;
  const float alpha = im.attr_f("alpha", 1.0f), beta = im.attr_f("beta", 1.0f);
  const int64_t m = ta ? a.dims[1] : a.dims[0], k = ta ? a.dims[0] : a.dims[1];
  const int64_t kb = tb ? b.dims[1] : b.dims[0], n = tb ? b.dims[0] : b.dims[1];
  if (k != kb) im.refuse(fmt::format("Gemm inner dims differ: {} vs {}", k, kb));
  const std::string& name = im.out_name();
  const std::string& b_name = im.node_->inputs[1];
  Value vb;
  if (b.constant && tb && im.consumers_[b_name] == 1) {
    // nn.Linear's weight [out, in] used once: stored as [in, out], the IR's Linear layout.
    Sym t;
    t.constant = true;
    t.c = fold_transpose(b.c, {1, 0});
    t.dims = t.c.dims;
    vb = im.value_of(t, b_name);
    tb = false;
    im.notes_.push_back(
        fmt::format("Gemm {}: weight {} stored transposed, as [{}, {}]", quote_name(name), quote_name(b_name), k, n));
  } else {
    vb = im.value(1);
  }
  Attrs at;
  at.trans_a = ta;
  at.trans_b = tb;
  Value y = im.apply(OpKind::matmul, {im.value(0), vb}, at, im.fresh(name + ".matmul"));
  if (alpha != 1.0f) {
    Attrs s;
    s.alpha = alpha;
    y = im.apply(OpKind::scale, {y}, s, im.fresh(name + ".alpha"));
  }
  const Dims out{m, n};
  if (im.has_input(2) && beta != 0.0f) {
    Sym c = im.in(2);
    const std::string c_name = im.node_->inputs[2];
    if (beta != 1.0f) {
      if (!c.constant) im.refuse("Gemm with beta != 1 and a computed C; the IR cannot scale it here");
      for (float& x : c.c.f) x *= beta;
    }
    broadcast_dims(c.dims, out, im.where());
    const Value vc = im.value_of(c, c_name);
    Dims sig = c.dims;
    while (sig.size() > 1 && sig.front() == 1) sig.erase(sig.begin());
    if (sig == Dims{n}) {
      y = im.apply(OpKind::bias_add, {y, im.reshape_to(vc, {n}, im.fresh(name + ".bias"))}, {}, im.fresh(name + ".add"));
    } else {
      y = im.apply(OpKind::add, {y, im.expand_to(vc, c.dims, out, name + ".c")}, {}, im.fresh(name + ".add"));
    }
  }
  im.finish(y, out);
}

// Reshape, Flatten, Squeeze, Unsqueeze: a view with new dims.
void view_as(Importer& im, const Dims& target) {
  const Sym x = im.in(0);
  const int64_t from = numel(x.dims, im.where()), to = numel(target, im.where());
  if (from != to)
    im.refuse(fmt::format("reshapes {} ({} elements) to {} ({} elements)", dims_str(x.dims), from, dims_str(target),
                          to));
  if (x.constant) {
    Tensor t = x.c;
    t.dims = target;
    return im.set_const(t);
  }
  im.finish(im.reshape_to(x.v, target, im.fresh(im.out_name() + ".reshape")), target);
}

void reshape_op(Importer& im) {
  const Dims& in = im.in(0).dims;
  const std::vector<int64_t> spec = im.ints_input(1, "target shape");
  const bool allowzero = im.attr_i("allowzero", 0) != 0;
  Dims target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) im.refuse(fmt::format("target {} copies dim {} (0), but the input {} has no such dim",
                                                dims_str(spec), i, dims_str(in)));
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) im.refuse(fmt::format("target {} has two -1 dims", dims_str(spec)));
      infer = static_cast<int>(i);
    } else if (d < 1) {
      im.refuse(fmt::format("target {} has dim {} = {}", dims_str(spec), i, d));
    } else {
      known = checked_mul(known, d, im.where());
    }
    target.push_back(d);
  }
  if (infer >= 0) {
    const int64_t total = numel(in, im.where());
    if (total % known != 0) im.refuse(fmt::format("cannot reshape {} to {}", dims_str(in), dims_str(spec)));
    target[static_cast<size_t>(infer)] = total / known;
  }
  view_as(im, target);
}

std::vector<int64_t> axes_of(Importer& im, size_t input, const char* attr) {
  return im.has_input(input) ? im.ints_input(input, "axes") : im.attr_ints(attr);
}

void squeeze_op(Importer& im) {
  const Dims& in = im.in(0).dims;
  std::vector<int64_t> axes = axes_of(im, 1, "axes");
  std::vector<bool> drop(in.size(), false);
  for (size_t i = 0; i < in.size(); ++i) drop[i] = axes.empty() && in[i] == 1;
  for (int64_t a : axes) {
    const int64_t ax = normalize_axis(a, in.size(), im.where());
    if (in[static_cast<size_t>(ax)] != 1) im.refuse(fmt::format("squeezes axis {} of {}, which is not 1", a, dims_str(in)));
    drop[static_cast<size_t>(ax)] = true;
  }
  Dims target;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) target.push_back(in[i]);
  view_as(im, target);
}

void unsqueeze_op(Importer& im) {
  const Dims& in = im.in(0).dims;
  const std::vector<int64_t> axes = axes_of(im, 1, "axes");
  const size_t rank = in.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    const int64_t ax = normalize_axis(a, rank, im.where());
    if (inserted[static_cast<size_t>(ax)]) im.refuse(fmt::format("axis {} is given twice", a));
    inserted[static_cast<size_t>(ax)] = true;
  }
  Dims target;
  for (size_t i = 0, j = 0; i < rank; ++i) target.push_back(inserted[i] ? 1 : in[j++]);
  view_as(im, target);
}

void flatten_op(Importer& im) {
  const Dims& in = im.in(0).dims;
  int64_t axis = im.attr_i("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size())) im.refuse(fmt::format("axis {} is out of range", axis));
  const auto mid = in.begin() + axis;
  view_as(im, {numel(Dims(in.begin(), mid), im.where()), numel(Dims(mid, in.end()), im.where())});
}

void transpose_op(Importer& im) {
  const Sym x = im.in(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> perm = im.attr_ints("perm");
  if (!im.has_attr("perm"))
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  std::vector<bool> seen(r, false);
  if (perm.size() != r) im.refuse(fmt::format("perm {} does not list the {} axes of {}", dims_str(perm), r, dims_str(x.dims)));
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
      im.refuse(fmt::format("perm {} is not a permutation of the axes", dims_str(perm)));
    seen[static_cast<size_t>(p)] = true;
  }
  if (x.constant) return im.set_const(fold_transpose(x.c, perm));
  Dims out;
  for (int64_t p : perm) out.push_back(x.dims[static_cast<size_t>(p)]);
  bool identity = true;
  for (size_t i = 0; i < r; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return im.alias(x);
  if (r > static_cast<size_t>(kMaxRank)) ir_shape(x.dims, im.where());
  Attrs at;
  for (size_t i = 0; i < r; ++i) at.perm[i] = static_cast<int>(perm[i]);
  im.finish(im.apply(OpKind::transpose, {x.v}, at, im.fresh(im.out_name() + ".transpose")), out);
}

void softmax_op(Importer& im) {
  const Sym x = im.in(0);
  const int64_t axis = normalize_axis(im.attr_i("axis", im.opset_ >= 13 ? -1 : 1), x.dims.size(), im.where());
  if (axis != static_cast<int64_t>(x.dims.size()) - 1)
    im.refuse(fmt::format("softmax over axis {} of {}: the IR's softmax is over the last axis only (transpose "
                          "first in the model)", axis, dims_str(x.dims)));
  Attrs at;
  at.axis = -1;
  im.finish(im.apply(OpKind::softmax, {im.value(0)}, at, im.fresh(im.out_name() + ".softmax")), x.dims);
}

void layernorm_op(Importer& im) {
  const Sym x = im.in(0);
  if (x.dims.empty()) im.refuse("normalizes a scalar");
  const int64_t axis = normalize_axis(im.attr_i("axis", -1), x.dims.size(), im.where());
  if (axis != static_cast<int64_t>(x.dims.size()) - 1)
    im.refuse(fmt::format("normalizes from axis {} of {}: the IR's layernorm is over the last axis only", axis,
                          dims_str(x.dims)));
  const int64_t n = x.dims.back();
  const std::string& name = im.out_name();
  auto vec = [&](size_t i, float dflt, const char* what) {
    if (!im.has_input(i)) return im.fill_vec(n, dflt, name + "." + what);
    if (numel(im.in(i).dims, im.where()) != n)
      im.refuse(fmt::format("{} {} does not match the normalized dim {}", what, dims_str(im.in(i).dims), n));
    return im.reshape_to(im.value(i), {n}, im.fresh(name + "." + what));
  };
  const Value gamma = vec(1, 1.0f, "gamma"), beta = vec(2, 0.0f, "beta");
  Attrs at;
  at.eps = im.attr_f("epsilon", 1e-5f);
  if (!(at.eps > 0.0f)) im.refuse(fmt::format("epsilon {} must be > 0", at.eps));
  im.finish(im.apply(OpKind::layernorm, {im.value(0), gamma, beta}, at, im.fresh(name + ".layernorm")), x.dims);
}

void reduce_op(Importer& im, OpKind op) {
  const Sym x = im.in(0);
  std::vector<int64_t> axes = axes_of(im, 1, "axes");
  const bool keep = im.attr_i("keepdims", 1) != 0;
  if (axes.empty()) {
    if (im.attr_i("noop_with_empty_axes", 0) != 0) return im.alias(x);
    for (size_t i = 0; i < x.dims.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) a = normalize_axis(a, x.dims.size(), im.where());
  std::sort(axes.begin(), axes.end(), std::greater<int64_t>());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Value cur = im.value(0);
  Dims dims = x.dims, kept = x.dims;
  for (int64_t a : axes) {
    Attrs at;
    at.axis = static_cast<int>(a);
    cur = im.apply(op, {cur}, at, im.fresh(im.out_name() + ".reduce"));
    dims.erase(dims.begin() + a);
    kept[static_cast<size_t>(a)] = 1;
  }
  if (keep) return im.finish(im.reshape_to(cur, kept, im.fresh(im.out_name() + ".keepdims")), kept);
  im.finish(cur, dims);
}

void expand_op(Importer& im) {
  const Sym x = im.in(0);
  const Dims out = broadcast_dims(x.dims, im.ints_input(1, "shape"), im.where());
  if (x.constant) im.refuse("expands a constant; the import folds only small constant arithmetic");
  im.finish(im.expand_to(x.v, x.dims, out, im.out_name()), out);
}

}  // namespace

void add_tensor_handlers(std::map<std::string, Handler>& h) {
  h["MatMul"] = matmul_op;
  h["Gemm"] = gemm_op;
  h["Reshape"] = reshape_op;
  h["Flatten"] = flatten_op;
  h["Squeeze"] = squeeze_op;
  h["Unsqueeze"] = unsqueeze_op;
  h["Transpose"] = transpose_op;
  h["Softmax"] = softmax_op;
  h["LayerNormalization"] = layernorm_op;
  h["ReduceSum"] = [](Importer& im) { reduce_op(im, OpKind::reduce_sum); };
  h["ReduceMean"] = [](Importer& im) { reduce_op(im, OpKind::reduce_mean); };
  h["Expand"] = expand_op;
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> h = [] {
    std::map<std::string, Handler> m;
    add_elementwise_handlers(m);
    add_tensor_handlers(m);
    add_constant_handlers(m);
    add_cnn_handlers(m);
    add_slice_handlers(m);
    add_mask_handlers(m);
    add_language_model_handlers(m);
    return m;
  }();
  return h;
}

}  // namespace tg::onnx
