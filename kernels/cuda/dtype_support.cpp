#include "kernels/cuda/dtype_support.h"

namespace tg::kernels::cuda {

namespace {

bool has_16bit_kernel(OpKind op) {
  switch (op) {
    case OpKind::cast: return true;
    // The row, reduction, convolution and batchnorm families (softmax.cu, layernorm*.cu,
    // reduce.cu, conv.cu, batchnorm.cu): f32's arithmetic, loads widened, stores rounded once.
    case OpKind::softmax:
    case OpKind::softmax_grad:
    case OpKind::layernorm:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_gamma:
    case OpKind::layernorm_grad_params:
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight:
    case OpKind::max_pool2d:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d:
    case OpKind::avg_pool2d_grad:
    case OpKind::batch_norm:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_inference: return true;
    default: return false;
  }
}

}  // namespace

bool has_kernel(OpKind op, DType dt) { return dt == DType::F32 || has_16bit_kernel(op); }

}  // namespace tg::kernels::cuda
