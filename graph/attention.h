#pragma once
// The geometry of the fused attention ops (graph/op.h: attention, attention_lse,
// attention_grad). q, k, v, the output and its gradient are head views [B, S, heads * dh]:
// the layout a linear layer writes, read in place as B * heads matrices [S, dh] (matrix
// b * heads + h starts at b*S*heads*dh + h*dh, leading dimension heads * dh; graph/heads.h),
// so that neither the split into heads nor the merge after needs a transpose.
//
// The row statistic: attention_lse gives, per query row of each head, the logsumexp of its
// scaled (and masked) scores, [B * heads, S, 2], as a pair hi + lo in the storage dtype:
// hi is the value rounded to the dtype, lo the rest, so that a bf16 or f16 graph keeps the
// statistic to about 16 significant bits where one 16-bit number would round it to 8 or 11
// (exp(score - lse) inherits that error). f32 stores lo = 0. The backward recomputes the
// probabilities block by block from it: memory O(S), never the S x S scores.
//
// The padding mask: each op may take one more input, last, the key lengths [B] (i32 or i64;
// the op table's kKeyLengths): sequence b's keys at positions >= lengths[b] are masked, as
// for right-padded batches (cuDNN's padding mask, PyTorch's key_padding_mask), combined with
// causal (a query sees the keys below both bounds). Lengths are clamped to [0, S]. Padded
// query rows are computed as any other (over the real keys); the loss ignores them. A row
// with no key to see (length 0) has output 0, gradients 0 and a statistic of 0, never NaN.
// The mask is a bound on a loop, so memory stays O(S).
//
// attention_grad stacks its three results into one tensor [3, B, S, heads * dh]: dq, dk,
// dv, each a head view; the gradient rule slices them apart.
#include <cstdint>
#include <string>

#include "graph/attrs.h"
#include "graph/float_formats.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

struct AttentionGeometry {
  int64_t batch = 0, heads = 0, seq = 0, dh = 0;
  int64_t ld() const { return heads * dh; }      // the row pitch of q, k, v and the output
  int64_t rows() const { return batch * heads; }  // the matrices: [S, dh] each
  Shape view_shape() const { return Shape{batch, seq, heads * dh}; }
  Shape lse_shape() const { return Shape{batch * heads, seq, 2}; }
  Shape grad_shape() const { return Shape{3, batch, seq, heads * dh}; }
};

// The geometry of q (every head view of the op has q's shape): true and g filled, or false
// and *why set (the message names the shape and the fix, without the op's name).
bool attention_geometry(const Shape& q, const Attrs& at, AttentionGeometry& g, std::string* why);

// The stored pair of a row statistic in dtype dt: hi, the value rounded to dt, and lo, the
// rest (rounded when stored). Both backends store what this gives, and read hi + lo back.
TG_HOST_DEVICE inline void split_lse(float lse, DType dt, float& hi, float& lo) {
  hi = round_to_dtype(lse, dt);
  lo = lse - hi;
}

// The output of `op` that holds the row statistic as split_lse's pairs, which a 16-bit
// store must split rather than round: attention_lse's only one, attention_fwd_lse's second;
// -1 for every other op.
inline int attention_lse_output(OpKind op) {
  return op == OpKind::attention_lse ? 0 : op == OpKind::attention_fwd_lse ? 1 : -1;
}

}  // namespace tg
