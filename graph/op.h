#pragma once
// The op set of the IR, and every op's properties in one table.
//
// Each row of TG_OP_LIST is one op. The rest of the project reads the columns through
// op_traits() and the small helpers below, and every per-op rule that cannot be a
// column (the shape rule, the gradient rule, the kernels, the test samples) is a
// switch over OpKind with no `default:`. The build turns -Wswitch into an error, so an
// op added here without one of them does not compile, and tests/graph/op_table_test.cpp
// checks what a compiler cannot (a gradient for exactly the inputs the table marks,
// every attribute surviving a graph file, the kernel files of the family). Two switches
// have a `default:`: the shape rule (graph/shape_inference.cpp) and the call check
// (kernels/op_call_check.cpp) need no case for the ops of the kSameShape flag; every
// op's samples run through both (tests/graph/op_table_test.cpp, tests/kernels), so an
// op with neither the flag nor a case fails there, naming itself.
// docs/adding-an-op.md walks one op through every file.
#include <cstdint>
#include <string>
#include <string_view>

#include "graph/attrs.h"

namespace tg {

// The words of the table. Input masks name inputs by position.
namespace op_table {
constexpr uint8_t kNone = 0, kIn0 = 1, kIn1 = 2, kIn2 = 4, kIn3 = 8, kIn4 = 16, kAll = 31;
constexpr AttrMask kTransA = attr_bit(AttrId::trans_a), kTransB = attr_bit(AttrId::trans_b),
                   kAxis = attr_bit(AttrId::axis), kSize = attr_bit(AttrId::size), kEps = attr_bit(AttrId::eps),
                   kAlpha = attr_bit(AttrId::alpha), kValue = attr_bit(AttrId::value), kLr = attr_bit(AttrId::lr),
                   kMomentum = attr_bit(AttrId::momentum), kShape = attr_bit(AttrId::shape),
                   kPerm = attr_bit(AttrId::perm), kHeads = attr_bit(AttrId::heads), kTo = attr_bit(AttrId::to),
                   kConv = attr_bit(AttrId::conv), kStart = attr_bit(AttrId::start), kAdam = attr_bit(AttrId::adam),
                   kMaxNorm = attr_bit(AttrId::max_norm), kCausal = attr_bit(AttrId::causal),
                   kIgnoreIndex = attr_bit(AttrId::ignore_index), kP = attr_bit(AttrId::p),
                   kRngStream = attr_bit(AttrId::rng_stream), kChannelsLast = attr_bit(AttrId::channels_last);
constexpr AttrMask kScaler = attr_bit(AttrId::growth_factor) | attr_bit(AttrId::backoff_factor) |
                             attr_bit(AttrId::growth_interval);
// Flags.
constexpr uint8_t kPlain = 0;
constexpr uint8_t kInPlace = 1;  // the planner may give the output input 0's memory (it takes attrs.in_place too)
constexpr uint8_t kView = 2;     // the output is input 0's memory under another shape: no kernel runs
constexpr uint8_t kVariadic = 4; // the inputs repeat in groups of `inputs` (any number of groups >= 1)
constexpr uint8_t kFused = 8;    // made by a graph pass (static/passes) from other ops; models never apply it
constexpr uint8_t kSameShape = 16;  // every input and the output have input 0's shape: no case of its own in
                                    // graph/shape_inference.cpp or kernels/op_call_check.cpp
constexpr uint8_t kGuarded = 32;    // an update that may take one more input, last: loss scaling's found-inf
                                    // flag [1] (graph/loss_scale.h); when it is nonzero the update writes nothing
constexpr uint8_t kKeyLengths = 64; // an attention op that may take one more input, last: each sequence's key
                                    // count [B], i32 or i64 (graph/attention.h: the padding mask)
constexpr uint8_t kWeightCopy = 128;// an update whose every group ends with the parameter's low-precision copy
                                    // (bf16 or f16, one dtype for the node): written, after the parameter, with
                                    // the parameter's new value rounded to nearest even, as `cast` rounds it
// The dtype column.
constexpr uint8_t kTypeSame = 0;  // every input and every output have input 0's dtype (any float dtype), but
                                  // the ids and labels (graph/dtype_rules.h: op_index_inputs), which are integers
constexpr uint8_t kTypeF32 = 1;   // every input and every output are f32 (losses, with class indices and
                                  // counts held exactly; updates, whose parameters are the f32 master copy)
constexpr uint8_t kTypeCast = 2;  // the output of attrs.to: cast (input 0 of any dtype) and the fused ops that end
                                  // in one (float inputs of one dtype; graph/dtype_rules.cpp)
constexpr uint8_t kTypeLogits = 3;// input 0, the logits, of any float dtype, widened exactly and computed on in
                                  // f32; every other float input f32 (dloss); the loss f32, the logits' gradient
                                  // in the logits' dtype, rounded once (graph/dtype_rules.h: logits_output_dtype)
constexpr uint8_t kTypeProgram = 4;  // inputs of any float dtypes, typed by attrs.program: the output has its
                                     // last instruction's dtype (graph/ew_program.h)
constexpr uint8_t kTypeLowGrad = 5;  // kTypeSame, but input 0, a gradient dy, may be bf16 or f16 where every other
                                     // input is f32: widened exactly on load, so the result (f32, input 1's dtype)
                                     // has the bits of the same op after a cast of dy to f32 (the rows pass fuses it)
constexpr uint8_t kTypeChannels = 6; // the batchnorm family: the per-element tensors (x, dy, the normalized output,
                                     // dx, a folded weight) of one float dtype D, the per-channel inputs (gamma,
                                     // beta, running statistics) of one dtype, D or f32; a channel's sums (dgamma,
                                     // dbeta) f32 (graph/dtype_rules.h: channel_input, channel_output_dtype)
constexpr AttrMask kAct = attr_bit(AttrId::act);
constexpr AttrMask kProgram = attr_bit(AttrId::program);
}  // namespace op_table

// Columns:
//   inputs, outputs  arity (outputs 0: an update, writing through its inputs; 2: a fused op
//                    with a second result, e.g. a weight gradient and its bias gradient)
//   grad             the inputs the gradient rule (graph/autodiff.cpp) gives a gradient;
//                    kNone: the op has no gradient rule (backward ops, updates, constants)
//   alias            the inputs the output may share memory with: each element is read
//                    before the kernel writes it (kernels/op_call_check.cpp refuses others)
//   attrs            the Attrs fields the op reads: the only ones a graph file may give it
//   flags            kInPlace, kView, kVariadic, kFused, kSameShape, kGuarded, kKeyLengths, kWeightCopy
//   dtype            kTypeSame, kTypeF32, kTypeCast, kTypeLogits, kTypeProgram, kTypeLowGrad or kTypeChannels: the
//                    dtype rule
//                    (graph/dtype_rules.cpp)
//   family           the kernel files: kernels/cpu/<family>.cpp and kernels/cuda/<family>.cu
// clang-format off
#define TG_OP_LIST(X)                                                                                          \
  /* name,              in,out, grad,             alias,      attrs,                  flags,                     dtype,     family */ \
  X(matmul,               2, 1, kIn0|kIn1,        kNone,      kTransA|kTransB,        kPlain,                    kTypeSame, matmul) /* C = op(A) op(B); rank 2, or rank 3 batched */ \
  X(add,                  2, 1, kIn0|kIn1,        kAll,       0,                      kInPlace|kSameShape,       kTypeSame, elementwise) \
  X(sub,                  2, 1, kIn0|kIn1,        kAll,       0,                      kInPlace|kSameShape,       kTypeSame, elementwise) \
  X(mul,                  2, 1, kIn0|kIn1,        kAll,       0,                      kInPlace|kSameShape,       kTypeSame, elementwise) \
  X(scale,                1, 1, kIn0,             kAll,       kAlpha,                 kInPlace|kSameShape,       kTypeSame, elementwise) /* y = alpha * x */ \
  X(bias_add,             2, 1, kIn0|kIn1,        kAll,       0,                      kInPlace,                  kTypeSame, bias) /* x[..., n] + b[n] */ \
  X(relu,                 1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) \
  X(relu_grad,            2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, y) -> dx */ \
  X(gelu,                 1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* tanh approximation */ \
  X(gelu_grad,            2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, x) -> dx */ \
  X(tanh,                 1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* y = tanh(x) */ \
  X(tanh_grad,            2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, y) -> dy (1 - y^2); y: tanh's output */ \
  X(sigmoid,              1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* y = 1 / (1 + exp(-x)) */ \
  X(sigmoid_grad,         2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, y) -> dy y (1 - y); y: sigmoid's output */ \
  X(exp,                  1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* y = exp(x); its gradient is mul(dy, y) */ \
  X(log,                  1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* y = log(x), natural, x > 0 */ \
  X(log_grad,             2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, x) -> dy / x; x: log's input */ \
  X(gelu_erf,             1, 1, kIn0,             kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* exact GELU: 0.5 x (1 + erf(x / sqrt 2)) */ \
  X(gelu_erf_grad,        2, 1, kNone,            kAll,       0,                      kInPlace|kSameShape,       kTypeSame, activation) /* (dy, x) -> dx; x: gelu_erf's input */ \
  X(softmax,              1, 1, kIn0,             kAll,       kAxis|kAlpha,           kPlain,                    kTypeSame, softmax) /* softmax(alpha x), last axis */ \
  X(softmax_grad,         2, 1, kNone,            kAll,       kAlpha,                 kSameShape,                kTypeSame, softmax) /* (dy, y) -> alpha dx */ \
  X(layernorm,            3, 1, kIn0|kIn1|kIn2,   kAll,       kEps,                   kPlain,                    kTypeSame, layernorm) /* (x, gamma, beta), last axis */ \
  X(layernorm_grad_x,     3, 1, kNone,            kAll,       kEps,                   kPlain,                    kTypeLowGrad, layernorm) /* (dy, x, gamma) -> dx */ \
  X(layernorm_grad_gamma, 2, 1, kNone,            kNone,      kEps,                   kPlain,                    kTypeLowGrad, layernorm) /* (dy, x) -> dgamma */ \
  X(reduce_sum,           1, 1, kIn0,             kNone,      kAxis,                  kPlain,                    kTypeSame, reduce) /* over attrs.axis, which is removed */ \
  X(reduce_mean,          1, 1, kIn0,             kNone,      kAxis,                  kPlain,                    kTypeSame, reduce) \
  X(broadcast,            1, 1, kIn0,             kNone,      kAxis|kSize,            kPlain,                    kTypeSame, reduce) /* inserts attrs.axis of attrs.size */ \
  X(transpose,            1, 1, kIn0,             kNone,      kPerm,                  kPlain,                    kTypeSame, layout) /* attrs.perm */ \
  X(reshape,              1, 1, kIn0,             kAll,       kShape,                 kView,                     kTypeSame, layout) /* attrs.shape; a copy when given its own memory */ \
  X(mse_loss,             2, 1, kIn0|kIn1,        kNone,      0,                      kPlain,                    kTypeF32,  loss) /* (pred, target) -> [1], mean */ \
  X(mse_loss_grad,        3, 1, kNone,            kIn0|kIn1,  0,                      kPlain,                    kTypeF32,  loss) /* (pred, target, dloss) -> dpred */ \
  X(padded_mse_loss,      3, 1, kIn0|kIn1,        kNone,      0,                      kPlain,                    kTypeF32,  loss) /* (pred, target, count[1]): mean over the first count elements */ \
  X(padded_mse_loss_grad, 4, 1, kNone,            kIn0|kIn1,  0,                      kPlain,                    kTypeF32,  loss) /* (pred, target, count, dloss) -> dpred, 0 past count */ \
  X(cross_entropy,        2, 1, kIn0,             kNone,      kIgnoreIndex | kSize,   kPlain,                    kTypeLogits,loss) /* (logits[n,c], labels[n] i32/i64/f32) -> [1], mean over the rows not ignored; size > 0: the classes are the first size columns */ \
  X(cross_entropy_grad,   3, 1, kNone,            kIn0,       kIgnoreIndex | kSize,   kPlain,                    kTypeLogits,loss) /* (logits, labels, dloss) -> dlogits, 0 in ignored rows and in the columns past size */ \
  X(fill,                 0, 1, kNone,            kNone,      kShape|kValue,          kPlain,                    kTypeF32,  elementwise) /* attrs.shape filled with attrs.value */ \
  X(copy,                 1, 1, kIn0,             kAll,       0,                      kSameShape,                kTypeSame, elementwise) \
  X(cast,                 1, 1, kIn0,             kNone,      kTo,                    kSameShape,                kTypeCast, elementwise) /* attrs.to: rounded to nearest even when it narrows */ \
  X(where,                3, 1, kIn1|kIn2,        kNone,      0,                      kPlain,                    kTypeSame, elementwise) /* (cond i32/i64/f32, a, b) -> cond != 0 ? a : b; numpy broadcasting (graph/broadcast.h) */ \
  X(conv2d,               2, 1, kIn0|kIn1,        kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (x[N,C,H,W], w[K,C/groups,R,S]) -> [N,K,P,Q]; attrs.conv */ \
  X(conv2d_grad_input,    3, 1, kNone,            kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (dy, w, x) -> dx; x gives only its shape */ \
  X(conv2d_grad_weight,   3, 1, kNone,            kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (dy, x, w) -> dw; w gives only its shape */ \
  X(max_pool2d,           1, 1, kIn0,             kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* [N,C,H,W] -> [N,C,P,Q]; window attrs.conv.kernel */ \
  X(max_pool2d_grad,      2, 1, kNone,            kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (dy, x) -> dx: dy to each window's first maximum */ \
  X(avg_pool2d,           1, 1, kIn0,             kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* padding not counted */ \
  X(avg_pool2d_grad,      2, 1, kNone,            kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (dy, x) -> dx; x gives only its shape */ \
  X(batch_norm,           3, 1, kIn0|kIn1|kIn2,   kNone,      kEps|kChannelsLast,     kPlain,                    kTypeChannels, batchnorm) /* (x[N,C,..], gamma[C], beta[C]): training form, batch statistics per channel */ \
  X(batch_norm_grad_x,    3, 1, kNone,            kNone,      kEps|kChannelsLast,     kPlain,                    kTypeChannels, batchnorm) /* (dy, x, gamma) -> dx */ \
  X(batch_norm_grad_gamma,2, 1, kNone,            kNone,      kEps|kChannelsLast,     kPlain,                    kTypeChannels, batchnorm) /* (dy, x) -> dgamma[C] */ \
  X(batch_norm_grad_beta, 1, 1, kNone,            kNone,      kChannelsLast,          kPlain,                    kTypeChannels, batchnorm) /* (dy) -> dbeta[C]: dy summed per channel */ \
  X(batch_norm_inference, 4, 1, kNone,            kNone,      kEps|kChannelsLast,     kPlain,                    kTypeChannels, batchnorm) /* (x, gamma, beta, stats[2,C]: running mean, running var) */ \
  X(batch_norm_stats_update,2,0,kNone,           kNone,      kMomentum|kChannelsLast,kPlain,                    kTypeChannels, batchnorm) /* (stats[2,C], x[N,C,..]), in place: stats = (1-m) stats + m (mean, unbiased var) of x */ \
  X(concat,               1, 1, kIn0,             kNone,      kAxis,                  kVariadic,                 kTypeSame, layout) /* inputs joined along attrs.axis; every other dim equal */ \
  X(slice,                1, 1, kIn0,             kNone,      kAxis|kStart|kSize,     kPlain,                    kTypeSame, layout) /* x[.., start : start + size, ..] along attrs.axis (concat's gradient; its own: dy between zeros) */ \
  X(sgd,                  2, 0, kNone,            kNone,      kLr,                    kGuarded,                  kTypeF32,  optimizer) /* (param, grad[, found]): param -= lr*grad, in place */ \
  X(sgd_momentum,         3, 0, kNone,            kNone,      kLr|kMomentum,          kGuarded,                  kTypeF32,  optimizer) /* (param, grad, velocity[, found]), in place */ \
  X(unscale,              2, 1, kNone,            kIn0,       0,                      kInPlace,                  kTypeF32,  loss_scale) /* (grad, scale[1]) -> grad * (1 / scale) */ \
  X(found_inf,            2, 1, kNone,            kNone,      0,                      kPlain,                    kTypeF32,  loss_scale) /* (x, found[1]) -> [1]: 1 if found != 0 or x holds an inf or a nan, else 0 */ \
  X(update_scale,         2, 0, kNone,            kNone,      kScaler,                kPlain,                    kTypeF32,  loss_scale) /* (scaler[3]: scale, growth tracker, skipped steps; found[1]), in place */ \
  X(adamw,                5, 0, kNone,            kNone,      kLr|kAdam,              kGuarded,                  kTypeF32,  adamw) /* (param, grad, exp_avg, exp_avg_sq, step[1][, found]), in place: torch.optim.AdamW */ \
  X(global_norm,          1, 1, kNone,            kNone,      0,                      kVariadic,                 kTypeF32,  clip) /* any inputs -> [1]: sqrt of the sum of every element's square */ \
  X(clip_by_norm,         2, 1, kNone,            kIn0,       kMaxNorm,               kInPlace,                  kTypeF32,  clip) /* (g, norm[1]) -> g * min(1, max_norm / (norm + 1e-6)) */ \
  X(embedding,            2, 1, kIn0,             kNone,      0,                      kPlain,                    kTypeSame, embedding) /* (table[V,D], ids[...] i32/i64) -> [..., D]: row ids[i] of the table */ \
  X(embedding_grad,       2, 1, kNone,            kNone,      kSize,                  kPlain,                    kTypeSame, embedding) /* (dy[..., D], ids) -> dtable[attrs.size = V, D]: each dy row added to its id's row, in id order */ \
  X(dropout,              2, 1, kIn0,             kIn0,       kP|kRngStream,          kInPlace,                  kTypeSame, dropout) /* (x, rng[2] i64: seed, offset) -> x * keep / (1 - p), keep drawn by Philox (kernels/philox.h) */ \
  X(rng_advance,          1, 0, kNone,            kNone,      0,                      kPlain,                    kTypeF32,  dropout) /* (rng[2] i64), in place: offset += 1, the next step's fresh mask */ \
  X(all_reduce,           1, 1, kNone,            kIn0,       0,                      kInPlace|kSameShape,       kTypeF32,  collective) /* a gradient bucket summed over the backend's ranks, divided by their count (kernels/communicator.h) */ \
  X(conv_transpose2d,     2, 1, kIn0|kIn1,        kNone,      kConv,                  kPlain,                    kTypeSame, conv) /* (x[N,C,H,W], w[C,K/groups,R,S]) -> [N,K,P,Q]: conv2d_grad_input of x as dy; attrs.conv with output_padding */ \
  /* Fused ops, made by the graph passes of the static compiler (static/passes). */                         \
  X(linear,               3, 1, kNone,            kNone,      kTransB|kAct,           kFused,                    kTypeSame, matmul) /* act(x op(w) + b): a GEMM with its epilogue */ \
  X(linear_add,           4, 1, kNone,            kNone,      kTransB,                kFused,                    kTypeSame, matmul) /* x op(w) + b + r: a residual in the GEMM */ \
  X(matmul_add,           3, 1, kNone,            kNone,      kTransA|kTransB,        kFused,                    kTypeSame, matmul) /* op(a) op(b) + c: an accumulated gradient */ \
  X(matmul_act_grad,      3, 1, kNone,            kNone,      kTransA|kTransB|kAct,   kFused,                    kTypeSame, matmul) /* act_grad(op(a) op(b), y): relu_grad (y: relu's output) or gelu_grad (y: gelu's input) */ \
  X(matmul_bias_grad,     2, 2, kNone,            kNone,      0,                      kFused,                    kTypeSame, matmul) /* (a[r,k], dz[r,n]) -> (a^T dz, sum of dz's rows) */ \
  X(matmul_heads,         2, 1, kNone,            kNone,      kTransA|kTransB|kHeads, kFused,                    kTypeSame, matmul) /* batched op(a) op(b), operands and result packed [B*H, r, c] or head views [B, r, H*c] (attrs.heads) */ \
  X(layernorm_grad_params,2, 2, kNone,            kNone,      kEps,                   kFused,                    kTypeLowGrad, layernorm) /* (dy, x) -> (dgamma, dbeta) */ \
  X(layernorm_cast,       3, 1, kNone,            kNone,      kEps|kTo,               kFused,                    kTypeCast, layernorm) /* (x, gamma, beta) -> layernorm in attrs.to's dtype, rounded once: layernorm then cast */ \
  X(layernorm_grad_x_acc, 4, 1, kNone,            kAll,       kEps,                   kFused,                    kTypeLowGrad, layernorm) /* (dy, x, gamma, acc) -> acc + layernorm_grad_x(dy, x, gamma), rounded once */ \
  X(fused_elementwise,    1, 1, kNone,            kAll,       kProgram,               kFused|kVariadic|kInPlace, kTypeProgram, elementwise) /* attrs.program over 1..8 inputs: a chain in one kernel (graph/ew_program.h) */ \
  X(sgd_multi,            2, 0, kNone,            kNone,      kLr,                    kFused|kVariadic|kGuarded, kTypeF32,  optimizer) /* (param, grad) groups[, found]: every sgd of a step in one launch */ \
  X(sgd_momentum_multi,   3, 0, kNone,            kNone,      kLr|kMomentum,          kFused|kVariadic|kGuarded, kTypeF32,  optimizer) /* (param, grad, velocity) groups[, found] */ \
  X(matmul_sgd_momentum,  4, 0, kNone,            kNone,      kLr|kMomentum,          kFused,                    kTypeF32,  optimizer) /* (param[k,n], a[r,k], velocity[k,n], dz[r,n]): sgd_momentum with the gradient a^T dz, never stored */ \
  X(adamw_multi,          5, 0, kNone,            kNone,      kLr|kAdam,              kFused|kVariadic|kGuarded, kTypeF32,  adamw) /* (param, grad, exp_avg, exp_avg_sq, step) groups[, found]: every adamw of a step in one launch */ \
  /* The multi updates that also write each parameter's persistent low-precision copy (static/passes/low_copies.cpp). */ \
  X(sgd_multi_cast,       3, 0, kNone,            kNone,      kLr,                    kFused|kVariadic|kGuarded|kWeightCopy, kTypeF32, optimizer) /* (param, grad, param_low) groups[, found]: sgd_multi, then param_low = cast(param) */ \
  X(sgd_momentum_multi_cast,4,0,kNone,            kNone,      kLr|kMomentum,          kFused|kVariadic|kGuarded|kWeightCopy, kTypeF32, optimizer) /* (param, grad, velocity, param_low) groups[, found] */ \
  X(adamw_multi_cast,     6, 0, kNone,            kNone,      kLr|kAdam,              kFused|kVariadic|kGuarded|kWeightCopy, kTypeF32, adamw) /* (param, grad, exp_avg, exp_avg_sq, step, param_low) groups[, found] */ \
  X(batch_norm_fold,      4, 2, kNone,            kNone,      kEps,                   kFused,                    kTypeChannels, batchnorm) /* (w[K,..], gamma[K], beta[K], stats[2,K]) -> (w s, beta - mean s), s = gamma / sqrt(var + eps): inference batch norm folded into the conv before it */ \
  X(batch_norm_grad,      3, 2, kNone,            kNone,      kEps|kChannelsLast,     kFused,                    kTypeChannels, batchnorm) /* (dy, x, gamma) -> (dx, [2, C]: dgamma then dbeta): the three gradients, one read of dy and x for their sums */ \
  X(batch_norm_moments,   3, 2, kNone,            kNone,      kEps|kChannelsLast|kAct,kFused,                    kTypeChannels, batchnorm) /* (x, gamma, beta) -> (act(batch_norm's y), [2, C]: the batch's mean, then its unbiased variance, f32): the running statistics' update reads them instead of x; act none or relu */ \
  X(batch_norm_stats_blend,2,0, kNone,            kNone,      kMomentum,              kFused,                    kTypeF32,  batchnorm) /* (stats[2,C], moments[2,C]), in place: stats = (1-m) stats + m moments (batch_norm_moments' second output) */ \
  X(conv2d_bias_act,      3, 1, kNone,            kNone,      kConv|kAct,             kFused,                    kTypeSame, conv) /* act(conv2d(x, w) + b[K] per channel); act none or relu */ \
  X(conv2d_bias_add_act,  4, 1, kNone,            kNone,      kConv|kAct,             kFused,                    kTypeSame, conv) /* act(conv2d(x, w) + b + r): the residual r [N,K,P,Q] before the activation */ \
  /* Fused attention (graph/attention.h): q, k, v and the output are head views [B, S, heads * dh]. */         \
  X(attention,            3, 1, kIn0|kIn1|kIn2,   kNone,      kAlpha|kHeads|kCausal,  kKeyLengths,               kTypeSame, attention) /* softmax(alpha q k^T, causal: keys <= query; [, lengths]: keys < lengths[b]) v, never storing the scores */ \
  X(attention_lse,        2, 1, kNone,            kNone,      kAlpha|kHeads|kCausal,  kKeyLengths,               kTypeSame, attention) /* (q, k) -> [B*heads, Sq, 2]: each score row's logsumexp as hi + lo */ \
  X(attention_grad,       6, 1, kNone,            kNone,      kAlpha|kHeads|kCausal,  kKeyLengths,               kTypeSame, attention) /* (dout, q, k, v, out, lse) -> [3, B, S, D]: dq, dk, dv */ \
  X(attention_fwd_lse,    3, 2, kNone,            kNone,      kAlpha|kHeads|kCausal,  kFused|kKeyLengths,        kTypeSame, attention) /* (q, k, v) -> (attention's output, attention_lse's pairs): one forward (static/passes/attention.cpp) */
// clang-format on

enum class OpKind : uint8_t {
#define TG_OP_ENUM(name, nin, nout, grad, alias, attrs, flags, dtype, family) name,
  TG_OP_LIST(TG_OP_ENUM)
#undef TG_OP_ENUM
};

constexpr int kNumOps = 0
#define TG_OP_COUNT(name, nin, nout, grad, alias, attrs, flags, dtype, family) +1
    TG_OP_LIST(TG_OP_COUNT)
#undef TG_OP_COUNT
    ;
// Tables indexed by OpKind elsewhere assert their length against this count.
static_assert(kNumOps == 95, "an op was added or removed: update this count and see docs/adding-an-op.md");

// The most inputs a fixed-arity op takes: attention_grad with its key lengths (six, and the
// lengths). Variadic ops (kVariadic) take any multiple of their group, past this count too.
// OpCall::in holds this many inputs, and the dynamic executor applies no op with more.
constexpr int kMaxOpInputs = 7;
// The most outputs an op has (the fused ops with a second result).
constexpr int kMaxOpOutputs = 2;

struct OpTraits {
  const char* name;
  int inputs;
  int outputs;
  uint8_t grad_inputs;
  uint8_t alias_inputs;
  AttrMask attrs;  // with the in_place attribute for kInPlace ops
  uint8_t flags;
  uint8_t dtype_rule;
  const char* family;
};

namespace op_table {
constexpr OpTraits kTraits[] = {
#define TG_OP_TRAITS(name, nin, nout, grad, alias, attrs, flags, dtype, family)                                 \
  {#name, nin, nout, grad, static_cast<uint8_t>((alias) & ((1 << (nin)) - 1)),                                     \
   static_cast<AttrMask>((attrs) | (((flags) & kInPlace) ? attr_bit(AttrId::in_place) : 0)), flags, dtype, #family},
    TG_OP_LIST(TG_OP_TRAITS)
#undef TG_OP_TRAITS
};
static_assert(sizeof(kTraits) / sizeof(kTraits[0]) == kNumOps, "one traits row per op");

// Rules between the columns, checked at compile time.
constexpr bool rows_consistent() {
  for (const OpTraits& t : kTraits) {
    if (t.inputs < 0 || t.inputs > kMaxOpInputs || t.outputs < 0 || t.outputs > kMaxOpOutputs) return false;
    // A guarded fixed-arity update takes its flag in OpCall::in too.
    if ((t.flags & kGuarded) && !(t.flags & kVariadic) && t.inputs + 1 > kMaxOpInputs) return false;
    if ((t.flags & kKeyLengths) && ((t.flags & (kGuarded | kVariadic)) || t.inputs + 1 > kMaxOpInputs)) return false;
    if ((t.flags & kVariadic) && (t.inputs < 1 || t.outputs == 2)) return false;
    const int all = (1 << t.inputs) - 1;
    if ((t.grad_inputs & ~all) || (t.outputs == 0 && t.alias_inputs)) return false;
    // Running in place or as a view means sharing input 0's memory.
    if ((t.flags & (kInPlace | kView)) && !(t.alias_inputs & kIn0)) return false;
    // Ops without inputs have no input 0 to take a shape or a dtype from.
    if (t.inputs == 0 && ((t.flags & kSameShape) || t.dtype_rule != kTypeF32)) return false;
    if (t.dtype_rule == kTypeCast && !(t.attrs & kTo)) return false;
    if (t.dtype_rule == kTypeProgram && !(t.attrs & kProgram)) return false;
    if ((t.flags & kSameShape) && t.outputs != 1) return false;
    // The flag is told apart from the groups by the input count: one more than a multiple.
    if ((t.flags & kGuarded) && (t.outputs != 0 || t.inputs < 2)) return false;
    // The copy is the last member of a multi update's groups, after the parameter and its gradient.
    if ((t.flags & kWeightCopy) && (!(t.flags & kVariadic) || t.outputs != 0 || t.inputs < 3 || t.dtype_rule != kTypeF32))
      return false;
  }
  return true;
}
static_assert(rows_consistent(), "an op table row breaks a rule: see the column comments in graph/op.h");
}  // namespace op_table

inline const OpTraits& op_traits(OpKind op) { return op_table::kTraits[static_cast<int>(op)]; }
inline const char* op_name(OpKind op) { return op_traits(op).name; }
// The input count of a fixed-arity op; the group size of a variadic one.
inline int op_num_inputs(OpKind op) { return op_traits(op).inputs; }
inline int op_num_outputs(OpKind op) { return op_traits(op).outputs; }
// Returns false for an unknown name.
bool parse_op(const std::string& name, OpKind& out);

inline bool op_is_variadic(OpKind op) { return (op_traits(op).flags & op_table::kVariadic) != 0; }
// Whether the update may take loss scaling's found-inf flag as its last input (kGuarded).
inline bool op_can_be_guarded(OpKind op) { return (op_traits(op).flags & op_table::kGuarded) != 0; }
// Whether a node of `op` with `n` inputs has the found-inf flag (its last input).
inline bool op_update_guarded(OpKind op, int n) {
  return op_can_be_guarded(op) && n > op_num_inputs(op) && n % op_num_inputs(op) == 1;
}
// Whether a node of `op` with `n` inputs has the key lengths of the padding mask (its last input).
inline bool op_has_key_lengths(OpKind op, int n) {
  return (op_traits(op).flags & op_table::kKeyLengths) != 0 && n == op_num_inputs(op) + 1;
}
// Whether a node of `op` may have `n` inputs.
inline bool op_arity_ok(OpKind op, int n) {
  const int k = op_num_inputs(op);
  if (op_has_key_lengths(op, n)) return true;
  const int groups = op_update_guarded(op, n) ? n - 1 : n;
  return op_is_variadic(op) ? groups >= k && groups % k == 0 : groups == k;
}
// The inputs of a node of `op` with `n` inputs that are its groups: all but the found-inf flag.
inline int op_group_inputs(OpKind op, int n) { return op_update_guarded(op, n) ? n - 1 : n; }
// "2 inputs", "a multiple of 3 inputs": for messages.
std::string op_arity_text(OpKind op);
// Whether op's kernels are of `family` (the table's last column: "matmul" for the GEMMs).
inline bool op_in_family(OpKind op, std::string_view family) { return family == op_traits(op).family; }
// Whether every input and the output have input 0's shape (the table's kSameShape).
inline bool op_keeps_shape(OpKind op) { return (op_traits(op).flags & op_table::kSameShape) != 0; }
// Whether the op runs in f32 only (the dtype column's kTypeF32).
inline bool op_is_f32_only(OpKind op) { return op_traits(op).dtype_rule == op_table::kTypeF32; }
// Ops made by the graph passes (models and the dynamic executor never apply them).
inline bool op_is_fused(OpKind op) { return (op_traits(op).flags & op_table::kFused) != 0; }

// Ops that write through their inputs rather than into a new value.
inline bool op_is_update(OpKind op) { return op_traits(op).outputs == 0; }
// Ops whose output aliases input 0 (no memory of their own).
inline bool op_is_view(OpKind op) { return (op_traits(op).flags & op_table::kView) != 0; }
// Ops with a gradient rule.
inline bool op_is_differentiable(OpKind op) { return op_traits(op).grad_inputs != 0; }
// Of a variadic op: whether that position of its group has one.
inline bool op_has_gradient_for(OpKind op, int input) {
  const int pos = (op_traits(op).flags & op_table::kVariadic) ? input % op_traits(op).inputs : input;
  return (op_traits(op).grad_inputs >> pos) & 1;
}
// Ops the static planner may run in place over input 0.
inline bool op_can_run_in_place(OpKind op) { return (op_traits(op).flags & op_table::kInPlace) != 0; }
// Whether the output may share memory with input `input` (of a variadic op: with
// that position of its group).
inline bool op_output_may_alias(OpKind op, int input) {
  const int pos = (op_traits(op).flags & op_table::kVariadic) ? input % op_traits(op).inputs : input;
  return (op_traits(op).alias_inputs >> pos) & 1;
}
inline bool op_reads_attr(OpKind op, AttrId a) { return (op_traits(op).attrs & attr_bit(a)) != 0; }
// Whether each group of an update ends with the parameter's low-precision copy (kWeightCopy).
inline bool op_update_writes_copy(OpKind op) { return (op_traits(op).flags & op_table::kWeightCopy) != 0; }
// Whether input `input` of a node of `op` is a group's low-precision copy.
inline bool op_input_is_copy(OpKind op, int input, int num_inputs) {
  return op_update_writes_copy(op) && input < op_group_inputs(op, num_inputs) &&
         input % op_traits(op).inputs == op_traits(op).inputs - 1;
}
// Whether input `input` of a multi-tensor update (sgd_multi, adamw_multi and their *_cast
// forms) is a group's gradient, position 1, which may be bf16 or f16: the update widens it,
// exactly, as the cast before it would (the optimizer pass reads an autocast gradient
// without that cast).
inline bool op_input_is_multi_grad(OpKind op, int input, int num_inputs) {
  return op_is_update(op) && op_is_variadic(op) && input < op_group_inputs(op, num_inputs) &&
         input % op_traits(op).inputs == 1;
}
// Whether input `input` of dtype `dt` is such a gradient in bf16 or f16 (the one exception to
// an f32-only update's dtypes besides the weights' copies).
inline bool op_input_is_low_multi_grad(OpKind op, int input, int num_inputs, DType dt) {
  return (dt == DType::BF16 || dt == DType::F16) && op_input_is_multi_grad(op, input, num_inputs);
}
// Whether an update of `num_inputs` inputs writes input `input` in place: every update
// writes the parameter (update_scale: its state), at position 0 of its group, one with
// momentum the velocity, at position 2, and adamw its moments and step count, at positions
// 2..4, and batch_norm_stats_update its running statistics, at position 0; the *_cast
// updates their copy too, last in the group; the other inputs (the gradient, or what
// matmul_sgd_momentum makes it from, the batch, and the found-inf flag) are only read.
inline bool op_update_writes(OpKind op, int input, int num_inputs) {
  if (!op_is_update(op) || input >= op_group_inputs(op, num_inputs)) return false;
  if (op_input_is_copy(op, input, num_inputs)) return true;
  const int pos = input % op_traits(op).inputs;
  if (op_reads_attr(op, AttrId::adam)) return pos != 1;
  return pos == 0 || (pos == 2 && op_reads_attr(op, AttrId::momentum));
}
// Whether each group of an update has a velocity (input 2 of the group).
inline bool op_update_has_velocity(OpKind op) {
  return op_is_update(op) && op_traits(op).inputs >= 3 && op_reads_attr(op, AttrId::momentum);
}

}  // namespace tg
