// GPT-2's bytes per role (graph/gpt2_model.cpp), value by value of the recorded step.
// N = batch * seq tokens, D = d_model, F = mlp_ratio * D, V = vocab, C = context, S = seq,
// H = heads, L = layers; f32 values (4 bytes), the i64 ids and labels 8 bytes an element.
#include "experiments/memory/formulas.h"

namespace tg::memory {

namespace {
constexpr int64_t kF32 = 4;
void set_bytes(Predicted& p, MemRole r, int64_t bytes) { p.bytes[static_cast<size_t>(r)] = bytes; }
}  // namespace

Predicted predict_gpt2(const Gpt2Config& c, bool training, bool momentum) {
  const int64_t N = c.batch * c.seq, D = c.d_model, F = c.mlp_ratio * D, V = c.vocab, C = c.context, S = c.seq;
  const int64_t L = c.layers, ND = N * D, NF = N * F;
  const int64_t id_bytes = c.ids_dtype == DType::I64 ? 8 : 4;
  // wte [V, D] (tied with the head), wpe [C, D], ln_f (2D); per block ln1 and ln2 (4D), the
  // q, k, v, o weights and biases (4 D^2 + 4D), fc (D F + F), proj (F D + D).
  const int64_t P = V * D + C * D + 2 * D + L * (4 * D * D + 2 * D * F + 9 * D + F);
  Predicted p;
  set_bytes(p, MemRole::parameters, P * kF32);
  if (!training) {
    set_bytes(p, MemRole::inputs, N * id_bytes);
    // The token rows, the position rows broadcast over the batch, their sum, ln_f (4 ND) and
    // the first seq rows of wpe (S D); per block ln1, q, k, v (matmul and bias each), the
    // attention, o (matmul, bias), the residual sum, ln2, proj (matmul, bias), the residual sum
    // (15 ND) and fc's matmul, bias and gelu (3 NF); the logits (N V).
    set_bytes(p, MemRole::workspace, (4 * ND + S * D + L * (15 * ND + 3 * NF) + N * V) * kF32);
    return p;
  }
  set_bytes(p, MemRole::inputs, 2 * N * id_bytes);  // ids, labels
  set_bytes(p, MemRole::gradients, P * kF32);
  set_bytes(p, MemRole::momentum, momentum ? P * kF32 : 0);
  // Saved: the embedding sum x0; per block ln1's output, q, k, v (after their biases), the
  // attention's output, the residual sum that ln2 reads, ln2's output, the block's output
  // (8 ND) and fc's output and gelu's (2 NF).
  set_bytes(p, MemRole::activations, (ND + L * (8 * ND + 2 * NF)) * kF32);
  // Not saved, forward and backward: per block 18 ND and 3 NF of matmul outputs before their
  // biases, gradients and their sums, attention_grad's [3, N, D] (dq, dk, dv: the planner makes
  // its three slices views of it, static/planner.h) and the
  // logsumexp rows it recomputes [B H, S, 2]; once: the token rows, the broadcast positions,
  // ln_f's output, its gradient and the head's input gradient (5 ND), the logits and their
  // gradient (2 N V), wpe's slice and the positions' gradient (2 S D; S D when seq is the
  // whole context and the gradient needs no zero rows past seq, (C - S) D), the head's and the embedding's wte gradients (2 V D), the loss and
  // the backward's seed.
  const int64_t per_block = 18 * ND + 3 * NF + 3 * ND + c.batch * c.heads * S * 2;
  const int64_t once = 5 * ND + 2 * N * V + (S < C ? 2 : 1) * S * D + (C - S) * D + 2 * V * D + 2;
  set_bytes(p, MemRole::workspace, (L * per_block + once) * kF32);
  return p;
}

}  // namespace tg::memory
