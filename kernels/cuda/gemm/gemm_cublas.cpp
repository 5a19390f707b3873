// sgemm and sgemm_batched: cuBLAS's plain SGEMM in row-major terms, outside the GEMM family's
// routing, for tg-matmul's direct measurement of the library. cuBLAS is column-major; a
// row-major [m,n] matrix is the column-major [n,m] one, so C = op(A) op(B) is computed as
// C^T = op(B)^T op(A)^T: the operands swap places and keep their own leading dims.
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "graph/errors.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm/gemm.h"

namespace tg::kernels::cuda {

namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    input_error("matmul: {} = {} does not fit cuBLAS's 32-bit int; split the product into pieces below "
                "2^31 per dimension", what, v);
  return static_cast<int>(v);
}

void prepare(cublasHandle_t h, cudaStream_t s, bool tf32) {
  if (!h) throw std::invalid_argument("matmul: no cuBLAS handle; pass CudaExecContext::cublas");
  // cublasSetStream also resets the workspace to cuBLAS's own pool (which allocates,
  // and must not during capture), so only switch when the stream really differs; the
  // CUDA backend binds its handle to its stream and workspace once.
  cudaStream_t cur = nullptr;
  TG_CUBLAS_CHECK(cublasGetStream(h, &cur));
  if (cur != s) TG_CUBLAS_CHECK(cublasSetStream(h, s));
  TG_CUBLAS_CHECK(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

}  // namespace

void sgemm(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t m, int64_t n,
           int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = 0
    if (ldc == n) return fill(c, 0.0f, m * n, s);
    for (int64_t i = 0; i < m; ++i) fill(c + i * ldc, 0.0f, n, s);
    return;
  }
  prepare(h, s, tf32);
  const float one = 1.0f, zero = 0.0f;
  TG_CUBLAS_CHECK(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                              blas_int(n, "n"), blas_int(m, "m"), blas_int(k, "k"), &one, b, blas_int(ldb, "ldb"), a,
                              blas_int(lda, "lda"), &zero, c, blas_int(ldc, "ldc")));
}

void sgemm_batched(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t batch,
                   int64_t m, int64_t n, int64_t k, const float* a, int64_t stride_a, const float* b,
                   int64_t stride_b, float* c) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) return fill(c, 0.0f, batch * m * n, s);
  prepare(h, s, tf32);
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  const float one = 1.0f, zero = 0.0f;
  TG_CUBLAS_CHECK(cublasSgemmStridedBatched(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, blas_int(n, "n"), blas_int(m, "m"),
      blas_int(k, "k"), &one, b, blas_int(ldb, "ldb"), stride_b, a, blas_int(lda, "lda"), stride_a, &zero, c,
      blas_int(n, "ldc"), m * n, blas_int(batch, "batch")));
}

}  // namespace tg::kernels::cuda
