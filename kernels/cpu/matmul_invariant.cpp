// The batch-invariant matmul of the CPU backend (kernels/gemm/gemm_mode.h): every
// element is sum_k a(i,k) * b(k,j) in order of k, each product and each sum rounded
// on its own (this file is compiled with -ffp-contract=off, so no FMA either), the
// same arithmetic as the CUDA kernel in kernels/cuda/gemm/gemm_invariant.cu. The loop
// runs i, k, j so that the j loop streams a row of B and vectorizes.
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_gemm_invariant(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                        float* c) {
  // B^T stored [n, k]: transpose it once so that the inner loop reads rows.
  std::vector<float> bt;
  if (trans_b && m > 1) {
    bt.resize(static_cast<size_t>(k * n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) bt[static_cast<size_t>(kk * n + j)] = b[j * k + kk];
  }
  const bool rows = !trans_b || m > 1;
  const float* bk_base = trans_b ? bt.data() : b;
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * n;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float aik = trans_a ? a[kk * m + i] : a[i * k + kk];
      if (rows) {
        const float* bk = bk_base + kk * n;
        for (int64_t j = 0; j < n; ++j) ci[j] = ci[j] + aik * bk[j];
      } else {
        for (int64_t j = 0; j < n; ++j) ci[j] = ci[j] + aik * b[j * k + kk];
      }
    }
  }
}

}  // namespace tg::kernels
