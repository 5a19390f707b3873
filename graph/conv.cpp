#include "graph/conv.h"

#include <fmt/format.h>

namespace tg {

namespace {

bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}

const char* layout_text(const ConvAttr& a) { return a.channels_last ? "NHWC [N, H, W, C]" : "NCHW [N, C, H, W]"; }
// Spatial axis d (0: H, 1: W) with its dim in the attribute's layout.
const char* spatial_dim_text(const ConvAttr& a, int d) {
  if (a.channels_last) return d == 0 ? "H (dim 1)" : "W (dim 2)";
  return d == 0 ? "H (dim 2)" : "W (dim 3)";
}
// x's (N, C, H, W) in the attribute's layout.
struct Dims {
  int64_t n, c, h, w;
  int channel_dim;
};
Dims dims_of(const Shape& x, const ConvAttr& a) {
  return a.channels_last ? Dims{x[0], x[3], x[1], x[2], 3} : Dims{x[0], x[1], x[2], x[3], 1};
}

// The input, the strides, pads and dilation, and the output extents from the window.
bool spatial(const Shape& x, const ConvAttr& a, bool ceil_mode, ConvGeometry& g, std::string* why) {
  if (x.rank != 4) return fail(why, fmt::format("x is {} of rank {}; it must be {}", x.str(), x.rank, layout_text(a)));
  const Dims d4 = dims_of(x, a);
  g.nhwc = a.channels_last;
  g.n = d4.n;
  g.c = d4.c;
  g.h = d4.h;
  g.w = d4.w;
  for (int d = 0; d < 2; ++d) {
    if (a.stride[d] < 1) return fail(why, fmt::format("stride[{}] = {} must be >= 1", d, a.stride[d]));
    if (a.dilation[d] < 1) return fail(why, fmt::format("dilation[{}] = {} must be >= 1", d, a.dilation[d]));
  }
  for (int d = 0; d < 4; ++d)
    if (a.pads[d] < 0) return fail(why, fmt::format("pads[{}] = {} must be >= 0", d, a.pads[d]));
  g.sh = a.stride[0];
  g.sw = a.stride[1];
  g.ph = a.pads[0];
  g.pw = a.pads[1];
  g.dh = a.dilation[0];
  g.dw = a.dilation[1];
  const int64_t in[2] = {g.h, g.w}, win[2] = {g.r, g.s};
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t span = static_cast<int64_t>(a.dilation[d]) * (win[d] - 1) + 1;
    const int64_t padded = in[d] + a.pads[d] + a.pads[d + 2];
    if (span > padded)
      return fail(why, fmt::format("the window spans {} along {} (dilation {} x (window {} - 1) + 1) but the padded "
                                   "input has {} ({} + pads {} and {}); use a smaller window or dilation, or more padding",
                                   span, spatial_dim_text(a, d), a.dilation[d], win[d], padded, in[d],
                                   a.pads[d], a.pads[d + 2]));
    const int64_t room = padded - span;
    out[d] = (ceil_mode ? (room + a.stride[d] - 1) / a.stride[d] : room / a.stride[d]) + 1;
    // ONNX's ceil mode: a last window that would start in the end padding is dropped.
    if (ceil_mode && (out[d] - 1) * a.stride[d] >= in[d] + a.pads[d]) --out[d];
  }
  g.p = out[0];
  g.q = out[1];
  return true;
}

}  // namespace

bool conv_geometry(const Shape& x, const Shape& w, const ConvAttr& a, ConvGeometry& g, std::string* why) {
  if (w.rank != 4)
    return fail(why, fmt::format("weight is {} of rank {}; it must be [K, C/groups, R, S]", w.str(), w.rank));
  if (x.rank != 4) return fail(why, fmt::format("x is {} of rank {}; it must be {}", x.str(), x.rank, layout_text(a)));
  if (a.groups < 1) return fail(why, fmt::format("groups = {} must be >= 1", a.groups));
  const Dims xd = dims_of(x, a);
  if (a.ceil_mode) return fail(why, "ceil_mode is the pools' attribute; conv2d takes none");
  if (a.output_padding[0] != 0 || a.output_padding[1] != 0)
    return fail(why, fmt::format("output_padding = [{}, {}] is conv_transpose2d's attribute; leave it out",
                                 a.output_padding[0], a.output_padding[1]));
  if (a.kernel[0] != 0 || a.kernel[1] != 0)
    return fail(why, fmt::format("kernel = [{}, {}] is the pools' attribute; conv2d's window is its weight's [R, S], "
                                 "so leave kernel out", a.kernel[0], a.kernel[1]));
  g.groups = a.groups;
  g.k = w[0];
  g.r = w[2];
  g.s = w[3];
  if (xd.c % a.groups != 0)
    return fail(why, fmt::format("x {} has C = {} channels (dim {}), not a multiple of groups = {}", x.str(), xd.c,
                                 xd.channel_dim, a.groups));
  if (g.k % a.groups != 0)
    return fail(why, fmt::format("weight {} has K = {} output channels (dim 0), not a multiple of groups = {}", w.str(),
                                 g.k, a.groups));
  if (w[1] != xd.c / a.groups)
    return fail(why, fmt::format("weight {} has {} input channels (dim 1) but x {} has C / groups = {} / {} = {}; "
                                 "the weight must be [K, C/groups, R, S]",
                                 w.str(), w[1], x.str(), xd.c, a.groups, xd.c / a.groups));
  return spatial(x, a, false, g, why);
}

bool conv_transpose_geometry(const Shape& x, const Shape& w, const ConvAttr& a, ConvGeometry& g, std::string* why) {
  if (w.rank != 4)
    return fail(why, fmt::format("weight is {} of rank {}; it must be [C, K/groups, R, S]", w.str(), w.rank));
  if (x.rank != 4) return fail(why, fmt::format("x is {} of rank {}; it must be {}", x.str(), x.rank, layout_text(a)));
  if (a.groups < 1) return fail(why, fmt::format("groups = {} must be >= 1", a.groups));
  const Dims xd = dims_of(x, a);
  if (w[0] != xd.c)
    return fail(why, fmt::format("weight {} has {} input channels (dim 0) but x {} has C = {}; the weight of a "
                                 "transposed convolution is [C, K/groups, R, S]",
                                 w.str(), w[0], x.str(), xd.c));
  if (xd.c % a.groups != 0)
    return fail(why, fmt::format("x {} has C = {} channels (dim {}), not a multiple of groups = {}", x.str(), xd.c,
                                 xd.channel_dim, a.groups));
  const int64_t dims[2] = {xd.h, xd.w}, win[2] = {w[2], w[3]};
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    // Checked here because the extent below divides nothing but must not go negative.
    if (a.stride[d] < 1) return fail(why, fmt::format("stride[{}] = {} must be >= 1", d, a.stride[d]));
    if (a.dilation[d] < 1) return fail(why, fmt::format("dilation[{}] = {} must be >= 1", d, a.dilation[d]));
    if (a.output_padding[d] < 0 || a.output_padding[d] >= a.stride[d])
      return fail(why, fmt::format("output_padding[{}] = {} must be >= 0 and below the stride {}; a larger one "
                                   "would add rows no input element reaches",
                                   d, a.output_padding[d], a.stride[d]));
    out[d] = (dims[d] - 1) * a.stride[d] + static_cast<int64_t>(a.dilation[d]) * (win[d] - 1) + 1 +
             a.output_padding[d] - a.pads[d] - a.pads[d + 2];
    if (out[d] < 1)
      return fail(why, fmt::format("the output's {} would be {}: pads {} and {} crop more than the {} the "
                                   "transposed convolution makes; use smaller pads",
                                   spatial_dim_text(a, d), out[d], a.pads[d], a.pads[d + 2],
                                   out[d] + a.pads[d] + a.pads[d + 2]));
  }
  ConvAttr forward = a;
  forward.output_padding = {0, 0};
  const Shape y = a.channels_last ? Shape{xd.n, out[0], out[1], w[1] * a.groups}
                                   : Shape{xd.n, w[1] * a.groups, out[0], out[1]};
  if (!conv_geometry(y, w, forward, g, why)) return false;
  if (g.p != xd.h || g.q != xd.w)  // output_padding below the stride keeps the extents
    return fail(why, fmt::format("internal: the convolution of {} gives {} x {}, not x's {} x {}", y.str(), g.p, g.q,
                                 xd.h, xd.w));
  return true;
}

bool pool_geometry(const Shape& x, const ConvAttr& a, ConvGeometry& g, std::string* why) {
  if (a.kernel[0] < 1 || a.kernel[1] < 1)
    return fail(why, fmt::format("kernel = [{}, {}]; a pool needs its window, both extents >= 1", a.kernel[0],
                                 a.kernel[1]));
  if (a.groups != 1) return fail(why, fmt::format("groups = {}; a pool takes none (it must be 1)", a.groups));
  if (a.output_padding[0] != 0 || a.output_padding[1] != 0)
    return fail(why, "output_padding is conv_transpose2d's attribute; a pool takes none");
  if (a.dilation[0] != 1 || a.dilation[1] != 1)
    return fail(why, fmt::format("dilation = [{}, {}]; pools support dilation 1 only", a.dilation[0], a.dilation[1]));
  for (int d = 0; d < 4; ++d)
    if (a.pads[d] >= a.kernel[d % 2])
      return fail(why, fmt::format("pads[{}] = {} is not smaller than the window's {}; a window must hold an input "
                                   "element, so use pads < kernel",
                                   d, a.pads[d], a.kernel[d % 2]));
  g.r = a.kernel[0];
  g.s = a.kernel[1];
  if (!spatial(x, a, a.ceil_mode, g, why)) return false;
  g.k = g.c;
  return true;
}

bool conv_op_geometry(OpKind op, const Shape* in, const ConvAttr& a, ConvGeometry& g, Shape& out, std::string* why) {
  // The forward op's operands: x and the weight (conv) or x alone (pools), and dy for a gradient.
  const Shape* x = &in[0];
  const Shape* w = nullptr;
  const Shape* dy = nullptr;
  switch (op) {
    case OpKind::conv2d:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act: w = &in[1]; break;
    case OpKind::conv2d_grad_input: dy = &in[0], w = &in[1], x = &in[2]; break;
    case OpKind::conv2d_grad_weight: dy = &in[0], x = &in[1], w = &in[2]; break;
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d_grad: dy = &in[0], x = &in[1]; break;
    default: break;
  }
  if (op == OpKind::conv_transpose2d) {
    if (!conv_transpose_geometry(in[0], in[1], a, g, why)) return false;
    out = g.in_shape();
    return true;
  }
  if (!(w ? conv_geometry(*x, *w, a, g, why) : pool_geometry(*x, a, g, why))) return false;
  if (dy && *dy != g.out_shape())
    return fail(why, fmt::format("dy is {} but the forward output of x {}{}{} is {}; dy must have that shape", dy->str(),
                                 x->str(), w ? " and weight " : "", w ? w->str() : "", g.out_shape().str()));
  out = op == OpKind::conv2d_grad_weight ? *w : dy ? *x : g.out_shape();
  if (conv_has_epilogue(op) && in[2] != Shape{g.k})
    return fail(why, fmt::format("bias is {} but the weight {} has {} output channels; the bias must be [{}]",
                                 in[2].str(), w->str(), g.k, g.k));
  if (op == OpKind::conv2d_bias_add_act && in[3] != out)
    return fail(why, fmt::format("the residual is {} but the convolution's output is {}; it must have that shape",
                                 in[3].str(), out.str()));
  return true;
}

}  // namespace tg
