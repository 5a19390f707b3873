// matmul: OpenBLAS sgemm, row-major. Batched forms are a loop of sgemm calls:
// the batches in our models are small and a loop keeps the order (and so the
// bits) independent of any batched-GEMM heuristics.
#include <cblas.h>
#include <fmt/format.h>

#include <climits>
#include <stdexcept>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw std::invalid_argument(fmt::format("matmul: {} = {} does not fit OpenBLAS's 32-bit int; split the "
                                            "product into pieces below 2^31 elements per dimension", what, v));
  return static_cast<int>(v);
}

}  // namespace

void set_cpu_blas_threads(int n) {
  if (n < 1)
    throw std::invalid_argument(fmt::format("set_cpu_blas_threads: n = {} must be >= 1 (the number of OpenBLAS threads)", n));
  openblas_set_num_threads(n);
}

int cpu_blas_threads() { return openblas_get_num_threads(); }

void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; sgemm with k = 0 is legal, but say what it means
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blas_int(m, "m"), blas_int(n, "n"), blas_int(k, "k"), 1.0f, a, blas_int(lda, "lda"), b,
              blas_int(ldb, "ldb"), 0.0f, c, blas_int(ldc, "ldc"));
}

void cpu_sgemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t stride_a, const float* b, int64_t stride_b, float* c) {
  // Row-major leading dims of the stored (untransposed) operands.
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  for (int64_t i = 0; i < batch; ++i)
    cpu_sgemm(trans_a, trans_b, m, n, k, a + i * stride_a, lda, b + i * stride_b, ldb, c + i * m * n, n);
}

void cpu_matmul(bool trans_a, bool trans_b, const float* a, const int64_t* a_dims, int a_rank,
                const float* b, const int64_t* b_dims, int b_rank, float* c) {
  const int64_t a_r = a_dims[a_rank - 2], a_c = a_dims[a_rank - 1];
  const int64_t b_r = b_dims[b_rank - 2], b_c = b_dims[b_rank - 1];
  const int64_t m = trans_a ? a_c : a_r;
  const int64_t k = trans_a ? a_r : a_c;
  const int64_t n = trans_b ? b_r : b_c;
  int64_t lead = 1;
  for (int d = 0; d + 2 < a_rank; ++d) lead *= a_dims[d];
  if (b_rank == 3) {
    cpu_sgemm_batched(trans_a, trans_b, lead, m, n, k, a, a_r * a_c, b, b_r * b_c, c);
  } else if (!trans_a) {
    // [.., m, k] rows are contiguous: fold the leading dims into m, one big sgemm.
    cpu_sgemm(false, trans_b, lead * m, n, k, a, k, b, trans_b ? k : n, c, n);
  } else {
    cpu_sgemm_batched(true, trans_b, lead, m, n, k, a, a_r * a_c, b, 0, c);
  }
}

}  // namespace tg::kernels
