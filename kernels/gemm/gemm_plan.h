#pragma once
// How one matmul node maps onto GEMM calls, shared by the CPU (OpenBLAS) and CUDA
// (kernels/cuda/gemm/) backends so that both fold shapes the same way. A is [.., m, k] (or
// [.., k, m] with trans_a), B is [k, n] (or [n, k]) or [batch, k, n] with A
// [batch, m, k]. Rows of an untransposed A are contiguous across its leading dims,
// so those fold into m and the product is one GEMM; otherwise it is a strided batch
// (stride_b 0 when every A matrix shares the one B).
#include <cstdint>

namespace tg::kernels {

struct MatmulPlan {
  bool batched = false;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;       // leading dims (row-major) of the single GEMM
  int64_t stride_a = 0, stride_b = 0;      // elements between matrices of the batch
};

inline MatmulPlan plan_matmul(bool trans_a, bool trans_b, const int64_t* a_dims, int a_rank, const int64_t* b_dims,
                              int b_rank) {
  const int64_t a_r = a_dims[a_rank - 2], a_c = a_dims[a_rank - 1];
  const int64_t b_r = b_dims[b_rank - 2], b_c = b_dims[b_rank - 1];
  MatmulPlan p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = trans_a ? a_c : a_r;
  p.k = trans_a ? a_r : a_c;
  p.n = trans_b ? b_r : b_c;
  int64_t lead = 1;
  for (int d = 0; d + 2 < a_rank; ++d) lead *= a_dims[d];
  if (b_rank == 3 || trans_a) {
    p.batched = true;
    p.batch = lead;
    p.stride_a = a_r * a_c;
    p.stride_b = b_rank == 3 ? b_r * b_c : 0;
  } else {
    p.m *= lead;
    p.lda = p.k;
    p.ldb = trans_b ? p.k : p.n;
    p.ldc = p.n;
  }
  return p;
}

}  // namespace tg::kernels
