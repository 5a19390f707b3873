#pragma once
// The dtype rule of every op, from the op table's dtype column (graph/op.h), and which ops
// take integer values.
//
// Integers (i32, i64) are data, never computed on: token ids and class labels. They enter a
// graph as inputs, and only these ops take them:
// - the ids and labels of op_index_inputs: embedding's and embedding_grad's ids (i32 or i64),
//   dropout's and rng_advance's rng state (i64 [2]: the seed, the offset; graph/dropout.h),
//   cross_entropy's and cross_entropy_grad's labels (i32, i64, or f32 whole numbers), where's
//   condition (i32, i64, or f32: nonzero is true; the output takes a's dtype), the attention
//   ops' key lengths (i32 or i64, their optional last input);
// - the layout ops of op_moves_ints (reshape, copy, slice, concat), which move them unchanged;
// - cast, from and to any dtype: to an integer rounds toward zero (saturating; NaN gives 0),
//   from one gives the nearest float (exact below 2^24).
// Every other op refuses an integer input, naming the node and the op. Autodiff never
// differentiates through an integer value (graph/autodiff.cpp).
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// Whether `op` reads dropout's rng state (graph/dropout.h), an i64 [2] index input.
inline bool op_reads_rng(OpKind op) { return op == OpKind::dropout || op == OpKind::rng_advance; }

// The inputs of `op` that are ids or labels (a mask of positions, as the op table's).
// The attention ops' key lengths sit past their fixed inputs, where a node has them.
inline uint8_t op_index_inputs(OpKind op) {
  switch (op) {
    case OpKind::embedding:
    case OpKind::embedding_grad:
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad:
    case OpKind::dropout: return op_table::kIn1;
    case OpKind::rng_advance:
    case OpKind::where: return op_table::kIn0;
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse: return static_cast<uint8_t>(1u << op_num_inputs(op));
    default: return op_table::kNone;
  }
}
// Whether the index input of `op` must be an integer (embedding's ids, attention's key
// lengths, dropout's rng state, i64); cross_entropy's labels may also be f32 class indices,
// as before integers existed, and where's condition an f32 mask.
inline bool op_index_must_be_int(OpKind op) {
  return op == OpKind::embedding || op == OpKind::embedding_grad || op_in_family(op, "attention") ||
         op_reads_rng(op);
}
// Whether input `i` of `op` is an id or label input.
inline bool op_input_is_index(OpKind op, int i) { return i < 8 && ((op_index_inputs(op) >> i) & 1); }
// The layout ops, which move integer values as they move floats.
inline bool op_moves_ints(OpKind op) {
  return op == OpKind::reshape || op == OpKind::copy || op == OpKind::slice || op == OpKind::concat;
}

// The dtype of a kTypeLogits op's output (the op table's dtype column, graph/op.h) over
// logits of dtype `logits`: the loss, a mean over the rows, is f32 whatever the logits'
// dtype; the logits' gradient has the logits' dtype, so that a 16-bit LM head's logits and
// their gradient never pass through f32 memory.
inline DType logits_output_dtype(OpKind op, DType logits) {
  return op == OpKind::cross_entropy_grad ? logits : DType::F32;
}

// The dtype of float input `i` (not an id or label) of `op` run in float dtype `dt`: dt, but
// f32 for a kTypeLogits op's inputs after the logits (a gradient's dloss).
inline DType op_float_input_dtype(OpKind op, int i, DType dt) {
  return op_traits(op).dtype_rule == op_table::kTypeLogits && i > 0 ? DType::F32 : dt;
}

// Whether a kTypeLowGrad op (the layernorm gradients) given dy (input 0) and x (input 1) of
// these dtypes takes dy in bf16 or f16 beside f32 inputs: it widens dy exactly on load, and
// its result is f32.
inline bool low_grad_input(OpKind op, DType dy, DType x) {
  return op_traits(op).dtype_rule == op_table::kTypeLowGrad && (dy == DType::BF16 || dy == DType::F16) &&
         x == DType::F32;
}

// kTypeChannels (the batchnorm family, graph/op.h): whether input `i` of `op` is per channel
// (gamma, beta, the running statistics) rather than per element (x, dy, a weight to fold).
inline bool channel_input(OpKind op, int i) {
  switch (op) {
    case OpKind::batch_norm:
    case OpKind::batch_norm_moments:
    case OpKind::batch_norm_inference:
    case OpKind::batch_norm_fold: return i >= 1;
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad: return i == 2;
    case OpKind::batch_norm_stats_update: return i == 0;
    default: return false;
  }
}
// Whether input `i` of `op` is the running statistics ([2, C], per channel): f32, or the other
// per-channel inputs' dtype.
inline bool running_stats_input(OpKind op, int i) {
  return (i == 3 && (op == OpKind::batch_norm_inference || op == OpKind::batch_norm_fold)) ||
         (i == 0 && op == OpKind::batch_norm_stats_update);
}
// The dtype of output `k` of a kTypeChannels op whose per-element inputs are of dtype `d`: d,
// but f32 for a channel's sums (batch_norm_grad_gamma's, _grad_beta's and batch_norm_grad's
// second output, and batch_norm_moments' batch statistics), which feed the f32 master parameters' update whatever the activations'
// dtype; batch_norm_fold's folded bias joins its convolution in d.
inline DType channel_output_dtype(OpKind op, int k, DType d) {
  const bool sums = op == OpKind::batch_norm_grad_gamma || op == OpKind::batch_norm_grad_beta ||
                    ((op == OpKind::batch_norm_grad || op == OpKind::batch_norm_moments) && k == 1);
  return sums ? DType::F32 : d;
}
// The per-element dtype d and the per-channel dtype p of a kTypeChannels op over the n dtypes
// of its inputs (p = d where the op has no per-channel input), or what breaks the rule: the
// per-element inputs share one float dtype, gamma and beta one dtype p that is d or f32
// (16-bit activations beside f32 parameters, as autocast runs batch norm), the running
// statistics are p or f32, and those batch_norm_stats_update writes are f32 master state.
// Allocates nothing when the rule holds: the CUDA backend asks it on every batch norm launch.
std::string channel_dtypes(OpKind op, const DType* inputs, int n, DType* d, DType* p);

// The dtype of each output of `op` over inputs of `inputs` dtypes (op_num_outputs(op) of
// them), or a GraphError naming the node, the input whose dtype breaks the rule, and
// how to fix it. Call it after the shape rule, which checks the arity.
std::vector<DType> infer_dtypes(OpKind op, const std::vector<DType>& inputs, const Attrs& attrs,
                                const std::string& node_name);
// The dtype every output of the op has (one per op; f32 for updates, which have none).
DType infer_dtype(OpKind op, const std::vector<DType>& inputs, const Attrs& attrs, const std::string& node_name);

}  // namespace tg
