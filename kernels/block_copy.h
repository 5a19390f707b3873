#pragma once
// concat and slice as copies of [outer, len, inner] blocks between two tensors that differ
// along one axis: element (o, j, i) of the block is src[o, src_off + j, i] in a source whose
// axis has src_len entries and dst[o, dst_off + j, i] in a destination with dst_len. A slice
// is one block; a concat one block per input. Both backends (kernels/cpu/layout.cpp,
// kernels/cuda/layout.cu) copy through these indices.
#include <cstdint>

#include "graph/float_formats.h"
#include "kernels/op_call.h"
#include "kernels/op_call_check.h"

namespace tg::kernels {

struct BlockCopy {
  int64_t outer = 1, len = 1, inner = 1;
  int64_t src_len = 1, src_off = 0;
  int64_t dst_len = 1, dst_off = 0;

  int64_t count() const { return outer * len * inner; }
  // The source and destination offsets of the block's element e (row-major over o, j, i).
  TG_HOST_DEVICE int64_t src(int64_t e) const {
    const int64_t i = e % inner, j = (e / inner) % len, o = e / (inner * len);
    return (o * src_len + src_off + j) * inner + i;
  }
  TG_HOST_DEVICE int64_t dst(int64_t e) const {
    const int64_t i = e % inner, j = (e / inner) % len, o = e / (inner * len);
    return (o * dst_len + dst_off + j) * inner + i;
  }
};

// The block of concat's input `input`, from the geometry the call check resolved.
inline BlockCopy concat_block(const OpCall& c, const CallGeometry& g, int input) {
  BlockCopy b;
  b.outer = g.outer;
  b.inner = g.inner;
  b.dst_len = g.len;
  for (int k = 0; k < input; ++k) b.dst_off += c.input(k).shape[g.axis];
  b.len = b.src_len = c.input(input).shape[g.axis];
  return b;
}

// slice's one block.
inline BlockCopy slice_block(const OpCall& c, const CallGeometry& g) {
  BlockCopy b;
  b.outer = g.outer;
  b.inner = g.inner;
  b.len = b.dst_len = g.len;
  b.src_len = c.in[0].shape[g.axis];
  b.src_off = c.attrs->start;
  return b;
}

}  // namespace tg::kernels
