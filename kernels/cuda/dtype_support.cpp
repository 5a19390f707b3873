#include "kernels/cuda/dtype_support.h"

namespace tg::kernels::cuda {

namespace {

bool has_16bit_kernel(OpKind op) {
  switch (op) {
    case OpKind::cast: return true;
    // The GEMM family on the tensor cores through cuBLASLt (kernels/cuda/gemm/gemm.h).
    case OpKind::matmul:
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad:
    case OpKind::matmul_heads: return true;
    default: return false;
  }
}

}  // namespace

bool has_kernel(OpKind op, DType dt) { return dt == DType::F32 || has_16bit_kernel(op); }

}  // namespace tg::kernels::cuda
