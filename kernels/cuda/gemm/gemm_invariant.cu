// The batch-invariant matmul of the CUDA backend (kernels/gemm/gemm_mode.h). One
// thread per output element, 16x16 tiles of A and B staged through shared memory;
// the element is sum_k a(i,k) * b(k,j) in order of k with __fmul_rn/__fadd_rn, the
// arithmetic of kernels/cpu/matmul_invariant.cpp, so both backends give the same bits
// and no element depends on how many rows the product has.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemm/gemm.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kTile = 16;

template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kTile* kTile) gemm_invariant_kernel(const float* a, const float* b, float* c,
                                                                     int64_t m, int64_t n, int64_t k, int64_t stride_a,
                                                                     int64_t stride_b) {
  pdl::prologue();
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * m * n;
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t ak = k0 + tx, bk = k0 + ty;
    as[ty][tx] = (i < m && ak < k) ? (kTransA ? a[ak * m + i] : a[i * k + ak]) : 0.0f;
    bs[ty][tx] = (bk < k && j < n) ? (kTransB ? b[j * k + bk] : b[bk * n + j]) : 0.0f;
    __syncthreads();
    const int end = k - k0 < kTile ? static_cast<int>(k - k0) : kTile;
    for (int kk = 0; kk < end; ++kk) acc = __fadd_rn(acc, __fmul_rn(as[ty][kk], bs[kk][tx]));
    __syncthreads();
  }
  if (i < m && j < n) c[i * n + j] = acc;
}

template <bool kTransA, bool kTransB>
void launch_invariant(const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k,
                      int64_t stride_a, int64_t stride_b, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile),
                  static_cast<unsigned>(batch));
  detail::launch(TG_LAUNCH_SITE, gemm_invariant_kernel<kTransA, kTransB>, grid, dim3(kTile, kTile), s, a, b, c, m, n,
                 k, stride_a, stride_b);
}

}  // namespace

void matmul_invariant(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t stride_a, const float* b, int64_t stride_b, float* c, cudaStream_t s) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const int64_t gy = (m + kTile - 1) / kTile, gx = (n + kTile - 1) / kTile;
  if (gy > 65535 || batch > 65535 || gx > 0x7fffffff)
    throw std::invalid_argument(fmt::format(
        "run_cuda matmul (batch-invariant): {} x {} x {} in a batch of {} is beyond this kernel's grid (at most "
        "{} rows and 65535 matrices); turn the batch-invariant mode off (kernels/gemm/gemm_mode.h) for it",
        m, n, k, batch, 65535 * kTile));
  if (trans_a) {
    if (trans_b) launch_invariant<true, true>(a, b, c, batch, m, n, k, stride_a, stride_b, s);
    else launch_invariant<true, false>(a, b, c, batch, m, n, k, stride_a, stride_b, s);
  } else {
    if (trans_b) launch_invariant<false, true>(a, b, c, batch, m, n, k, stride_a, stride_b, s);
    else launch_invariant<false, false>(a, b, c, batch, m, n, k, stride_a, stride_b, s);
  }
}

}  // namespace tg::kernels::cuda
