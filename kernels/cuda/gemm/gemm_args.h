#pragma once
// One GEMM-family product as the router resolves it (gemm_router.cpp) and the project's own
// kernels take it (gemm_small.cu, gemm_skinny.cu), passed to them by value. One flat struct,
// with no geometry base shared with LtKey: a base class changes how the kernels address their
// parameter block, and with it their code.
#include <cstdint>

#include "graph/attrs.h"

namespace tg::kernels::cuda {

// D[z] (m x n, row-major, leading dim ldd) = act(op(A[z]) op(B[z]) + bias) + C[z], z < batch,
// then act_grad of that and act_in when act_grad is set: the unfused ops' order.
// A is [m, k] with leading dim lda ([k, m] with trans_a); B is [k, n] ([n, k] with
// trans_b); stride_* are elements between the matrices of the batch (stride_b 0: one B).
// bias (n values), c (D's layout; may be d), bias_grad and act_in may be null. bias_grad,
// with batch 1 only: the sums of op(B)'s columns over k (matmul_bias_grad's sum of dz's
// rows). act_in is in D's layout (relu_grad: relu's output, gelu_grad: gelu's input).
struct GemmArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  const float* bias = nullptr;
  float* d = nullptr;
  float* bias_grad = nullptr;
  const float* act_in = nullptr;
  Act act_grad = Act::none;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0, stride_a = 0, stride_b = 0, stride_d = 0;
  bool trans_a = false, trans_b = false;
  Act act = Act::none;
};

}  // namespace tg::kernels::cuda
