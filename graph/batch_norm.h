#pragma once
// The geometry of the batch_norm ops (graph/op.h): x is [N, C, ...] (NCHW, or [N, C]), or
// [N, ..., C] with attrs.channels_last (NHWC), and the statistics are per channel, over N and
// every other dim. One definition for the
// shape rule, the kernel entry check and both backends' kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "graph/float_formats.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

struct BatchNormGeometry {
  int64_t n = 0, c = 0, inner = 0;  // x as [n, c, inner] (channels_last: [n, inner, c]); a channel has n * inner elements
  bool channels_last = false;
  TG_HOST_DEVICE int64_t count() const { return n * inner; }
  // The flat index of element e (of count()) of channel ch. Element e is (n, spatial) =
  // (e / inner, e % inner) in both layouts, so a channel's sum visits the same values in the
  // same order, and an NHWC kernel gives the NCHW kernel's bits.
  TG_HOST_DEVICE int64_t index(int64_t ch, int64_t e) const {
    return channels_last ? e * c + ch : (e / inner * c + ch) * inner + e % inner;
  }
};

// Any batch_norm op on its inputs (the node's order): the geometry, and the output's
// shape in *out (batch_norm_fold: the first one's; its second is [K], g.c; batch_norm_grad:
// dx's, its second [2, C]; batch_norm_moments: y's, its second [2, C]; batch_norm_stats_blend:
// none, g.c the channels, n = inner = 1). False with the
// reason in *why when the shapes do not fit. batch_norm_fold's geometry is its weight's: K
// channels (g.c) of g.inner elements each, g.n = 1, whatever channels_last says (a weight has no layout).
bool batch_norm_geometry(OpKind op, const Shape* in, float eps, bool channels_last, BatchNormGeometry& g, Shape& out,
                         std::string* why);

// A running statistic blended with the batch's (batch_norm_stats_update, and the fused
// batch_norm_stats_blend): (1 - m) stat + m batch, in double with explicit roundings, the batch's
// value first rounded to f32 (its mean or unbiased variance as batch_norm_moments stores it), so
// that the fused pair gives the update's bits on both backends.
TG_HOST_DEVICE inline float bn_blend(float stat, float batch, double m) {
#if defined(__CUDA_ARCH__)
  return static_cast<float>(__dadd_rn(__dmul_rn(1.0 - m, static_cast<double>(stat)), __dmul_rn(m, static_cast<double>(batch))));
#else
  return static_cast<float>((1.0 - m) * static_cast<double>(stat) + m * static_cast<double>(batch));
#endif
}

// batch_norm_fold's values, host and device: in double with explicit roundings, so that the
// CPU reference and the CUDA kernel (where nvcc would contract a * b + c into one FMA) give
// the same bits. s = gamma / sqrt(var + eps) of one channel.
TG_HOST_DEVICE inline double bn_fold_scale(float gamma, float var, float eps) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(static_cast<double>(gamma), __dsqrt_rn(__dadd_rn(static_cast<double>(var), static_cast<double>(eps))));
#else
  return static_cast<double>(gamma) / std::sqrt(static_cast<double>(var) + static_cast<double>(eps));
#endif
}
// The folded weight w s and the folded bias beta - mean s.
TG_HOST_DEVICE inline float bn_fold_weight(float w, double s) {
#if defined(__CUDA_ARCH__)
  return static_cast<float>(__dmul_rn(static_cast<double>(w), s));
#else
  return static_cast<float>(static_cast<double>(w) * s);
#endif
}
TG_HOST_DEVICE inline float bn_fold_bias(float beta, float mean, double s) {
#if defined(__CUDA_ARCH__)
  return static_cast<float>(__dsub_rn(static_cast<double>(beta), __dmul_rn(static_cast<double>(mean), s)));
#else
  return static_cast<float>(static_cast<double>(beta) - static_cast<double>(mean) * s);
#endif
}

}  // namespace tg
