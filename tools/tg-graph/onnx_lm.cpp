// The importer's handlers for what exported language models add to the ops of
// onnx_ops.cpp: Gather of constant indices from a computed tensor (the q, k, v of
// nn.MultiheadAttention's packed projection, a token's position) as slices; the
// comparisons, logic and Where that build masks, folded when every operand is constant
// (the IR has no boolean tensors), and Expand of a constant.
#include <fmt/format.h>

#include <cmath>

#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

// data[..., indices, ...] along `axis` with constant indices: one slice per run of
// consecutive indices, joined by a concat; a scalar index drops the axis.
void gather_constant_indices(Importer& im) {
  const Dims& data = im.in(0).dims;
  if (data.empty()) im.refuse("gathers from a scalar; Gather needs data of rank >= 1");
  const int64_t axis = normalize_axis(im.attr_i("axis", 0), data.size(), im.where());
  const Tensor& idx = im.constant(1, "indices");
  if (idx.type != Tensor::Type::i64) im.refuse(fmt::format("its indices are {}, expected integers", idx.type_name));
  const int64_t extent = data[static_cast<size_t>(axis)];
  std::vector<int64_t> picks;
  for (int64_t i : idx.i) {
    const int64_t k = i < 0 ? i + extent : i;
    if (k < 0 || k >= extent)
      im.refuse(fmt::format("index {} is outside axis {} of {} (extent {})", i, axis, dims_str(data), extent));
    picks.push_back(k);
  }
  if (picks.empty()) im.refuse("gathers no index; the IR has no empty tensors");
  const std::string& name = im.out_name();
  const Value x = im.value(0);
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
  Value y = parts[0];
  if (parts.size() > 1) {
    Attrs at;
    at.axis = static_cast<int>(axis);
    y = im.apply(OpKind::concat, parts, at, im.fresh(name + ".concat"));
  }
  // The output's dims: data's with the axis replaced by the indices' dims.
  Dims out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  im.finish(im.reshape_to(y, out, im.fresh(name + ".gathered")), out);
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
      im.refuse(fmt::format("computes {} of a tensor known only at run time: the IR has no boolean tensors "
                            "(masks of constants fold at import)", op));
    };
  }
}

}  // namespace tg::onnx
