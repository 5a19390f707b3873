#pragma once
// One element of sgd_momentum (v = momentum v + g; p -= lr v), rounded as the CPU reference
// (kernels/cpu/optimizer.cpp) computes it in plain float math: __fmul_rn/__fadd_rn keep
// nvcc from contracting it into fused multiply-adds. Every CUDA kernel that applies the
// update (optimizer.cu, gemm/gemm_update.cu) goes through it, so they give the same bits.
#include <cuda_runtime.h>

namespace tg::kernels::cuda {

__device__ __forceinline__ void sgd_momentum_step(float& p, float g, float& v, float lr, float momentum) {
  v = __fadd_rn(__fmul_rn(momentum, v), g);
  p = __fsub_rn(p, __fmul_rn(lr, v));
}

}  // namespace tg::kernels::cuda
