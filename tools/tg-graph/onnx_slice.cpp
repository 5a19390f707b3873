// Slice and Split: pieces of a tensor along its axes, each an IR slice (x[.., start : start +
// size, ..] along one axis) per sliced axis; pieces of a constant are folded. Transformer
// exports split a fused q|k|v projection this way (Hugging Face GPT-2's c_attn).
#include <fmt/format.h>

#include <algorithm>

#include "graph/errors.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

// The element range [start, start + size) of every axis, as an IR value or a folded constant.
struct Piece {
  std::vector<int64_t> start, size;
};

Tensor fold_piece(const Tensor& t, const Piece& p) {
  Tensor out;
  out.type = t.type;
  out.type_name = t.type_name;
  out.dtype = t.dtype;
  out.dims = p.size;
  const size_t r = t.dims.size();
  std::vector<int64_t> stride(r, 1);
  for (size_t a = r; a-- > 1;) stride[a - 1] = stride[a] * t.dims[a];
  int64_t n = 1;
  for (int64_t s : p.size) n *= s;
  std::vector<int64_t> idx(r, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0;
    for (size_t a = 0; a < r; ++a) src += (p.start[a] + idx[a]) * stride[a];
    if (t.type == Tensor::Type::i64)
      out.i.push_back(t.i[static_cast<size_t>(src)]);
    else
      out.f.push_back(t.f[static_cast<size_t>(src)]);
    for (size_t a = r; a-- > 0;) {
      if (++idx[a] < p.size[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

void set_piece(Importer& im, const Sym& x, const Piece& p, size_t output) {
  if (p.size == x.dims) return im.alias(x, output);
  if (x.constant) {
    check_fold_size(p.size, im.fold_room(), im.where());
    return im.set_const(fold_piece(x.c, p), output);
  }
  Value v = x.v;
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (p.start[a] == 0 && p.size[a] == x.dims[a]) continue;
    Attrs at;
    at.axis = static_cast<int>(a);
    at.start = p.start[a];
    at.size = p.size[a];
    v = im.apply(OpKind::slice, {v}, at, im.fresh(im.out_name(output) + ".slice"));
  }
  im.set(v, p.size, output);
}

void slice_op(Importer& im) {
  const Sym x = im.in(0);
  const size_t r = x.dims.size();
  if (r == 0) im.refuse("slices a scalar");
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset_ < 10) {
    starts = im.attr_ints("starts");
    ends = im.attr_ints("ends");
    axes = im.attr_ints("axes");
  } else {
    starts = im.ints_input(1, "starts");
    ends = im.ints_input(2, "ends");
    if (im.has_input(3)) axes = im.ints_input(3, "axes");
    if (im.has_input(4)) steps = im.ints_input(4, "steps");
  }
  if (axes.empty())
    for (size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<int64_t>(a));
  if (starts.size() != ends.size() || axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
    im.refuse(fmt::format("has {} starts, {} ends, {} axes and {} steps; give one of each per sliced axis",
                          starts.size(), ends.size(), axes.size(), steps.size()));
  Piece p{std::vector<int64_t>(r, 0), x.dims};
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = static_cast<size_t>(normalize_axis(axes[k], r, im.where()));
    if (seen[a]) im.refuse(fmt::format("slices axis {} twice", a));
    seen[a] = true;
    if (!steps.empty() && steps[k] != 1)
      im.refuse(fmt::format("steps {} along axis {}: the IR slices with step 1 only", steps[k], a));
    const int64_t d = x.dims[a];
    // ONNX clamps: negative indices count from the end, then into [0, d].
    auto clamp = [d](int64_t v) { return std::clamp(v < 0 ? v + d : v, int64_t{0}, d); };
    const int64_t s = clamp(starts[k]), e = std::max(clamp(ends[k]), s);
    // An empty constant (the TorchScript exporter slices shapes to nothing) folds; the IR has no empty tensor.
    if (e == s && !x.constant)
      im.refuse(fmt::format("takes nothing along axis {} (start {}, end {} of {})", a, starts[k], ends[k], d));
    p.start[a] = s;
    p.size[a] = e - s;
  }
  set_piece(im, x, p, 0);
}

void split_op(Importer& im) {
  const Sym x = im.in(0);
  const size_t r = x.dims.size(), n = im.node_->outputs.size();
  if (r == 0) im.refuse("splits a scalar");
  const size_t axis = static_cast<size_t>(normalize_axis(im.attr_i("axis", 0), r, im.where()));
  const int64_t d = x.dims[axis];
  std::vector<int64_t> sizes;
  if (im.has_input(1))
    sizes = im.ints_input(1, "split");
  else if (im.has_attr("split"))
    sizes = im.attr_ints("split");
  if (sizes.empty()) {
    // Equal pieces, the last one smaller when d does not divide (opset 18's num_outputs rule).
    const int64_t k = static_cast<int64_t>(n), each = (d + k - 1) / k;
    if (const int64_t given = im.attr_i("num_outputs", k); given != k)
      im.refuse(fmt::format("num_outputs is {} but the node has {} outputs", given, k));
    for (int64_t i = 0; i < k; ++i) sizes.push_back(std::min(each, d - i * each));
  }
  if (sizes.size() != n)
    im.refuse(fmt::format("has {} outputs but {} split sizes; give one size per output", n, sizes.size()));
  int64_t at = 0;
  for (int64_t s : sizes) {
    if (s < 1) im.refuse(fmt::format("split sizes {} along axis {} of {}: each must be >= 1", dims_str(sizes), axis, d));
    at += s;
  }
  if (at != d)
    im.refuse(fmt::format("split sizes {} sum to {}, but axis {} of {} is {}", dims_str(sizes), at, axis,
                          dims_str(x.dims), d));
  at = 0;
  for (size_t o = 0; o < n; ++o) {
    Piece p{std::vector<int64_t>(r, 0), x.dims};
    p.start[axis] = at;
    p.size[axis] = sizes[o];
    at += sizes[o];
    set_piece(im, x, p, o);
  }
}

}  // namespace

void add_slice_handlers(std::map<std::string, Handler>& h) {
  h["Slice"] = slice_op;
  h["Split"] = split_op;
}

}  // namespace tg::onnx
