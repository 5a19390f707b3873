#pragma once
// The geometry of conv2d, its backward ops and the pools (graph/op.h) over NCHW tensors (NHWC
// with attrs.conv.channels_last), and the value of one output element of each: one definition for the shape rule, the
// kernel entry check and both backends' kernels (kernels/cpu/conv.cpp and
// kernels/cuda/conv.cu run the same element functions, one element per loop iteration or
// thread, each summing in double in the same order, so the two backends agree and every
// element is computed alone: deterministic, and no atomics).
#include <cstdint>
#include <string>
#include <type_traits>

#include "graph/attrs.h"
#include "graph/float_formats.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// Whether the op takes its window from a weight (conv2d and its backward ops) rather than
// from attrs.conv.kernel (the pools).
inline bool conv_window_from_weight(OpKind op) {
  return op == OpKind::conv2d || op == OpKind::conv2d_grad_input || op == OpKind::conv2d_grad_weight ||
         op == OpKind::conv2d_bias_act || op == OpKind::conv2d_bias_add_act || op == OpKind::conv_transpose2d;
}
// The fused forward convolutions: conv2d with a per-channel bias (and a residual) and an
// activation applied to the sum before the single store.
inline bool conv_has_epilogue(OpKind op) { return op == OpKind::conv2d_bias_act || op == OpKind::conv2d_bias_add_act; }

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // the input x [N, C, H, W]
  int64_t k = 0, p = 0, q = 0;         // the output [N, K, P, Q] (pools: K = C)
  int64_t r = 0, s = 0;                // the window (conv2d: the weight [K, C/groups, R, S])
  int64_t groups = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  // stride, leading (top, left) pads, dilation
  bool nhwc = false;  // the activations are [N, H, W, C] and [N, P, Q, K]; the weight is [K, C/groups, R, S] either way
  Shape out_shape() const { return nhwc ? Shape{n, p, q, k} : Shape{n, k, p, q}; }
  Shape in_shape() const { return nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w}; }
  Shape weight_shape() const { return Shape{k, c / groups, r, s}; }
};

// The flat index of activation element (n, c, h, w) of a tensor with `chans` channels and
// extents hh x ww, in the geometry's layout.
TG_HOST_DEVICE inline int64_t act_index(const ConvGeometry& g, int64_t n, int64_t c, int64_t h, int64_t w,
                                        int64_t chans, int64_t hh, int64_t ww) {
  return g.nhwc ? ((n * hh + h) * ww + w) * chans + c : ((n * chans + c) * hh + h) * ww + w;
}
// Flat index i of such a tensor as (n, c, h, w).
struct ActPos {
  int64_t n, c, h, w;
};
TG_HOST_DEVICE inline ActPos act_pos(const ConvGeometry& g, int64_t i, int64_t chans, int64_t hh, int64_t ww) {
  if (g.nhwc) return {i / (chans * ww * hh), i % chans, (i / (chans * ww)) % hh, (i / chans) % ww};
  return {i / (ww * hh * chans), (i / (ww * hh)) % chans, (i / ww) % hh, i % ww};
}

// conv2d: x [N, C, H, W] (a.channels_last: [N, H, W, C]) and w [K, C/groups, R, S]. False with the reason in *why when the
// shapes or attributes do not fit (the message names the bad dim and the fix).
bool conv_geometry(const Shape& x, const Shape& w, const ConvAttr& a, ConvGeometry& g, std::string* why);
// max_pool2d and avg_pool2d: x [N, C, H, W], the window attrs.conv.kernel.
bool pool_geometry(const Shape& x, const ConvAttr& a, ConvGeometry& g, std::string* why);

// conv_transpose2d: x [N, C, H, W] and w [C, K/groups, R, S]. Its output [N, K, P, Q] is the
// input of the conv2d (weight w, the same stride, pads, dilation and groups) whose output is
// x's shape, with P = (H - 1) stride - pads + dilation (R - 1) + 1 + output_padding, and
// its value that conv2d's input gradient for dy = x: the geometry returned is that conv2d's,
// so the kernels run conv2d_grad_input's (the output is g's x, [g.n, g.c, g.h, g.w]).
bool conv_transpose_geometry(const Shape& x, const Shape& w, const ConvAttr& a, ConvGeometry& g, std::string* why);

// Any op of the conv family (conv_window_from_weight, or a pool and its gradient) on its
// inputs `in` (the node's order): the geometry, and the output's shape in *out. Checks that
// a gradient's dy has the forward output's shape, and a fused convolution's bias [K] and
// residual (the output's shape).
bool conv_op_geometry(OpKind op, const Shape* in, const ConvAttr& a, ConvGeometry& g, Shape& out, std::string* why);

// ---- the elements, host and device -------------------------------------------------------
// Flat NCHW (g.nhwc: NHWC) indices; i is the element's flat index in the tensor it belongs to.
// Each element sums the same products in the same order in either layout, so the NHWC
// elements are the NCHW ones' bits, transposed. T is the
// element type the tensors are read as: float (the CPU, f32 on CUDA) or a 16-bit element
// that converts to float (kernels/cuda/storage.h), so every dtype sums the same values in
// the same order.

// conv2d: y[n, k, p, q] = sum over the group's channels c and the window (r, s) of
// x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw] w[k, c - group start, r, s].
template <typename T>
TG_HOST_DEVICE inline float conv2d_element(const T* x, const T* wt, const ConvGeometry& g, int64_t i) {
  const ActPos o = act_pos(g, i, g.k, g.p, g.q);
  const int64_t q = o.w, p = o.h, k = o.c, n = o.n;
  const int64_t cg = g.c / g.groups, c0 = k / (g.k / g.groups) * cg;
  double acc = 0;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t hi = p * g.sh - g.ph + r * g.dh;
      if (hi < 0 || hi >= g.h) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t wi = q * g.sw - g.pw + s * g.dw;
        if (wi < 0 || wi >= g.w) continue;
        acc += static_cast<double>(x[act_index(g, n, c0 + c, hi, wi, g.c, g.h, g.w)]) *
               static_cast<double>(wt[((k * cg + c) * g.r + r) * g.s + s]);
      }
    }
  return static_cast<float>(acc);
}

// The fused convolutions' epilogue on element i of the output [N, K, P, Q] (conv_has_epilogue):
// act(conv + bias[k] + residual[i]) in f32, the adds in the unfused ops' order, so that in
// f32 it gives their bits. residual: null for conv2d_bias_act.
template <typename T>
TG_HOST_DEVICE inline float conv_epilogue_element(float conv, const T* bias, const T* residual, const ConvGeometry& g,
                                                  Act act, int64_t i) {
  float v = conv + static_cast<float>(bias[g.nhwc ? i % g.k : (i / (g.q * g.p)) % g.k]);
  if (residual) v = v + static_cast<float>(residual[i]);
  return act == Act::relu ? (v > 0.0f ? v : 0.0f) : v;
}

// The output position that reads input position `in` through window tap `t` along one
// axis, or -1 when none does (strided windows skip it, or it lies past the output).
TG_HOST_DEVICE inline int64_t conv_out_pos(int64_t in, int64_t t, int64_t stride, int64_t pad, int64_t dil,
                                           int64_t out_len) {
  const int64_t u = in + pad - t * dil;
  if (u < 0 || u % stride != 0 || u / stride >= out_len) return -1;
  return u / stride;
}

// conv2d_grad_input: dx[n, c, h, w] = sum over the group's output channels k and the taps
// (r, s) that read (h, w) of dy[n, k, p, q] w[k, c - group start, r, s].
template <typename T>
TG_HOST_DEVICE inline float conv2d_grad_input_element(const T* dy, const T* wt, const ConvGeometry& g,
                                                      int64_t i) {
  const ActPos xi = act_pos(g, i, g.c, g.h, g.w);
  const int64_t wi = xi.w, hi = xi.h, ci = xi.c, n = xi.n;
  const int64_t cg = g.c / g.groups, kg = g.k / g.groups, grp = ci / cg, c = ci % cg;
  double acc = 0;
  for (int64_t k = grp * kg; k < (grp + 1) * kg; ++k)
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t p = conv_out_pos(hi, r, g.sh, g.ph, g.dh, g.p);
      if (p < 0) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t q = conv_out_pos(wi, s, g.sw, g.pw, g.dw, g.q);
        if (q < 0) continue;
        acc += static_cast<double>(dy[act_index(g, n, k, p, q, g.k, g.p, g.q)]) *
               static_cast<double>(wt[((k * cg + c) * g.r + r) * g.s + s]);
      }
    }
  return static_cast<float>(acc);
}

// conv2d_grad_weight: dw[k, c, r, s] = sum over n, p, q of dy[n, k, p, q] x[n, group start + c,
// p*sh - ph + r*dh, q*sw - pw + s*dw].
template <typename T>
TG_HOST_DEVICE inline float conv2d_grad_weight_element(const T* dy, const T* x, const ConvGeometry& g,
                                                       int64_t i) {
  const int64_t cg = g.c / g.groups;
  const int64_t s = i % g.s, r = (i / g.s) % g.r, c = (i / (g.s * g.r)) % cg, k = i / (g.s * g.r * cg);
  const int64_t ci = k / (g.k / g.groups) * cg + c;
  double acc = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t p = 0; p < g.p; ++p) {
      const int64_t hi = p * g.sh - g.ph + r * g.dh;
      if (hi < 0 || hi >= g.h) continue;
      for (int64_t q = 0; q < g.q; ++q) {
        const int64_t wi = q * g.sw - g.pw + s * g.dw;
        if (wi < 0 || wi >= g.w) continue;
        acc += static_cast<double>(dy[act_index(g, n, k, p, q, g.k, g.p, g.q)]) *
               static_cast<double>(x[act_index(g, n, ci, hi, wi, g.c, g.h, g.w)]);
      }
    }
  return static_cast<float>(acc);
}

// The window of output (p, q) clipped to the input: rows [h0, h1), columns [w0, w1). The
// pools have dilation 1 and pads smaller than the window, so it is never empty.
struct PoolWindow {
  int64_t h0, h1, w0, w1;
};
TG_HOST_DEVICE inline PoolWindow pool_window(const ConvGeometry& g, int64_t p, int64_t q) {
  const int64_t hs = p * g.sh - g.ph, ws = q * g.sw - g.pw;
  PoolWindow b;
  b.h0 = hs < 0 ? 0 : hs;
  b.h1 = hs + g.r < g.h ? hs + g.r : g.h;
  b.w0 = ws < 0 ? 0 : ws;
  b.w1 = ws + g.s < g.w ? ws + g.s : g.w;
  return b;
}

// One channel of one image of an activation: element (h, w) of the H x W plane is
// at[(h * W + w) * step] (NCHW: a contiguous plane, step 1; NHWC: every C-th element).
template <typename T>
struct PoolPlane {
  T* at;
  int64_t step;
  TG_HOST_DEVICE float operator()(int64_t hw) const { return static_cast<float>(at[hw * step]); }
};
template <typename T>
TG_HOST_DEVICE inline PoolPlane<T> pool_plane(T* t, const ConvGeometry& g, int64_t n, int64_t c, int64_t hh,
                                              int64_t ww) {
  return {t + act_index(g, n, c, 0, 0, g.c, hh, ww), g.nhwc ? g.c : 1};
}

// The index h * W + w within the plane of window (p, q)'s maximum: the first in row-major
// order among equals (padding is never the maximum).
template <typename T>
TG_HOST_DEVICE inline int64_t max_pool_argmax(const PoolPlane<T>& plane, const ConvGeometry& g, int64_t p, int64_t q) {
  const PoolWindow b = pool_window(g, p, q);
  int64_t best = b.h0 * g.w + b.w0;
  for (int64_t h = b.h0; h < b.h1; ++h)
    for (int64_t w = b.w0; w < b.w1; ++w)
      if (plane(h * g.w + w) > plane(best)) best = h * g.w + w;
  return best;
}

template <typename T>
TG_HOST_DEVICE inline float max_pool2d_element(const T* x, const ConvGeometry& g, int64_t i) {
  const ActPos o = act_pos(g, i, g.c, g.p, g.q);
  const PoolPlane<const T> plane = pool_plane(x, g, o.n, o.c, g.h, g.w);
  return plane(max_pool_argmax(plane, g, o.h, o.w));
}

// avg_pool2d: the mean over the window's input elements; padding is not counted (ONNX's
// count_include_pad = 0).
template <typename T>
TG_HOST_DEVICE inline float avg_pool2d_element(const T* x, const ConvGeometry& g, int64_t i) {
  const ActPos o = act_pos(g, i, g.c, g.p, g.q);
  const PoolPlane<const T> plane = pool_plane(x, g, o.n, o.c, g.h, g.w);
  const PoolWindow b = pool_window(g, o.h, o.w);
  double acc = 0;
  for (int64_t h = b.h0; h < b.h1; ++h)
    for (int64_t w = b.w0; w < b.w1; ++w) acc += plane(h * g.w + w);
  return static_cast<float>(acc / static_cast<double>((b.h1 - b.h0) * (b.w1 - b.w0)));
}

// The pools' gradients: dx[n, c, h, w] sums dy over the windows that hold (h, w), in
// one fixed order: the windows whose maximum it is (max_pool2d_grad, x given) or
// each divided by its element count (avg_pool2d_grad, x null; x takes T from dy).
template <typename T>
TG_HOST_DEVICE inline float pool2d_grad_element(const T* dy, const typename std::remove_cv<T>::type* x,
                                                const ConvGeometry& g, int64_t i) {
  const ActPos xi = act_pos(g, i, g.c, g.h, g.w);
  const int64_t wi = xi.w, hi = xi.h;
  const auto dplane = pool_plane(dy, g, xi.n, xi.c, g.p, g.q);
  double acc = 0;
  for (int64_t r = 0; r < g.r; ++r) {
    const int64_t p = conv_out_pos(hi, r, g.sh, g.ph, 1, g.p);
    if (p < 0) continue;
    for (int64_t s = 0; s < g.s; ++s) {
      const int64_t q = conv_out_pos(wi, s, g.sw, g.pw, 1, g.q);
      if (q < 0) continue;
      if (x) {
        if (max_pool_argmax(pool_plane(x, g, xi.n, xi.c, g.h, g.w), g, p, q) == hi * g.w + wi)
          acc += dplane(p * g.q + q);
      } else {
        const PoolWindow b = pool_window(g, p, q);
        acc += static_cast<double>(dplane(p * g.q + q)) / static_cast<double>((b.h1 - b.h0) * (b.w1 - b.w0));
      }
    }
  }
  return static_cast<float>(acc);
}

}  // namespace tg
