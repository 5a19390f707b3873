// The importer's handlers for what exported language models add to the ops of
// onnx_ops.cpp: Gather of constant indices from a computed tensor (the q, k, v of
// nn.MultiheadAttention's packed projection, a token's position), and Split (GPT-2's
// packed q, k, v), as slices.
#include <fmt/format.h>

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

// Split into chunks along `axis`: the sizes given (input 1, or the attribute before opset
// 13), else equal chunks, the last one smaller when the extent does not divide (opset 18).
void split_op(Importer& im) {
  const Sym x = im.in(0);
  if (x.dims.empty()) im.refuse("splits a scalar; Split needs an input of rank >= 1");
  const int64_t axis = normalize_axis(im.attr_i("axis", 0), x.dims.size(), im.where());
  const int64_t extent = x.dims[static_cast<size_t>(axis)];
  const int64_t outputs = static_cast<int64_t>(im.node_->outputs.size());
  std::vector<int64_t> sizes = im.has_input(1) ? im.ints_input(1, "split sizes") : im.attr_ints("split");
  if (sizes.empty()) {
    const int64_t n = im.attr_i("num_outputs", outputs);
    if (n != outputs) im.refuse(fmt::format("num_outputs is {} but the node has {} outputs", n, outputs));
    const int64_t chunk = (extent + n - 1) / n;
    for (int64_t i = 0, left = extent; i < n; ++i, left -= chunk) sizes.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs)
    im.refuse(fmt::format("gives {} split sizes for {} outputs", sizes.size(), outputs));
  int64_t start = 0;
  for (int64_t s : sizes) {
    if (s < 1) im.refuse(fmt::format("split sizes {} hold {}; the IR has no empty tensors", dims_str(sizes), s));
    start += s;
  }
  if (start != extent)
    im.refuse(fmt::format("split sizes {} sum to {}, but axis {} of {} is {}", dims_str(sizes), start, axis,
                          dims_str(x.dims), extent));
  if (x.constant) im.refuse("splits a constant; the import folds only small constant arithmetic");
  const Value v = im.value(0);
  start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Dims dims = x.dims;
    dims[static_cast<size_t>(axis)] = sizes[i];
    Attrs at;
    at.axis = static_cast<int>(axis);
    at.start = start;
    at.size = sizes[i];
    start += sizes[i];
    if (im.out_name(i).empty()) continue;  // an omitted output
    if (sizes.size() == 1) return im.alias(x);
    const Value part = im.apply(OpKind::slice, {v}, at, im.fresh(im.out_name(i) + ".slice"));
    im.b_.rename_output(part, im.out_name(i));
    im.set(part, dims, i);
  }
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
  h["Split"] = split_op;
}

}  // namespace tg::onnx
