#include "kernels/cuda/dtype_support.h"

namespace tg::kernels::cuda {

namespace {

bool has_16bit_kernel(OpKind op) {
  // The convolution and batchnorm families whole (conv.cu, batchnorm.cu dispatch every op of
  // theirs on the element type): f32's arithmetic, loads widened, stores rounded once.
  if (op_is_f32_only(op)) return false;
  if (op_in_family(op, "conv") || op_in_family(op, "batchnorm")) return true;
  switch (op) {
    case OpKind::cast:
    // elementwise.cu, activation.cu, bias.cu, layout.cu: f32 arithmetic, one rounding per store
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::scale:
    case OpKind::copy:
    case OpKind::reshape:
    case OpKind::relu:
    case OpKind::relu_grad:
    case OpKind::gelu:
    case OpKind::gelu_grad:
    case OpKind::tanh:
    case OpKind::tanh_grad:
    case OpKind::sigmoid:
    case OpKind::sigmoid_grad:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::log_grad:
    case OpKind::gelu_erf:
    case OpKind::gelu_erf_grad:
    case OpKind::fused_elementwise:
    case OpKind::bias_add:
    case OpKind::transpose:
    case OpKind::broadcast:
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::embedding:
    case OpKind::embedding_grad:
    case OpKind::where: return true;
    case OpKind::dropout: return true;
    // The GEMM family on the tensor cores through cuBLASLt (kernels/cuda/gemm/gemm.h).
    case OpKind::matmul:
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad:
    case OpKind::matmul_heads: return true;
    // The row and reduction families (softmax.cu, layernorm*.cu, reduce.cu): the same.
    case OpKind::softmax:
    case OpKind::softmax_grad:
    case OpKind::layernorm:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_x_acc:
    case OpKind::layernorm_cast:
    case OpKind::layernorm_grad_gamma:
    case OpKind::layernorm_grad_params:
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: return true;
    // loss.cu: the logits widened, the loss f32, the logits' gradient rounded once.
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad: return true;
    // attention.cu: the same, its row statistic kept as a pair (graph/attention.h).
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse: return true;
    default: return false;
  }
}

// The ops that take integers as their first input: cast from them, the layout ops that
// move them (graph/dtype_rules.h), where, whose condition it is (its kernel runs every
// float dtype of a and b), and rng_advance, whose one input is dropout's rng state; the ids
// and labels of the others are not their first input, which is what the executors ask about.
bool has_int_kernel(OpKind op) {
  return op == OpKind::cast || op == OpKind::copy || op == OpKind::reshape || op == OpKind::slice ||
         op == OpKind::concat || op == OpKind::where || op == OpKind::rng_advance;
}

}  // namespace

bool has_kernel(OpKind op, DType dt) {
  if (dtype_is_int(dt)) return has_int_kernel(op);
  return dt == DType::F32 || has_16bit_kernel(op);
}

}  // namespace tg::kernels::cuda
