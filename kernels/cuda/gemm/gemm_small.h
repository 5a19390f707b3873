#pragma once
// The small-GEMM kernel (gemm_small.cu): GEMM-family products too small for cuBLASLt's
// kernels to pay off, with the epilogues of the fused GEMMs. gemm_op (gemm_router.cpp) picks
// it by shape alone (small_gemm_fits), for both executors.
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::kernels::cuda {

enum class SmallGemmAct : uint8_t { none, relu, gelu };

// D[z] (m x n, row-major, leading dim ldd) = act(op(A[z]) op(B[z]) + bias) + C[z], z < batch
// (then act_grad of that and act_in, when act_grad is set).
// A is [m, k] with leading dim lda ([k, m] with trans_a); B is [k, n] ([n, k] with
// trans_b); stride_* are elements between the matrices of the batch (stride_b 0: one B).
// bias (n values), c (D's layout; may be d) and bias_grad may be null. bias_grad, with
// batch 1 only: the sums of op(B)'s columns over k (matmul_bias_grad's sum of dz's rows).
struct SmallGemm {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  const float* bias = nullptr;
  float* d = nullptr;
  float* bias_grad = nullptr;
  // matmul_act_grad: D = act_grad(product, act_in), act_in in D's layout (relu: relu's
  // output, gelu: gelu's input), applied last with the unfused relu_grad/gelu_grad functors.
  const float* act_in = nullptr;
  SmallGemmAct act_grad = SmallGemmAct::none;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0, stride_a = 0, stride_b = 0, stride_d = 0;
  bool trans_a = false, trans_b = false;
  SmallGemmAct act = SmallGemmAct::none;
};

// Whether the kernel takes a product of this size (at most 1024 k values and 2^23
// multiply-adds). gemm_op routes such a product here when the backend's options say so
// (CudaBackendOptions::small_gemm, on by default); off, every GEMM goes to cuBLASLt.
bool small_gemm_fits(int64_t batch, int64_t m, int64_t n, int64_t k);

void small_gemm(const SmallGemm& g, cudaStream_t s);

// The skinny-GEMM kernels (gemm_skinny.cu), for products with one thin side that the
// small-GEMM kernel does not take: thin_k, an inner dimension of at most 16; thin_n, at most 16
// output columns (thin_n_trans_a: with A transposed). Batch 1 only; the epilogues of
// small_gemm, the bias gradient with thin_n_trans_a only (bias_grad null otherwise). gemm_op
// routes to them when the backend's options have both small_gemm and skinny_gemm (both on
// by default; measured faster than cuBLASLt on the w4096 MLP's thin products and its step,
// docs/compiler.md).
enum class SkinnyGemm : uint8_t { none, thin_k, thin_n, thin_n_trans_a };
SkinnyGemm skinny_gemm_kind(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a);
void skinny_gemm(const SmallGemm& g, cudaStream_t s);

}  // namespace tg::kernels::cuda
