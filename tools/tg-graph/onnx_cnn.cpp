// The importer's convolutional ops: Conv and ConvTranspose (2-D, and 1-D as 2-D over a
// height of 1), MaxPool, AveragePool, GlobalAveragePool, BatchNormalization in its inference
// form, LRN, Clip (MobileNet's ReLU6), and Concat and Sum of computed tensors. NCHW throughout, as ONNX and the IR both lay them out.
#include <fmt/format.h>

#include <climits>
#include <limits>

#include "graph/conv.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

int small_int(Importer& im, int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) im.refuse(fmt::format("{} = {} is out of range (0 to {})", what, v, INT_MAX));
  return static_cast<int>(v);
}

// A per-axis attribute (strides, dilations, kernel_shape) of `axes` entries; absent: `dflt`.
std::vector<int64_t> per_axis(Importer& im, const char* name, size_t axes, int64_t dflt) {
  std::vector<int64_t> v = im.attr_ints(name);
  if (!im.has_attr(name)) v.assign(axes, dflt);
  if (v.size() != axes)
    im.refuse(fmt::format("attribute {} has {} entries; the input has {} spatial axes, so give {}", name, v.size(),
                          axes, axes));
  return v;
}

// The pads attribute: begins, then ends; absent: zeros.
std::vector<int64_t> pads_attr(Importer& im, size_t axes) {
  std::vector<int64_t> pads = im.attr_ints("pads");
  if (!im.has_attr("pads")) pads.assign(2 * axes, 0);
  if (pads.size() != 2 * axes)
    im.refuse(fmt::format("attribute pads has {} entries; the input has {} spatial axes, so give {} (begins, then "
                          "ends)", pads.size(), axes, 2 * axes));
  return pads;
}

// ONNX's per-axis strides, dilations and pads (begins, then ends) over `axes` spatial axes
// as the IR's ConvAttr over (H, W): a 1-D op gets H = 1, a window of 1 there.
ConvAttr ir_window(Importer& im, size_t axes, const std::vector<int64_t>& stride, const std::vector<int64_t>& dil,
                   const std::vector<int64_t>& pads) {
  ConvAttr a;
  const size_t off = 2 - axes;  // 1-D: the H axis is the IR's, of extent 1
  for (size_t d = 0; d < axes; ++d) {
    a.stride[d + off] = small_int(im, stride[d], "a stride");
    a.dilation[d + off] = small_int(im, dil[d], "a dilation");
    a.pads[d + off] = small_int(im, pads[d], "a pad");
    a.pads[d + off + 2] = small_int(im, pads[d + axes], "a pad");
  }
  return a;
}

// ONNX's window attributes over the spatial axes of `in` (NCHW, or NCL for a 1-D op) with
// window `win`, as the IR's ConvAttr.
ConvAttr window_attrs(Importer& im, const Dims& in, const std::vector<int64_t>& win, bool dilations) {
  const size_t axes = in.size() - 2;
  const std::vector<int64_t> stride = per_axis(im, "strides", axes, 1);
  const std::vector<int64_t> dil = dilations ? per_axis(im, "dilations", axes, 1) : std::vector<int64_t>(axes, 1);
  std::vector<int64_t> pads = pads_attr(im, axes);
  const std::string auto_pad = im.attr_s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    pads.assign(2 * axes, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The output extent is ceil(in / stride); the padding that takes, split with the odd
    // one at the end (SAME_UPPER) or at the beginning (SAME_LOWER).
    for (size_t d = 0; d < axes; ++d) {
      const int64_t len = in[d + 2], out = (len + stride[d] - 1) / stride[d];
      const int64_t span = dil[d] * (win[d] - 1) + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride[d] + span - len);
      const int64_t small = total / 2, big = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : big;
      pads[d + axes] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    im.refuse(fmt::format("has auto_pad \"{}\"; ONNX defines NOTSET, SAME_UPPER, SAME_LOWER and VALID", auto_pad));
  }
  return ir_window(im, axes, stride, dil, pads);
}

// The input as NCHW: a 1-D op's [N, C, L] seen as [N, C, 1, L]. Refuses other ranks.
Value as_nchw(Importer& im, const Dims& d, const std::string& what) {
  if (d.size() != 3 && d.size() != 4)
    im.refuse(fmt::format("{} is {} of rank {}; twograph convolves and pools NCHW [N, C, H, W] (or 1-D [N, C, L]) "
                          "tensors only", what, dims_str(d), d.size()));
  const Value v = im.value(0);
  if (d.size() == 4) return v;
  return im.reshape_to(v, {d[0], d[1], 1, d[2]}, im.fresh(im.out_name() + ".nchw"));
}

// The IR result y [N, K, P, Q] as the ONNX output: [N, K, Q] for a 1-D op.
void finish_spatial(Importer& im, Value y, size_t rank) {
  const Shape& s = y.shape;
  if (rank == 4) return im.finish(y, {s[0], s[1], s[2], s[3]});
  const Dims out{s[0], s[1], s[3]};
  im.finish(im.reshape_to(y, out, im.fresh(im.out_name() + ".ncl")), out);
}

// Input 1, a (transposed) convolution's weight, as the IR's 4-D one: a 1-D op's [A, B, S] seen as
// [A, B, 1, S].
Value weight_nchw(Importer& im, Sym w, size_t rank) {
  if (rank != 3) return im.value(1);
  const Dims w4{w.dims[0], w.dims[1], 1, w.dims[2]};
  if (!w.constant) return im.reshape_to(im.value(1), w4, im.fresh(im.out_name() + ".w4"));
  w.c.dims = w4;
  w.dims = w4;
  return im.value_of(w, im.node_->inputs[1]);
}

// y [N, K, P, Q] plus input 2, the optional bias B [K], per channel.
Value with_channel_bias(Importer& im, Value y) {
  if (!im.has_input(2)) return y;
  const std::string& name = im.out_name();
  const int64_t k = y.shape[1];
  if (numel(im.in(2).dims, im.where()) != k)
    im.refuse(fmt::format("bias B is {}; it must be [{}], one per output channel", dims_str(im.in(2).dims), k));
  // [K] -> [K, P] -> [K, P, Q] -> [N, K, P, Q], added: the IR has no bias op over dim 1.
  Value bias = im.reshape_to(im.value(2), {k}, im.fresh(name + ".bias"));
  const int64_t sizes[3] = {y.shape[2], y.shape[3], y.shape[0]};
  const int axes[3] = {1, 2, 0};
  for (int i = 0; i < 3; ++i) {
    Attrs b;
    b.axis = axes[i];
    b.size = sizes[i];
    bias = im.apply(OpKind::broadcast, {bias}, b, im.fresh(name + ".bias.broadcast"));
  }
  return im.apply(OpKind::add, {y, bias}, {}, im.fresh(name + ".add"));
}

void conv_op(Importer& im) {
  const Dims xd = im.in(0).dims;
  Sym w = im.in(1);
  if (w.dims.size() != xd.size())
    im.refuse(fmt::format("weight {} and input {} differ in rank; a Conv weight is [K, C/group, kernel...]",
                          dims_str(w.dims), dims_str(xd)));
  const Value x = as_nchw(im, xd, "input X");
  const std::vector<int64_t> win(w.dims.begin() + 2, w.dims.end());
  if (im.has_attr("kernel_shape") && im.attr_ints("kernel_shape") != win)
    im.refuse(fmt::format("kernel_shape {} differs from the weight's spatial dims {}", dims_str(im.attr_ints("kernel_shape")),
                          dims_str(win)));
  ConvAttr a = window_attrs(im, xd, win, true);
  a.groups = small_int(im, im.attr_i("group", 1), "group");
  Attrs at;
  at.conv = a;
  const Value y = im.apply(OpKind::conv2d, {x, weight_nchw(im, w, xd.size())}, at, im.fresh(im.out_name() + ".conv"));
  finish_spatial(im, with_channel_bias(im, y), xd.size());
}

void pool_op(Importer& im, OpKind op) {
  const Dims xd = im.in(0).dims;
  const Value x = as_nchw(im, xd, "input X");
  const std::vector<int64_t> win = im.attr_ints("kernel_shape");
  if (win.size() != xd.size() - 2)
    im.refuse(fmt::format("kernel_shape {} does not give the window of the input's {} spatial axes",
                          dims_str(win), xd.size() - 2));
  const std::vector<int64_t> dil = per_axis(im, "dilations", xd.size() - 2, 1);
  for (int64_t d : dil)
    if (d != 1) im.refuse(fmt::format("has dilations {}; twograph's pools have dilation 1 only", dims_str(dil)));
  ConvAttr a = window_attrs(im, xd, win, false);
  a.kernel = {1, 1};
  for (size_t d = 0; d < win.size(); ++d) a.kernel[d + 2 - win.size()] = small_int(im, win[d], "a kernel extent");
  a.ceil_mode = im.attr_i("ceil_mode", 0) != 0;
  if (op == OpKind::avg_pool2d && im.attr_i("count_include_pad", 0) != 0)
    for (int p : a.pads)
      if (p != 0)
        im.refuse("has count_include_pad = 1 with padding; twograph's avg_pool2d divides by the input elements "
                  "of each window, padding not counted: export with count_include_pad=False (PyTorch's "
                  "AvgPool2d(..., count_include_pad=False)) or without padding");
  Attrs at;
  at.conv = a;
  finish_spatial(im, im.apply(op, {x}, at, im.fresh(im.out_name() + ".pool")), xd.size());
}

void global_avg_pool_op(Importer& im) {
  const Dims xd = im.in(0).dims;
  if (xd.size() != 4)
    im.refuse(fmt::format("input X is {}; twograph's GlobalAveragePool takes NCHW [N, C, H, W]", dims_str(xd)));
  Value m = im.value(0);
  for (int axis : {3, 2}) {
    Attrs at;
    at.axis = axis;
    m = im.apply(OpKind::reduce_mean, {m}, at, im.fresh(im.out_name() + ".mean"));
  }
  const Dims out{xd[0], xd[1], 1, 1};
  im.finish(im.reshape_to(m, out, im.fresh(im.out_name() + ".keepdims")), out);
}

void batch_norm_op(Importer& im) {
  if (im.attr_i("training_mode", 0) != 0)
    im.refuse("is a batch normalization in training mode (batch statistics); export the model after model.eval()");
  if (im.attr_i("spatial", 1) != 1)
    im.refuse("has spatial = 0 (statistics per element, not per channel); twograph normalizes per channel");
  const Dims xd = im.in(0).dims;
  if (xd.size() < 2) im.refuse(fmt::format("input X is {}; it must be [N, C, ...]", dims_str(xd)));
  const int64_t c = xd[1];
  const std::string& name = im.out_name();
  const char* what[4] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i)
    if (numel(im.in(i).dims, im.where()) != c)
      im.refuse(fmt::format("{} is {}; it must be [{}], one per channel of X {}", what[i - 1], dims_str(im.in(i).dims),
                            c, dims_str(xd)));
  const Value gamma = im.reshape_to(im.value(1), {c}, im.fresh(name + ".scale"));
  const Value beta = im.reshape_to(im.value(2), {c}, im.fresh(name + ".bias"));
  // The running statistics as the IR's one [2, C] operand: folded to one parameter when
  // both are constants (an exported model's buffers), else joined at run time.
  Value stats;
  if (im.in(3).constant && im.in(4).constant) {
    Sym s;
    s.constant = true;
    Tensor mean = im.in(3).c, var = im.in(4).c;
    mean.dims = var.dims = {1, c};
    s.c = fold_concat({&mean, &var}, 0, im.fold_room(), im.where());
    s.dims = s.c.dims;
    stats = im.value_of(s, im.fresh(name + ".stats"));
  } else {
    Attrs at;
    at.axis = 0;
    stats = im.apply(OpKind::concat,
                     {im.reshape_to(im.value(3), {1, c}, im.fresh(name + ".mean")),
                      im.reshape_to(im.value(4), {1, c}, im.fresh(name + ".var"))},
                     at, im.fresh(name + ".stats"));
  }
  Attrs at;
  at.eps = im.attr_f("epsilon", 1e-5f);
  if (!(at.eps > 0.0f)) im.refuse(fmt::format("epsilon {} must be > 0", at.eps));
  im.finish(im.apply(OpKind::batch_norm_inference, {im.value(0), gamma, beta, stats}, at,
                     im.fresh(name + ".batch_norm")),
            xd);
}

void concat_op(Importer& im) {
  const size_t n = im.node_->inputs.size();
  bool all_constant = true;
  for (size_t i = 0; i < n; ++i) all_constant = all_constant && im.in(i).constant;
  if (all_constant) {
    std::vector<const Tensor*> parts;
    for (size_t i = 0; i < n; ++i) parts.push_back(&im.in(i).c);
    return im.set_const(fold_concat(parts, im.attr_i("axis", 0), im.fold_room(), im.where()));
  }
  const Dims first = im.in(0).dims;
  const int64_t axis = normalize_axis(im.attr_i("axis", 0), first.size(), im.where());
  if (n == 1) return im.alias(im.in(0));
  std::vector<Value> xs;
  Dims out = first;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(im.value(i));
    out[static_cast<size_t>(axis)] += im.in(i).dims.size() == first.size() ? im.in(i).dims[static_cast<size_t>(axis)] : 0;
  }
  Attrs at;
  at.axis = static_cast<int>(axis);
  im.finish(im.apply(OpKind::concat, xs, at, im.fresh(im.out_name() + ".concat")), out);
}

// Sum of equal shapes: a chain of adds (ResNets written with Sum join their residuals so).
void sum_op(Importer& im) {
  const size_t n = im.node_->inputs.size();
  const Dims d = im.in(0).dims;
  for (size_t i = 1; i < n; ++i)
    if (im.in(i).dims != d)
      im.refuse(fmt::format("sums {} and {}; twograph's Sum takes inputs of one shape (use Add for broadcasting)",
                            dims_str(d), dims_str(im.in(i).dims)));
  if (n == 1) return im.alias(im.in(0));
  Value acc = im.value(0);
  for (size_t i = 1; i < n; ++i) acc = im.apply(OpKind::add, {acc, im.value(i)}, {}, im.fresh(im.out_name() + ".sum"));
  im.finish(acc, d);
}


// ConvTranspose: conv_transpose2d, a 1-D one over a height of 1. The pads come from `pads`,
// or, given output_shape or a SAME auto_pad (output = input x stride), from the output's
// extent as ONNX defines: total = stride (in - 1) + output_padding + dilation (k - 1) + 1 -
// out, its odd unit at the end for SAME_UPPER and at the beginning otherwise.
void conv_transpose_op(Importer& im) {
  const Dims xd = im.in(0).dims;
  const Sym w = im.in(1);
  if (w.dims.size() != xd.size())
    im.refuse(fmt::format("weight {} and input {} differ in rank; a ConvTranspose weight is [C, K/group, kernel...]",
                          dims_str(w.dims), dims_str(xd)));
  const Value x = as_nchw(im, xd, "input X");
  const size_t axes = xd.size() - 2;
  const std::vector<int64_t> win(w.dims.begin() + 2, w.dims.end());
  if (im.has_attr("kernel_shape") && im.attr_ints("kernel_shape") != win)
    im.refuse(fmt::format("kernel_shape {} differs from the weight's spatial dims {}",
                          dims_str(im.attr_ints("kernel_shape")), dims_str(win)));
  const std::vector<int64_t> stride = per_axis(im, "strides", axes, 1);
  const std::vector<int64_t> dil = per_axis(im, "dilations", axes, 1);
  const std::vector<int64_t> out_pad = per_axis(im, "output_padding", axes, 0);
  std::vector<int64_t> pads = pads_attr(im, axes);
  const std::string auto_pad = im.attr_s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    im.refuse(fmt::format("has auto_pad \"{}\"; ONNX defines NOTSET, SAME_UPPER, SAME_LOWER and VALID", auto_pad));
  std::vector<int64_t> out_shape = im.attr_ints("output_shape");
  if (out_shape.size() == axes + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);  // [N, K, ...] given
  if (im.has_attr("output_shape") && out_shape.size() != axes)
    im.refuse(fmt::format("output_shape {} does not give the output's {} spatial extents",
                          dims_str(im.attr_ints("output_shape")), axes));
  if (auto_pad == "VALID") pads.assign(2 * axes, 0);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (out_shape.empty() && same)
    for (size_t d = 0; d < axes; ++d) out_shape.push_back(xd[d + 2] * stride[d]);
  for (size_t d = 0; d < out_shape.size(); ++d) {
    const int64_t full = stride[d] * (xd[d + 2] - 1) + out_pad[d] + dil[d] * (win[d] - 1) + 1;
    const int64_t total = full - out_shape[d];
    if (total < 0)
      im.refuse(fmt::format("asks for an output extent {} along spatial axis {}, more than the {} the transposed "
                            "convolution makes; twograph cannot pad its output (raise output_padding instead)",
                            out_shape[d], d, full));
    const int64_t half = total / 2;
    pads[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    pads[d + axes] = total - pads[d];
  }
  ConvAttr a = ir_window(im, axes, stride, dil, pads);
  for (size_t d = 0; d < axes; ++d) a.output_padding[d + 2 - axes] = small_int(im, out_pad[d], "an output_padding");
  a.groups = small_int(im, im.attr_i("group", 1), "group");
  Attrs at;
  at.conv = a;
  const Value y = im.apply(OpKind::conv_transpose2d, {x, weight_nchw(im, w, xd.size())}, at,
                           im.fresh(im.out_name() + ".conv_transpose"));
  finish_spatial(im, with_channel_bias(im, y), xd.size());
}

// LRN: y = x / (bias + alpha / size * (sum of x^2 over the channels c - (size-1)/2 ..
// c + size/2 that exist))^beta, in ops the IR has: the channel window's sum is a conv2d over
// x^2 seen as [N, 1, C, rest], with a filled kernel of alpha / size (not a parameter, so
// training leaves it alone), and the power exp(-beta log(.)).
void lrn_op(Importer& im) {
  const Dims xd = im.in(0).dims;
  if (xd.size() < 3)
    im.refuse(fmt::format("input X is {}; LRN normalizes over the channels of [N, C, D1, ...]", dims_str(xd)));
  const int64_t size = im.attr_i("size", 0);
  if (size < 1) im.refuse(fmt::format("size = {}; it must be >= 1", size));
  const float alpha = im.attr_f("alpha", 1e-4f), beta = im.attr_f("beta", 0.75f), bias = im.attr_f("bias", 1.0f);
  const std::string& name = im.out_name();
  int64_t rest = 1;
  for (size_t d = 2; d < xd.size(); ++d) rest = checked_mul(rest, xd[d], im.where());
  const Value x = im.value(0);
  const Value sq = im.apply(OpKind::mul, {x, x}, {}, im.fresh(name + ".square"));
  const Value planes = im.reshape_to(sq, {xd[0], 1, xd[1], rest}, im.fresh(name + ".channels"));
  Attrs k;
  k.shape = Shape{1, 1, size, 1};
  k.value = alpha / static_cast<float>(size);
  const Value kernel = im.apply(OpKind::fill, {}, k, im.fresh(name + ".window"));
  Attrs at;
  at.conv.pads = {small_int(im, (size - 1) / 2, "LRN's leading window"), 0, small_int(im, size / 2, "LRN's window"), 0};
  Value s = im.apply(OpKind::conv2d, {planes, kernel}, at, im.fresh(name + ".window_sum"));
  s = im.reshape_to(s, xd, im.fresh(name + ".sum"));
  s = im.apply(OpKind::bias_add, {s, im.fill_vec(xd.back(), bias, name + ".bias")}, {}, im.fresh(name + ".base"));
  s = im.apply(OpKind::log, {s}, {}, im.fresh(name + ".log"));
  Attrs p;
  p.alpha = -beta;
  s = im.apply(OpKind::scale, {s}, p, im.fresh(name + ".power"));
  s = im.apply(OpKind::exp, {s}, {}, im.fresh(name + ".divisor"));
  im.finish(im.apply(OpKind::mul, {x, s}, {}, im.fresh(name + ".lrn")), xd);
}

// Clip with constant bounds: y = relu(x - lo) + lo, then y - relu(y - hi), so ReLU6 (lo 0, an
// integer hi) is exact for |x| < 2^24: y - hi and y - (y - hi) are then exact subtractions. Other bounds
// round once in x - lo and y - hi.
void clip_op(Importer& im) {
  const Dims xd = im.in(0).dims;
  auto bound = [&](size_t input, const char* attr, float dflt) {
    if (im.opset_ < 11) return im.attr_f(attr, dflt);
    if (!im.has_input(input)) return dflt;
    const Sym& b = im.in(input);
    float v = 0;
    if (!b.constant || !uniform_value(b.c, v) || b.c.f.size() != 1)
      im.refuse(fmt::format("its {} bound is not a constant scalar; twograph clips to constant bounds only", attr));
    return v;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float lo = bound(1, "min", -inf), hi = bound(2, "max", inf);
  if (!(lo <= hi)) im.refuse(fmt::format("min {} is above max {}", lo, hi));
  const std::string& name = im.out_name();
  const int64_t last = xd.empty() ? 1 : xd.back();
  auto plus = [&](Value v, float k, const char* what) {
    return im.apply(OpKind::bias_add, {v, im.fill_vec(last, k, name + what)}, {}, im.fresh(name + what + ".add"));
  };
  if (lo == -inf && hi == inf) return im.alias(im.in(0));
  if (xd.empty()) im.refuse("clips a scalar; twograph clips tensors of rank >= 1");
  Value y = im.value(0);
  if (lo > -inf) {
    y = im.apply(OpKind::relu, {lo == 0.0f ? y : plus(y, -lo, ".min")}, {}, im.fresh(name + ".relu"));
    if (lo != 0.0f) y = plus(y, lo, ".min_back");
  }
  if (hi < inf) {
    const Value over = im.apply(OpKind::relu, {plus(y, -hi, ".max")}, {}, im.fresh(name + ".over"));
    y = im.apply(OpKind::sub, {y, over}, {}, im.fresh(name + ".clip"));
  }
  im.finish(y, xd);
}

}  // namespace

void add_cnn_handlers(std::map<std::string, Handler>& h) {
  h["Conv"] = conv_op;
  h["MaxPool"] = [](Importer& im) { pool_op(im, OpKind::max_pool2d); };
  h["AveragePool"] = [](Importer& im) { pool_op(im, OpKind::avg_pool2d); };
  h["GlobalAveragePool"] = global_avg_pool_op;
  h["BatchNormalization"] = batch_norm_op;
  h["Concat"] = concat_op;
  h["Sum"] = sum_op;
  h["ConvTranspose"] = conv_transpose_op;
  h["LRN"] = lrn_op;
  h["Clip"] = clip_op;
}

}  // namespace tg::onnx
