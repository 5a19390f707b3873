#pragma once
// The op set of the IR. Every op has shape inference (shape_inference.cpp), a
// gradient rule (autodiff), a CPU reference kernel and a CUDA kernel.
#include <cstdint>
#include <string>

namespace tg {

#define TG_OP_LIST(X)                                                      \
  /* name,              inputs, outputs */                                 \
  X(matmul,              2, 1) /* C = op(A) op(B); rank 2, or rank 3 batched */ \
  X(add,                 2, 1)                                             \
  X(sub,                 2, 1)                                             \
  X(mul,                 2, 1)                                             \
  X(scale,               1, 1) /* y = alpha * x */                         \
  X(bias_add,            2, 1) /* x[..., n] + b[n] */                      \
  X(relu,                1, 1) /* in_place capable */                      \
  X(relu_grad,           2, 1) /* (dy, y) -> dx */                         \
  X(gelu,                1, 1) /* tanh approximation */                    \
  X(gelu_grad,           2, 1) /* (dy, x) -> dx */                         \
  X(softmax,             1, 1) /* last axis */                             \
  X(softmax_grad,        2, 1) /* (dy, y) -> dx */                         \
  X(layernorm,           3, 1) /* (x, gamma, beta), last axis */           \
  X(layernorm_grad_x,    3, 1) /* (dy, x, gamma) -> dx */                  \
  X(layernorm_grad_gamma,2, 1) /* (dy, x) -> dgamma */                     \
  X(reduce_sum,          1, 1) /* over attrs.axis, which is removed */     \
  X(reduce_mean,         1, 1)                                             \
  X(broadcast,           1, 1) /* inserts attrs.axis of attrs.size */      \
  X(transpose,           1, 1) /* attrs.perm */                            \
  X(reshape,             1, 1) /* a view: attrs.shape */                   \
  X(mse_loss,            2, 1) /* (pred, target) -> [1], mean */           \
  X(mse_loss_grad,       3, 1) /* (pred, target, dloss) -> dpred */        \
  X(padded_mse_loss,     3, 1) /* (pred, target, count[1]): mean over the first count elements */ \
  X(padded_mse_loss_grad,4, 1) /* (pred, target, count, dloss) -> dpred, 0 past count */ \
  X(cross_entropy,       2, 1) /* (logits[n,c], labels[n]) -> [1], mean */ \
  X(cross_entropy_grad,  3, 1) /* (logits, labels, dloss) -> dlogits */    \
  X(fill,                0, 1) /* attrs.shape filled with attrs.value */   \
  X(copy,                1, 1)                                             \
  X(sgd,                 2, 0) /* (param, grad): param -= lr*grad, in place */ \
  X(sgd_momentum,        3, 0) /* (param, grad, velocity), in place */

enum class OpKind : uint8_t {
#define TG_OP_ENUM(name, nin, nout) name,
  TG_OP_LIST(TG_OP_ENUM)
#undef TG_OP_ENUM
};

// The most inputs any op takes (padded_mse_loss_grad).
constexpr int kMaxOpInputs = 4;

constexpr int kNumOps = 0
#define TG_OP_COUNT(name, nin, nout) +1
    TG_OP_LIST(TG_OP_COUNT)
#undef TG_OP_COUNT
    ;

const char* op_name(OpKind op);
int op_num_inputs(OpKind op);
int op_num_outputs(OpKind op);
// Returns false for an unknown name.
bool parse_op(const std::string& name, OpKind& out);
// Ops that write through their inputs rather than into a new value.
inline bool op_is_update(OpKind op) { return op == OpKind::sgd || op == OpKind::sgd_momentum; }
// Ops whose output aliases input 0 (no memory of their own).
inline bool op_is_view(OpKind op) { return op == OpKind::reshape; }

}  // namespace tg
