#pragma once
// The GEMM family of the CUDA backend: the op table's "matmul" kernel family (matmul, linear,
// linear_add, matmul_add, matmul_act_grad, matmul_bias_grad, matmul_heads) and the fused
// weight update matmul_sgd_momentum. This header is the family's entry; run_cuda
// (kernels/cuda/dispatch.cpp) calls it, and the files beside it hold the paths.
//
// Routing. gemm_op (gemm_router.cpp) takes the first path whose test holds, in this order.
// The tests read the backend's options (CudaBackendOptions, kernels/cuda_options.h), the
// process-wide batch-invariant switch (kernels/gemm/gemm_mode.h) and the product's shape
// after gemm_plan.h's folding (batch, m, n, k, trans_a), never the executor: the static and
// the dynamic executor on one backend route a call alike, and prepare_cuda prepares a
// cuBLASLt GEMM exactly for the calls that reach path 5.
//
//  1. invariant (gemm_invariant.cu). Test: batch_invariant_matmul(). Option: none, the
//     process switch. Bits: every output the sum over k in order, each product and sum
//     rounded on its own, as the CPU backend's kernels/cpu/matmul_invariant.cpp: CUDA equals
//     the CPU, and a row's bits do not depend on the number of rows. A fused op is the plain
//     product followed by the unfused ops' kernels, so fused equals unfused.
//  2. empty. Test: batch, m or n is 0 (nothing to do), or k is 0: zeros for matmul,
//     std::invalid_argument for the fused ops.
//  3. small (gemm_small.cu). Test: small_gemm_fits: k <= 1024, batch <= 65535,
//     m <= 65535 * 16, batch * m * n * k <= 2^23; matmul_bias_grad only with batch 1.
//     Option: small_gemm (on). Bits: the order of the sums fixed by the shape alone; the
//     epilogue in the unfused ops' order with their functors (gemm_epilogue.cuh), so a fused
//     op gives this kernel's plain product followed by the unfused ops, except
//     matmul_bias_grad's bias gradient, summed in float beside the product where the unfused
//     reduce_sum sums in double.
//  4. skinny (gemm_skinny.cu). Test: skinny_gemm_kind is not none: batch 1 and k <= 16
//     (thin_k, m <= 65535 * 16), or n <= 16 (thin_n; thin_n_trans_a with A transposed);
//     matmul_bias_grad only on thin_n_trans_a. Options: small_gemm and skinny_gemm (both
//     on). Bits: as path 3, the same epilogue, the order fixed by the shape alone.
//  5. cuBLASLt (gemm_lt.cpp). Test: none, every other call. With option gemm_align_staging
//     (off), a large single product with an extent or leading dim not in 16-byte steps runs
//     at padded extents on padded copies of its operands (kernels/gemm/gemm_staging.h):
//     copied in, zeros in the padding, before the GEMM, the output's part copied out after
//     it, the key made with the padded product. Bits: that key's algorithm's (a padded k
//     adds exact zeros; the copies move bits unchanged). Option: gemm_autotune (off):
//     off, the heuristic's first algorithm for the call's LtKey (the geometry, the epilogue,
//     tf32 and the operands' alignment classes); on, the fastest of its first
//     kTuneCandidates, timed once per process. Bits: one algorithm per LtKey and process
//     (one cache per backend, one tuning table per process), so calls of equal keys give
//     equal bits; with tuning on, they may differ from one process to the next. Bias,
//     ReLU/GELU and the bias gradient are cuBLASLt epilogues rounded inside its arithmetic,
//     so a fused op is within a tolerance of the unfused ops, not bitwise; matmul_act_grad's
//     gradient is the unfused relu_grad/gelu_grad kernel after the product.
//
// The other entries route no further:
//  - matmul_heads (gemm_heads_op): always one cuBLASLt GEMM in pointer-array batch mode, the
//    matrices' addresses written first by gemm_heads_pointers.cu; std::invalid_argument in
//    the batch-invariant mode. Bits: cuBLASLt's for its key, whose leading dims are the head
//    views', so within a tolerance of the unfused graph's transposes and matmul.
//  - matmul_sgd_momentum (run_cuda): matmul_sgd_momentum_streamk when the context holds the
//    update workspace (option gemm_update_streamk, on: the backend makes it when it prepares
//    its first GEMM update), else matmul_sgd_momentum's tiled kernel; both fall to a plain
//    kernel of a thread an element off gemm_update_fast_shape (kernels/gemm/gemm_update_shape.h)
//    or on operands not 16-byte aligned. Bits: the tiled and the plain kernel chain fused
//    multiply-adds over the rows in order, to the same bits; stream-K adds the two parts of
//    a tile split between blocks, one more rounding, fixed by the shape and the block count.
//
// bf16 and f16 (every entry but matmul_sgd_momentum, which is f32 by the op table): the
// operands, C, D and the bias share the call's dtype; the products run on the tensor cores
// through cuBLASLt with f32 accumulation and one rounding into the dtype on the store (split-K
// partial sums reduced in f32, never in 16 bits), which is what the CPU reference computes
// (kernels/cpu/widen.cpp) up to the order of the sums. Paths 3 and 4 are f32 kernels, so every
// 16-bit call with k > 0 takes path 5 (or matmul_heads' GEMM); path 1 refuses 16-bit calls
// with std::invalid_argument; path 2 writes 16-bit zeros. The key carries the dtype, and tf32
// off whatever the backend's setting (tf32 is a mode of f32 inputs). Epilogues: bias,
// ReLU/GELU and the accumulated term are cuBLASLt's, in f32 before the one rounding, as for
// f32; matmul_act_grad's gradient is a kernel after the product (gemm_epilogue16.cu), the
// unfused relu_grad/gelu_grad's functor on the rounded product, so the fused op rounds twice
// as the unfused graph does; matmul_bias_grad's bias gradient is cuBLASLt's BGRADA epilogue
// where cuBLASLt offers it for the key, else the plain product followed by a column-sum
// kernel (gemm_epilogue16.cu; f32 sums in an order fixed by the shape, one rounding), chosen
// once per key (LtCache::find remembers a refusal).
//
// Atomics: stream-K's blocks hand a split tile's first part to the next block through a flag
// set and polled atomically; no path adds values atomically, so no result depends on timing.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/op_call.h"

namespace tg::kernels {

struct CudaExecContext;
namespace cuda {
class LtGemm;
}  // namespace cuda

// The cuBLASLt GEMM a GEMM-family call runs (path 5, or matmul_heads), prepared now (the
// heuristic asked once); null for the other paths, the other ops and in the batch-invariant
// mode. The static executor keeps it in OpCall::prepared.
const cuda::LtGemm* prepare_cuda(const OpCall& call, const CudaExecContext& ctx);

namespace cuda {

// matmul, linear, linear_add, matmul_add, matmul_act_grad, matmul_bias_grad, routed as above.
void gemm_op(const OpCall& c, const CudaExecContext& ctx);
// The bytes of the copies path 5 stages the call's operands in (kernels/gemm/gemm_staging.h:
// padded extents; option gemm_align_staging), 0 when it stages none. The call needs
// them in its workspace before the GEMM's own (Backend::Prepared counts both); a call that
// brings no workspace runs in the cuBLASLt cache's staging buffer.
size_t gemm_staging_bytes(const OpCall& c, const CudaExecContext& ctx);
// matmul_heads (graph/heads.h): one cuBLASLt GEMM over all heads' matrices, batched through
// arrays of their addresses (a head view's matrices of one head are evenly spaced; of all
// heads not).
void gemm_heads_op(const OpCall& c, const CudaExecContext& ctx);

// The batch-invariant product (kernels/gemm/gemm_mode.h): `batch` contiguous matrix pairs,
// A [m, k] ([k, m] with trans_a), B [k, n] ([n, k] with trans_b), C [m, n].
void matmul_invariant(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t stride_a, const float* b, int64_t stride_b, float* c, cudaStream_t s);

// matmul_sgd_momentum (gemm_update.cu): sgd_momentum of p [m, n] and v with the gradient
// a^T dz (a [rows, m], dz [rows, n], row-major), computed in the kernel and never stored.
void matmul_sgd_momentum(float* p, const float* a, float* v, const float* dz, int64_t rows, int64_t m, int64_t n,
                         float lr, float momentum, cudaStream_t s);
// matmul_sgd_momentum_streamk (gemm_update.cu): the same update with the product's k steps
// split evenly over `blocks` persistent blocks (0: as many as the device holds at once), so
// that the tiles' updates do not all fall at the end of a wave. workspace: at least
// matmul_sgd_momentum_streamk_workspace(rows, m, n, blocks) bytes (m = n = 0: enough for any
// shape), zeroed before the first call (its flags are zero again after each;
// std::invalid_argument when it is too small); without one, or off the tiled shapes, it is
// matmul_sgd_momentum.
size_t matmul_sgd_momentum_streamk_workspace(int64_t rows, int64_t m, int64_t n, int blocks);
void matmul_sgd_momentum_streamk(float* p, const float* a, float* v, const float* dz, int64_t rows, int64_t m,
                                 int64_t n, float lr, float momentum, void* workspace, size_t workspace_bytes,
                                 int blocks, cudaStream_t s);

// cuBLAS's plain SGEMM, row-major as cpu_sgemm / cpu_sgemm_batched (gemm_cublas.cpp): outside
// the routing, for tg-matmul's direct measurement of the library.
void sgemm(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t m, int64_t n,
           int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void sgemm_batched(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t batch,
                   int64_t m, int64_t n, int64_t k, const float* a, int64_t stride_a, const float* b,
                   int64_t stride_b, float* c);

}  // namespace cuda
}  // namespace tg::kernels
