// The formulas by role and dtype under autocast (graph/precision.h), term by term, in
// elements; f32 values take 4 bytes, the low type's (bf16 or f16) 2. docs/mixed-precision.md
// has the same derivation in prose. fp32 and tf32 record the model as written: formulas.cpp.
#include <vector>

#include "experiments/memory/precision_roles.h"

namespace tg::memory {

namespace {

constexpr DType kF32 = DType::F32;

struct Builder {
  DType low;
  PrecisionPredicted out;
  int64_t copies_saved = 0;  // weight-copy elements backward reads: the graph calls them activations

  void add(PrecRole r, DType d, int64_t elements) { out.bytes.at(r, d) += elements * dtype_size(d); }
  // The six graph roles: each role's bytes, with the weight copies split between
  // activations (copies_saved) and workspace (the rest).
  PrecisionPredicted finish() {
    const DtypeRoleBytes& b = out.bytes;
    auto set = [&](MemRole r, int64_t bytes) { out.graph_roles.bytes[static_cast<size_t>(r)] = bytes; };
    const int64_t saved = copies_saved * dtype_size(low);
    set(MemRole::parameters, b.role(PrecRole::parameters));
    set(MemRole::gradients, b.role(PrecRole::gradients));
    set(MemRole::momentum, b.role(PrecRole::momentum));
    set(MemRole::activations, b.role(PrecRole::activations) + saved);
    set(MemRole::workspace, b.role(PrecRole::workspace) + b.role(PrecRole::weight_copies) - saved);
    set(MemRole::inputs, b.role(PrecRole::inputs));
    return out;
  }
};

// The f32 formula as it is: every role f32, no copies.
PrecisionPredicted all_f32(const Predicted& p) {
  PrecisionPredicted out;
  out.graph_roles = p;
  const PrecRole same[] = {PrecRole::parameters, PrecRole::gradients, PrecRole::momentum,
                           PrecRole::activations, PrecRole::workspace, PrecRole::inputs};
  for (int r = 0; r < kNumMemRoles; ++r) out.bytes.at(same[r], kF32) = p.bytes[static_cast<size_t>(r)];
  return out;
}

// Master weights, their gradients and momentum: f32, one element per parameter, whatever
// the precision (the optimizer updates the f32 weights; each gradient comes back through
// its cast to f32).
void master_state(Builder& f, int64_t P, bool training, bool momentum) {
  f.add(PrecRole::parameters, kF32, P);
  if (!training) return;
  f.add(PrecRole::gradients, kF32, P);
  if (momentum) f.add(PrecRole::momentum, kF32, P);
}

}  // namespace

// MLP (formulas.cpp's names: B, W = width, O = out, L = depth, P parameters, of which Pc
// are cast: all of them, each weight for its GEMM, each bias for its bias_add).
PrecisionPredicted predict_mlp_precision(const MlpConfig& c, Precision p, bool training, bool momentum) {
  if (precision_dtype(p) == kF32) return all_f32(predict_mlp(c, training, momentum));
  const int64_t B = c.batch, W = c.width, O = c.out, L = c.depth;
  std::vector<int64_t> d(static_cast<size_t>(L + 1), W);
  d.front() = c.in;
  d.back() = O;
  int64_t P = 0, first_w = d[0] * d[1];
  for (size_t l = 1; l < d.size(); ++l) P += d[l - 1] * d[l] + d[l];
  const int64_t hidden = B * W * (L - 1);
  Builder f{precision_dtype(p), {}};
  const DType lo = f.low;
  master_state(f, P, training, momentum);
  f.add(PrecRole::weight_copies, lo, P);
  if (!training) {
    f.add(PrecRole::inputs, kF32, B * c.in);
    // x cast to the low type, per layer matmul + bias_add, the hidden relus: all low.
    f.add(PrecRole::workspace, lo, B * c.in + 3 * hidden + 2 * B * O);
    return f.finish();
  }
  f.add(PrecRole::inputs, kF32, B * c.in + B * O);
  // Saved: x's low copy (read by layer 1's weight gradient; x itself is an input), the
  // hidden relu outputs (low), the prediction's f32 copy the loss reads (mse_loss is f32).
  f.add(PrecRole::activations, lo, B * c.in + hidden);
  f.add(PrecRole::activations, kF32, B * O);
  // Weight copies backward reads: every weight but layer 1's (dA = dy W^T; layer 1 needs
  // no dA). The bias copies are read by no rule.
  f.copies_saved = P - first_w;
  for (size_t l = 1; l < d.size(); ++l) f.copies_saved -= d[l];
  // f32: the loss, the seed, the loss's gradient [B,O]. Low: forward matmul and bias_add
  // outputs (the last is the prediction); backward d prediction (the cast of the loss's
  // gradient), per hidden layer relu_grad and dA, and per parameter its low gradient
  // (the weight-gradient GEMM's and reduce_sum's output, cast to the f32 gradient).
  f.add(PrecRole::workspace, kF32, 2 + B * O);
  f.add(PrecRole::workspace, lo, (2 * hidden + 2 * B * O) + (B * O + 2 * hidden) + P);
  return f.finish();
}

// Transformer block (formulas.cpp's names: N tokens, D, F, A, P). Every parameter but the
// layer norms' gamma and beta (4D, read in f32) is cast: Pc = P - 4D.
PrecisionPredicted predict_transformer_precision(const TransformerConfig& c, Precision p, bool training,
                                                 bool momentum) {
  if (precision_dtype(p) == kF32) return all_f32(predict_transformer(c, training, momentum));
  const int64_t N = c.batch * c.seq, D = c.d_model, F = c.mlp_ratio * D, A = c.batch * c.heads * c.seq * c.seq;
  const int64_t P = 4 * D + 4 * (D * D + D) + (D * F + F) + (F * D + D), Pc = P - 4 * D;
  Builder f{precision_dtype(p), {}};
  const DType lo = f.low;
  master_state(f, P, training, momentum);
  f.add(PrecRole::weight_copies, lo, Pc);
  // Forward values in f32: the two layer-norm outputs, the scores' f32 copy and the
  // softmax (A each), the attention output and fc2's output cast back to f32 for the
  // residual adds, the residual a, the block's output y (ND each but A).
  // In the low type: ln1's and ln2's copies, q/k/v (matmul, bias_add, transpose each),
  // ctx and its transpose, o and fc2 (matmul, bias_add each): 17 ND; the scores, scaled,
  // the softmax's copy (3 A); fc1's matmul, bias_add and gelu (3 NF).
  if (!training) {
    f.add(PrecRole::inputs, kF32, N * D);
    f.add(PrecRole::workspace, kF32, 6 * N * D + 2 * A);
    f.add(PrecRole::workspace, lo, 17 * N * D + 3 * A + 3 * N * F);
    return f.finish();
  }
  f.add(PrecRole::inputs, kF32, 2 * N * D);
  // Saved in f32: the softmax (softmax_grad reads it) and a. In the low type: ln1's and
  // ln2's copies (the GEMMs' weight gradients read them, not the f32 outputs), the
  // softmax's copy (P·V's gradient), fc1's output and gelu's (2 NF).
  f.add(PrecRole::activations, kF32, A + N * D);
  f.add(PrecRole::activations, lo, 2 * N * D + A + 2 * N * F);
  f.copies_saved = 4 * D * D + 2 * D * F;  // the six weights: dX = dY W^T reads each
  // f32 workspace. Forward: ln1, ln2, the two casts back for the residuals, y (5 ND), the
  // scores' f32 copy (A), the loss. Backward: the seed, dy, the gradients through ln2's
  // and ln1's input casts, ln2's grad_x, the sum of a's two gradients (5 ND), the
  // gradient through the softmax's cast and softmax_grad (2 A).
  f.add(PrecRole::workspace, kF32, (5 * N * D + A + 1) + (1 + 5 * N * D + 2 * A));
  // Low workspace. Forward: q/k/v (9 ND), ctx and its transpose, o's and fc2's matmul and
  // bias_add (6 ND); scores, scaled (2 A); fc1's matmul (NF). Backward: dy's cast, fc1's
  // dX, the cast of a's gradient, d merged and its transpose, dV, dQ, dK, three head-merge
  // transposes, three d(ln1 copy) parts and their two sums (16 ND); dP, its cast back,
  // the scale's gradient (3 A); fc2's dX and gelu_grad (2 NF); each cast parameter's low
  // gradient (Pc).
  f.add(PrecRole::workspace, lo, (15 * N * D + 2 * A + N * F) + (16 * N * D + 3 * A + 2 * N * F + Pc));
  return f.finish();
}

}  // namespace tg::memory
