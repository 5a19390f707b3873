#pragma once
// The project's own kernels for the GEMM-family products cuBLASLt serves poorly, each with the
// fused GEMMs' epilogues (gemm_epilogue.cuh). Their tests decide the routing (gemm.h's table).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/gemm/gemm_args.h"

namespace tg::kernels::cuda {

// The small-GEMM kernel (gemm_small.cu), for products too small for cuBLASLt's kernels to pay
// off. Whether it takes a product of this size: at most 1024 k values and 2^23 multiply-adds.
bool small_gemm_fits(int64_t batch, int64_t m, int64_t n, int64_t k);
void small_gemm(const GemmArgs& g, cudaStream_t s);

// The skinny-GEMM kernels (gemm_skinny.cu), for products with one thin side that the
// small-GEMM kernel does not take: thin_k, an inner dimension of at most 16; thin_n, at most 16
// output columns (thin_n_trans_a: with A transposed). Batch 1 only; the epilogues of
// small_gemm, the bias gradient with thin_n_trans_a only (bias_grad null otherwise).
// cuBLASLt's tiles, wide in every dimension, leave most threads of such a product idle or
// re-reading the thin operand; these stream the wide operand once.
enum class SkinnyGemm : uint8_t { none, thin_k, thin_n, thin_n_trans_a };
SkinnyGemm skinny_gemm_kind(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a);
void skinny_gemm(const GemmArgs& g, cudaStream_t s);

}  // namespace tg::kernels::cuda
