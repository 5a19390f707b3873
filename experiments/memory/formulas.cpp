// The formulas, term by term. f32 everywhere: 4 bytes per element. Each term
// names the values it counts; docs/memory.md has the same derivation in prose.
#include "experiments/memory/formulas.h"

#include <vector>

namespace tg::memory {

namespace {
constexpr int64_t kF32 = 4;
void set(Predicted& p, MemRole r, int64_t elements) { p.bytes[static_cast<size_t>(r)] = elements * kF32; }
}  // namespace

const char* mem_role_name(MemRole r) {
  switch (r) {
    case MemRole::parameters: return "parameters";
    case MemRole::gradients: return "gradients";
    case MemRole::momentum: return "momentum";
    case MemRole::activations: return "activations";
    case MemRole::workspace: return "workspace";
    case MemRole::inputs: return "inputs";
  }
  return "?";
}

Predicted with_adamw_state(Predicted p, int64_t param_tensors) {
  // The trained parameters: those with a gradient (not batch norm's running statistics).
  const int64_t P = p.at(MemRole::gradients) / kF32;
  set(p, MemRole::momentum, 2 * P + param_tensors);
  return p;
}

int64_t Predicted::total() const {
  int64_t t = 0;
  for (int64_t b : bytes) t += b;
  return t;
}

// MLP: dims d0 = in, d1..d(L-1) = width, dL = out; B = batch, L = depth, W = width, O = out.
Predicted predict_mlp(const MlpConfig& c, bool training, bool momentum) {
  const int64_t B = c.batch, W = c.width, O = c.out, L = c.depth;
  std::vector<int64_t> d(static_cast<size_t>(L + 1), W);
  d.front() = c.in;
  d.back() = O;
  int64_t P = 0;  // sum over layers of W_l [d(l-1), d(l)] + b_l [d(l)]
  for (size_t l = 1; l < d.size(); ++l) P += d[l - 1] * d[l] + d[l];
  const int64_t hidden = B * W * (L - 1);  // one [B, W] per hidden layer
  Predicted p;
  set(p, MemRole::parameters, P);
  if (!training) {
    set(p, MemRole::inputs, B * c.in);  // x; the inference graph prunes the target
    // per layer matmul + bias_add outputs, plus the hidden relus: 3 [B,W] per hidden layer, 2 [B,O]
    set(p, MemRole::workspace, 3 * hidden + 2 * B * O);
    return p;
  }
  set(p, MemRole::inputs, B * c.in + B * O);  // x, target
  set(p, MemRole::gradients, P);              // one gradient per parameter
  set(p, MemRole::momentum, momentum ? P : 0);  // one velocity per parameter (sgd_momentum)
  // Saved for backward: each hidden relu output (relu_grad reads it, and the next
  // matmul's weight gradient A^T dy reads it). bias_add outputs are read by no rule.
  set(p, MemRole::activations, hidden);
  // Forward: matmul + bias_add outputs of every layer (the last bias_add is the
  // prediction), the loss [1]. Backward: the seed [1], d prediction [B,O], per
  // hidden layer relu_grad [B,W] and dA = dy W^T [B,W] (layer 1's dA is not
  // needed: x is an input).
  set(p, MemRole::workspace, (2 * hidden + 2 * B * O + 1) + (1 + B * O + 2 * hidden));
  return p;
}

// Transformer block: N = batch*seq tokens, D = d_model, F = mlp_ratio*D,
// A = batch*heads*seq*seq (one attention matrix per head).
Predicted predict_transformer(const TransformerConfig& c, bool training, bool momentum) {
  const int64_t N = c.batch * c.seq, D = c.d_model, F = c.mlp_ratio * D, A = c.batch * c.heads * c.seq * c.seq;
  // ln1, ln2 (gamma, beta: 4D); q, k, v, o (D*D + D each); fc1 (D*F + F); fc2 (F*D + D)
  const int64_t P = 4 * D + 4 * (D * D + D) + (D * F + F) + (F * D + D);
  Predicted p;
  set(p, MemRole::parameters, P);
  if (!training) {
    set(p, MemRole::inputs, N * D);
    // ND: ln1, q/k/v (matmul, bias_add, transpose each), ctx, its transpose, o
    // (matmul, bias_add), a, ln2, fc2 (matmul, bias_add), y = 19;
    // A: scores, scaled, softmax = 3; NF: fc1 matmul, bias_add, gelu = 3. Reshapes are views.
    set(p, MemRole::workspace, 19 * N * D + 3 * A + 3 * N * F);
    return p;
  }
  set(p, MemRole::inputs, 2 * N * D);  // x, target
  set(p, MemRole::gradients, P);
  set(p, MemRole::momentum, momentum ? P : 0);
  // Saved: ln1 out, a, ln2 out (3 ND); softmax out (A, read by softmax_grad and by
  // P·V's gradient); fc1 out and gelu out (2 NF). q, k, v after the head split and the
  // merged heads are saved too, but as reshape views of transpose outputs that no rule
  // reads directly: bytes are counted by the role of the value that owns the storage
  // (static/planner.h role_bytes), so those 4 ND land in workspace below.
  set(p, MemRole::activations, 3 * N * D + A + 2 * N * F);
  // Forward not saved: q/k/v matmul + bias_add (6 ND), scores and scaled (2 A), ctx (ND),
  // o matmul + bias_add (2 ND), fc1 matmul (NF), fc2 matmul + bias_add (2 ND), y (ND), loss (1).
  // Plus the 4 transpose outputs under the saved views (q, k, v split; merged heads).
  const int64_t fwd = 16 * N * D + 2 * A + N * F + 1;
  // Backward: seed (1), dy (ND), d fc2-in and gelu_grad (2 NF), d ln2-in, ln2 grad_x, the
  // sum of a's two gradients, d merged, its transpose, dV, dQ, dK, three head-merge
  // transposes, three d(ln1 out) parts and their two sums (17 ND); dP, softmax_grad, scale (3 A).
  const int64_t bwd = 1 + 17 * N * D + 2 * N * F + 3 * A;
  set(p, MemRole::workspace, fwd + bwd);
  return p;
}

}  // namespace tg::memory
