#pragma once
// The geometry of the batch_norm ops (graph/op.h): x is [N, C, ...] (NCHW, or [N, C]) and
// the statistics are per channel, over N and every dim after C. One definition for the
// shape rule, the kernel entry check and both backends' kernels.
#include <cstdint>
#include <string>

#include "graph/float_formats.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

struct BatchNormGeometry {
  int64_t n = 0, c = 0, inner = 0;  // x as [n, c, inner]; a channel has n * inner elements
  TG_HOST_DEVICE int64_t count() const { return n * inner; }
  // The flat index of element e (of count()) of channel ch.
  TG_HOST_DEVICE int64_t index(int64_t ch, int64_t e) const { return (e / inner * c + ch) * inner + e % inner; }
};

// Any batch_norm op on its inputs (the node's order): the geometry, and the output's
// shape in *out. False with the reason in *why when the shapes do not fit.
bool batch_norm_geometry(OpKind op, const Shape* in, float eps, BatchNormGeometry& g, Shape& out, std::string* why);

}  // namespace tg
