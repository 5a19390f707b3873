// The importer's handlers for what exported language models add to the ops of
// onnx_ops.cpp: Gather, GatherND and GatherElements of constant indices from a computed
// tensor (the q, k, v of nn.MultiheadAttention's packed projection, a token's position, the
// attention mask broadcast over heads and queries) as slices, of constants folded; the comparisons, logic and Where that build
// masks, folded when every operand is constant (computed bools: onnx_bool.cpp), and
// Expand of a constant.
#include <fmt/format.h>

#include <cmath>

#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

// x's entries `picks` along `axis` (of extent `extent`), in order: one slice per run of
// consecutive indices, joined by a concat; x itself when the picks are every index in order.
Value take_along(Importer& im, Value x, int64_t axis, int64_t extent, const std::vector<int64_t>& picks,
                 const std::string& name) {
  if (picks.empty()) im.refuse("gathers no index; the IR has no empty tensors");
  std::vector<Value> parts;
  for (size_t p = 0; p < picks.size();) {
    size_t q = p + 1;
    while (q < picks.size() && picks[q] == picks[q - 1] + 1) ++q;
    Attrs at;
    at.axis = static_cast<int>(axis);
    at.start = picks[p];
    at.size = static_cast<int64_t>(q - p);
    parts.push_back(at.size == extent ? x : im.apply(OpKind::slice, {x}, at, im.fresh(name + ".slice")));
    p = q;
  }
  if (parts.size() == 1) return parts[0];
  Attrs at;
  at.axis = static_cast<int>(axis);
  return im.apply(OpKind::concat, parts, at, im.fresh(name + ".concat"));
}

// An index of an axis of extent `extent`, negative ones counted from the end; refuses one outside.
int64_t index_in(Importer& im, int64_t i, int64_t extent, const std::string& what) {
  const int64_t k = i < 0 ? i + extent : i;
  if (k < 0 || k >= extent) im.refuse(fmt::format("index {} is outside {} (extent {})", i, what, extent));
  return k;
}

const Tensor& integer_indices(Importer& im) {
  const Tensor& idx = im.constant(1, "indices");
  if (idx.type != Tensor::Type::i64) im.refuse(fmt::format("its indices are {}, expected integers", idx.type_name));
  return idx;
}

// data[..., indices, ...] along `axis` with constant indices; a scalar index drops the axis.
void gather_constant_indices(Importer& im) {
  const Dims& data = im.in(0).dims;
  if (data.empty()) im.refuse("gathers from a scalar; Gather needs data of rank >= 1");
  const int64_t axis = normalize_axis(im.attr_i("axis", 0), data.size(), im.where());
  const Tensor& idx = integer_indices(im);
  const int64_t extent = data[static_cast<size_t>(axis)];
  std::vector<int64_t> picks;
  for (int64_t i : idx.i) picks.push_back(index_in(im, i, extent, fmt::format("axis {} of {}", axis, dims_str(data))));
  const std::string& name = im.out_name();
  const Value y = take_along(im, im.value(0), axis, extent, picks, name);
  // The output's dims: data's with the axis replaced by the indices' dims.
  Dims out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  im.finish(im.reshape_to(y, out, im.fresh(name + ".gathered")), out);
}

// GatherND with constant indices [..., k] (PyTorch's export of advanced indexing, the
// attention mask's mask[:, None, None, :]): data seen as [rows, rest], each index tuple
// picking one row, taken as Gather's are; batch_dims b leading dims shared by data and
// indices, each batch picking from its own rows.
void gather_nd_constant_indices(Importer& im) {
  const Dims& data = im.in(0).dims;
  const Tensor& idx = integer_indices(im);
  const int64_t b = im.attr_i("batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.dims.size());
  if (q < 1 || b < 0 || b >= std::min(r, q))
    im.refuse(fmt::format("batch_dims {} with data {} and indices {}; ONNX needs 0 <= batch_dims < both ranks", b,
                          dims_str(data), dims_str(idx.dims)));
  const int64_t k = idx.dims.back();
  if (k < 1 || b + k > r)
    im.refuse(fmt::format("its index tuples have {} entries for data {} past batch_dims {}; ONNX needs 1 to {}", k,
                          dims_str(data), b, r - b));
  for (int64_t d = 0; d < b; ++d)
    if (idx.dims[static_cast<size_t>(d)] != data[static_cast<size_t>(d)])
      im.refuse(fmt::format("indices {} and data {} differ in batch dim {}", dims_str(idx.dims), dims_str(data), d));
  const auto lead = data.begin() + static_cast<std::ptrdiff_t>(b + k);
  const int64_t rows = numel(Dims(data.begin(), lead), im.where());
  const int64_t batches = numel(Dims(data.begin(), data.begin() + b), im.where());
  const int64_t per_batch = rows / batches;
  const int64_t tuples = static_cast<int64_t>(idx.i.size()) / k;
  std::vector<int64_t> picks;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t row = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t extent = data[static_cast<size_t>(b + j)];
      row = row * extent + index_in(im, idx.i[static_cast<size_t>(t * k + j)], extent,
                                    fmt::format("dim {} of {}", b + j, dims_str(data)));
    }
    picks.push_back(t / (tuples / batches) * per_batch + row);
  }
  Dims flat{rows};
  flat.push_back(numel(Dims(lead, data.end()), im.where()));
  const std::string& name = im.out_name();
  const Value rows_v = im.reshape_to(im.value(0), flat, im.fresh(name + ".rows"));
  const Value y = take_along(im, rows_v, 0, rows, picks, name);
  Dims out(idx.dims.begin(), idx.dims.end() - 1);
  out.insert(out.end(), lead, data.end());
  im.finish(im.reshape_to(y, out, im.fresh(name + ".gathered")), out);
}

// GatherElements (PyTorch's torch.gather, BERT's token type ids as the TorchScript exporter
// writes them) with constant indices: out[..., j, ...] = data[..., indices[..., j, ...], ...]
// along `axis`, the flat index of data each output element reads.
std::vector<int64_t> gather_elements_picks(Importer& im, const Dims& data, const Tensor& idx, int64_t axis) {
  if (idx.dims.size() != data.size())
    im.refuse(fmt::format("indices {} and data {} differ in rank; ONNX needs the same rank", dims_str(idx.dims),
                          dims_str(data)));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx.dims[d] > data[d])
      im.refuse(fmt::format("indices {} reach past data {} in dim {}", dims_str(idx.dims), dims_str(data), d));
  std::vector<int64_t> picks;
  picks.reserve(idx.i.size());
  const int64_t extent = data[static_cast<size_t>(axis)];
  for (int64_t k = 0; k < static_cast<int64_t>(idx.i.size()); ++k) {
    int64_t rest = k, flat = 0, stride = 1;
    for (size_t d = data.size(); d-- > 0;) {
      int64_t at = rest % idx.dims[d];
      rest /= idx.dims[d];
      if (static_cast<int64_t>(d) == axis)
        at = index_in(im, idx.i[static_cast<size_t>(k)], extent, fmt::format("axis {} of {}", axis, dims_str(data)));
      flat += at * stride;
      stride *= data[d];
    }
    picks.push_back(flat);
  }
  return picks;
}

void gather_elements(Importer& im) {
  const Sym& x = im.in(0);
  if (x.dims.empty()) im.refuse("gathers from a scalar; GatherElements needs data of rank >= 1");
  const int64_t axis = normalize_axis(im.attr_i("axis", 0), x.dims.size(), im.where());
  const Tensor& idx = integer_indices(im);
  const std::vector<int64_t> picks = gather_elements_picks(im, x.dims, idx, axis);
  if (x.constant) {
    if (x.c.type == Tensor::Type::other || x.c.external)
      im.refuse(fmt::format("gathers from a constant of {}; only float and integer constants fold", x.c.type_name));
    check_fold_size(idx.dims, im.fold_room(), im.where());
    Tensor r = x.c;
    r.dims = idx.dims;
    r.f.clear();
    r.i.clear();
    for (int64_t p : picks) {
      if (x.c.type == Tensor::Type::f32) r.f.push_back(x.c.f[static_cast<size_t>(p)]);
      else r.i.push_back(x.c.i[static_cast<size_t>(p)]);
    }
    return im.set_const(r);
  }
  // The data seen as one column of elements, each output element a row of it.
  const std::string& name = im.out_name();
  const int64_t n = numel(x.dims, im.where());
  const Value column = im.reshape_to(im.value(0), {n, 1}, im.fresh(name + ".elements"));
  const Value y = take_along(im, column, 0, n, picks, name);
  im.finish(im.reshape_to(y, idx.dims, im.fresh(name + ".gathered")), idx.dims);
}

// The mask ops, by their ONNX name: booleans are int64 0 or 1, as the reader holds them.
const std::vector<std::string>& mask_ops() {
  static const std::vector<std::string> ops = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And",
                                               "Or",    "Xor",  "Not",         "IsNaN",   "Where"};
  return ops;
}

double element(const Tensor& t, int64_t k) {
  return t.type == Tensor::Type::f32 ? static_cast<double>(t.f[static_cast<size_t>(k)])
                                     : static_cast<double>(t.i[static_cast<size_t>(k)]);
}

bool mask_result(const std::string& op, double a, double b) {
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "Greater") return a > b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return a != 0 && b != 0;
  if (op == "Or") return a != 0 || b != 0;
  if (op == "Xor") return (a != 0) != (b != 0);
  if (op == "Not") return a == 0;
  return std::isnan(a);  // IsNaN
}

// op of constant operands, broadcast as numpy does: a boolean (int64 0/1) tensor, or
// Where's choice between its second and third operands.
void fold_mask_op(Importer& im, const std::string& op) {
  std::vector<const Tensor*> ins;
  Dims out;
  for (size_t i = 0; i < im.node_->inputs.size(); ++i) {
    const Tensor& t = im.constant(i, "operand");
    if (t.type == Tensor::Type::other || t.external)
      im.refuse(fmt::format("operand {} is {}; only float and integer constants fold", i, t.type_name));
    out = i == 0 ? t.dims : broadcast_dims(out, t.dims, im.where());
    ins.push_back(&t);
  }
  check_fold_size(out, im.fold_room(), im.where());
  const int64_t n = numel(out, im.where());
  Tensor r;
  r.dims = out;
  if (op == "Where") {
    const Tensor &a = *ins[1], &b = *ins[2];
    if (a.type != b.type) im.refuse(fmt::format("chooses between {} and {}; ONNX requires one type", a.type_name, b.type_name));
    r.type = a.type;
    r.type_name = a.type_name;
    r.dtype = a.dtype;
    for (int64_t k = 0; k < n; ++k) {
      const bool c = element(*ins[0], broadcast_index(k, out, ins[0]->dims)) != 0;
      const Tensor& from = c ? a : b;
      const int64_t j = broadcast_index(k, out, from.dims);
      if (r.type == Tensor::Type::f32) r.f.push_back(from.f[static_cast<size_t>(j)]);
      else r.i.push_back(from.i[static_cast<size_t>(j)]);
    }
    return im.set_const(r);
  }
  r = i64_tensor(out, {});
  r.type_name = "bool";
  for (int64_t k = 0; k < n; ++k) {
    const double a = element(*ins[0], broadcast_index(k, out, ins[0]->dims));
    const double b = ins.size() > 1 ? element(*ins[1], broadcast_index(k, out, ins[1]->dims)) : 0.0;
    r.i.push_back(mask_result(op, a, b) ? 1 : 0);
  }
  im.set_const(r);
}

// Expand of a constant (BERT's token type ids, a buffer expanded to the batch), folded.
void fold_expand(Importer& im) {
  const Tensor& x = im.in(0).c;
  if (x.type == Tensor::Type::other || x.external)
    im.refuse(fmt::format("expands a constant of {}; only float and integer constants fold", x.type_name));
  Tensor r = x;
  r.dims = broadcast_dims(x.dims, im.ints_input(1, "shape"), im.where());
  check_fold_size(r.dims, im.fold_room(), im.where());
  r.f.clear();
  r.i.clear();
  const int64_t n = numel(r.dims, im.where());
  for (int64_t k = 0; k < n; ++k) {
    const size_t j = static_cast<size_t>(broadcast_index(k, r.dims, x.dims));
    if (x.type == Tensor::Type::f32) r.f.push_back(x.f[j]);
    else r.i.push_back(x.i[j]);
  }
  im.set_const(r);
}

}  // namespace

void add_language_model_handlers(std::map<std::string, Handler>& h) {
  // The table lookup (computed indices) and the folding of constants stay with the
  // handler registered before.
  const Handler lookup_or_fold = h.at("Gather");
  h["Gather"] = [lookup_or_fold](Importer& im) {
    if (!im.in(0).constant && im.in(1).constant) return gather_constant_indices(im);
    lookup_or_fold(im);
  };
  h["GatherND"] = [](Importer& im) {
    if (im.in(0).constant) im.refuse("gathers from a constant; twograph maps GatherND of a computed tensor with constant indices");
    gather_nd_constant_indices(im);
  };
  h["GatherElements"] = gather_elements;
  const Handler expand_computed = h.at("Expand");
  h["Expand"] = [expand_computed](Importer& im) {
    if (im.in(0).constant) return fold_expand(im);
    expand_computed(im);
  };
  // A handler of computed operands registered before (the IR's where, when it has one) keeps them.
  for (const std::string& op : mask_ops()) {
    const auto it = h.find(op);
    const Handler computed = it == h.end() ? Handler{} : it->second;
    h[op] = [op, computed](Importer& im) {
      bool constant = true;
      for (size_t i = 0; i < im.node_->inputs.size(); ++i) constant = constant && im.in(i).constant;
      if (constant) return fold_mask_op(im, op);
      if (computed) return computed(im);
      im.refuse(fmt::format("computes {} of a tensor known only at run time: the IR has no comparison or NaN "
                            "test (masks of constants fold at import; And, Or, Xor, Not and Where take computed "
                            "masks)", op));
    };
  }
}

}  // namespace tg::onnx
