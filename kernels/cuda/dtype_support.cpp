#include "kernels/cuda/dtype_support.h"

namespace tg::kernels::cuda {

namespace {

bool has_16bit_kernel(OpKind op) {
  switch (op) {
    case OpKind::cast: return true;
    default: return false;
  }
}

}  // namespace

bool has_kernel(OpKind op, DType dt) { return dt == DType::F32 || has_16bit_kernel(op); }

}  // namespace tg::kernels::cuda
