// The skinny-GEMM kernels of the CUDA backend: GEMM-family products with one thin side,
// too large for the small-GEMM kernel (matmul_small.cu), that cuBLASLt's FP32 kernels tile
// poorly because their tiles are wide in every dimension:
//  - an inner dimension of at most 16 (skinny_k: an outer product of thin operands, e.g. the
//    input gradient of a layer 10 wide, [1024, 10] x [10, 4096], 16 MB written);
//  - at most 16 output columns over a long k (skinny_n: that layer's forward, [1024, 4096] x
//    [4096, 10], 16 MB read; skinny_nt, A transposed: its weight gradient x^T dz, [4096, 1024]
//    x [1024, 10], with the bias gradient).
// Both are memory-bound: the bytes of the wide operand or the result, once. Measured in the
// w4096 MLP's step, cuBLASLt's kernels take 21-23 us for that forward and ~20 for that input
// gradient with its relu_grad pass (docs/results/h200-probes/step-marginal-a0998f2.txt),
// several times the time of their bytes.
//
// Order of the sums, fixed by the shape alone:
//  - skinny_k: each output is one chain of fused multiply-adds over k in order;
//  - skinny_n: lane l (of 64) of an output row chains k values 4l .. 4l + 3, then 4l + 256
//    .., in order; the 64 lane sums are then added in lane order;
//  - skinny_nt: group q (of 8) chains k values q, q + 8, .. in order; the 8 group sums are
//    then added in order (the bias gradient's column sums the same way).
// The epilogue is the small-GEMM kernel's (small_gemm_epilogue.cuh), so a fused GEMM gives
// the bits of the kernel's plain product followed by the unfused ops, and both executors
// route the same shapes here (gemm_op, by shape alone).
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/matmul_small.h"
#include "kernels/cuda/small_gemm_epilogue.cuh"
#include "kernels/env_switch.h"

namespace tg::kernels::cuda {

namespace {

// Off unless TG_SKINNY_GEMM=1: the kernels have not yet run their GPU tests
// (tests/cuda/test_matmul.cpp, "cuda skinny GEMMs", which turn them on); once those pass on
// the H200 and the step is measured with them, the default becomes on.
EnvSwitch g_skinny_gemm("TG_SKINNY_GEMM", false);

constexpr int kThin = 16;      // the most k values (skinny_k) or output columns (skinny_n)
constexpr int kKRows = 32;     // skinny_k: output rows a block, staged in shared memory
constexpr int kKCols = 256;    // skinny_k: output columns a block, one a thread
constexpr int kNRows = 4;      // skinny_n: output rows a block
constexpr int kNLanes = 64;    // skinny_n: threads along k for each row
constexpr int kNThreads = kNRows * kNLanes;
constexpr int kTCols = 32;     // skinny_nt: columns of A (rows of the result) a block
constexpr int kTGroups = 8;    // skinny_nt: k groups
constexpr int kTThreads = kTCols * kTGroups;

// op(A)[i][kk] and op(B)[kk][j] of a SmallGemm (batch 1).
template <bool kTrans>
__device__ __forceinline__ float at_a(const SmallGemm& g, int64_t i, int64_t kk) {
  return kTrans ? g.a[kk * g.lda + i] : g.a[i * g.lda + kk];
}
template <bool kTrans>
__device__ __forceinline__ float at_b(const SmallGemm& g, int64_t kk, int64_t j) {
  return kTrans ? g.b[j * g.ldb + kk] : g.b[kk * g.ldb + j];
}

// k <= 16: a thread owns one output column and keeps its k values of op(B) in registers; the
// block's 32 rows of op(A) sit in shared memory, read by every thread at once (a broadcast).
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kKCols) skinny_k_kernel(SmallGemm g) {
  __shared__ float as[kKRows][kThin];
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x);
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kKRows, j = static_cast<int64_t>(blockIdx.x) * kKCols + t;
  const int k = static_cast<int>(g.k);
  for (int e = t; e < kKRows * kThin; e += kKCols) {
    const int r = e / kThin, kk = e % kThin;
    as[r][kk] = i0 + r < g.m && kk < k ? at_a<kTransA>(g, i0 + r, kk) : 0.0f;
  }
  float bcol[kThin];
#pragma unroll
  for (int kk = 0; kk < kThin; ++kk) bcol[kk] = j < g.n && kk < k ? at_b<kTransB>(g, kk, j) : 0.0f;
  __syncthreads();
  if (j >= g.n) return;
  const int rows = static_cast<int>(g.m - i0 < kKRows ? g.m - i0 : kKRows);
  for (int r = 0; r < rows; ++r) {
    float acc = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kThin; ++kk)
      if (kk < k) acc = __fmaf_rn(as[r][kk], bcol[kk], acc);
    small_gemm_store(g, i0 + r, j, acc);
  }
}

// n <= 16, op(A) not transposed: 64 lanes read an output row of op(A) along k, four values
// (a float4 where the row allows) every 256; each keeps the row's n partial sums, and the
// block adds the lanes' sums in order through shared memory.
template <bool kTransB>
__global__ void __launch_bounds__(kNThreads) skinny_n_kernel(SmallGemm g, bool vec4) {
  __shared__ float part[kNRows][kThin][kNLanes + 1];
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x);
  const int r = t / kNLanes, lane = t % kNLanes;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kNRows + r;
  const int n = static_cast<int>(g.n);
  float acc[kThin] = {};
  if (i < g.m) {
    const float* row = g.a + i * g.lda;
    for (int64_t k0 = 4 * lane; k0 < g.k; k0 += 4 * kNLanes) {
      float av[4];
      if (vec4 && k0 + 4 <= g.k) {
        const float4 v = *reinterpret_cast<const float4*>(row + k0);
        av[0] = v.x, av[1] = v.y, av[2] = v.z, av[3] = v.w;
      } else {
#pragma unroll
        for (int u = 0; u < 4; ++u) av[u] = k0 + u < g.k ? row[k0 + u] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (k0 + u >= g.k) break;
#pragma unroll
        for (int jj = 0; jj < kThin; ++jj)
          if (jj < n) acc[jj] = __fmaf_rn(av[u], at_b<kTransB>(g, k0 + u, jj), acc[jj]);
      }
    }
  }
#pragma unroll
  for (int jj = 0; jj < kThin; ++jj) part[r][jj][lane] = acc[jj];
  __syncthreads();
  if (t >= kNRows * kThin) return;
  const int rr = t / kThin, jj = t % kThin;
  const int64_t oi = static_cast<int64_t>(blockIdx.x) * kNRows + rr;
  if (jj >= n || oi >= g.m) return;
  float v = 0.0f;
  for (int l = 0; l < kNLanes; ++l) v = __fadd_rn(v, part[rr][jj][l]);
  small_gemm_store(g, oi, jj, v);
}

// n <= 16, op(A) transposed (a weight gradient x^T dz of a thin layer): a thread owns a
// column i of A (a row of the result) and one of 8 k groups, k values kg, kg + 8, ..; a warp
// reads 32 neighbouring columns of a row of A (128 contiguous bytes) and one row of B (the
// same address in every lane). The groups' sums are added in order through shared memory.
// Block 0 also sums op(B)'s columns over k the same way: the bias gradient.
template <bool kTransB>
__global__ void __launch_bounds__(kTThreads) skinny_nt_kernel(SmallGemm g) {
  __shared__ float part[kTGroups][kThin][kTCols + 1];
  __shared__ float bias_part[kTGroups][kThin];
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x);
  const int il = t % kTCols, kg = t / kTCols;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kTCols + il;
  const int n = static_cast<int>(g.n);
  const bool bias_grad = g.bias_grad != nullptr && blockIdx.x == 0 && il == 0;
  float acc[kThin] = {}, bacc[kThin] = {};
  for (int64_t kk = kg; kk < g.k; kk += kTGroups) {
    const float a = i < g.m ? g.a[kk * g.lda + i] : 0.0f;
#pragma unroll
    for (int jj = 0; jj < kThin; ++jj) {
      if (jj >= n) break;
      const float b = at_b<kTransB>(g, kk, jj);
      acc[jj] = __fmaf_rn(a, b, acc[jj]);
      if (bias_grad) bacc[jj] = __fadd_rn(bacc[jj], b);
    }
  }
#pragma unroll
  for (int jj = 0; jj < kThin; ++jj) part[kg][jj][il] = acc[jj];
  if (bias_grad)
#pragma unroll
    for (int jj = 0; jj < kThin; ++jj) bias_part[kg][jj] = bacc[jj];
  __syncthreads();
  if (g.bias_grad != nullptr && blockIdx.x == 0 && t < n) {
    float v = 0.0f;
    for (int q = 0; q < kTGroups; ++q) v = __fadd_rn(v, bias_part[q][t]);
    g.bias_grad[t] = v;
  }
  // The block's 32 x n results, one a thread.
  for (int e = t; e < kTCols * kThin; e += kTThreads) {
    const int ri = e / kThin, jj = e % kThin;
    const int64_t oi = static_cast<int64_t>(blockIdx.x) * kTCols + ri;
    if (jj >= n || oi >= g.m) continue;
    float v = 0.0f;
    for (int q = 0; q < kTGroups; ++q) v = __fadd_rn(v, part[q][jj][ri]);
    small_gemm_store(g, oi, jj, v);
  }
}

}  // namespace

bool skinny_gemm_enabled() { return g_skinny_gemm.on(); }
void set_skinny_gemm(bool enabled) { g_skinny_gemm.set(enabled); }

SkinnyGemm skinny_gemm_kind(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a) {
  if (batch != 1 || m < 1 || n < 1 || k < 1) return SkinnyGemm::none;
  if (k <= kThin && m <= int64_t{65535} * kKRows) return SkinnyGemm::thin_k;
  if (n <= kThin && !trans_a && m <= int64_t{65535} * kNRows) return SkinnyGemm::thin_n;
  if (n <= kThin && trans_a && m <= int64_t{65535} * kTCols) return SkinnyGemm::thin_n_trans_a;
  return SkinnyGemm::none;
}

void skinny_gemm(const SmallGemm& g, cudaStream_t s) {
  switch (skinny_gemm_kind(g.batch, g.m, g.n, g.k, g.trans_a)) {
    case SkinnyGemm::thin_k: {
      const dim3 grid(static_cast<unsigned>((g.n + kKCols - 1) / kKCols), static_cast<unsigned>((g.m + kKRows - 1) / kKRows));
      auto kernel = g.trans_a ? (g.trans_b ? skinny_k_kernel<true, true> : skinny_k_kernel<true, false>)
                              : (g.trans_b ? skinny_k_kernel<false, true> : skinny_k_kernel<false, false>);
      return detail::launch(TG_LAUNCH_SITE, kernel, grid, dim3(kKCols), s, g);
    }
    case SkinnyGemm::thin_n: {
      // float4 loads of A's rows where every row starts 16-byte aligned.
      const bool vec4 = detail::aligned16(g.a) && g.lda % 4 == 0;
      const dim3 grid(static_cast<unsigned>((g.m + kNRows - 1) / kNRows));
      auto kernel = g.trans_b ? skinny_n_kernel<true> : skinny_n_kernel<false>;
      return detail::launch(TG_LAUNCH_SITE, kernel, grid, dim3(kNThreads), s, g, vec4);
    }
    case SkinnyGemm::thin_n_trans_a: {
      const dim3 grid(static_cast<unsigned>((g.m + kTCols - 1) / kTCols));
      auto kernel = g.trans_b ? skinny_nt_kernel<true> : skinny_nt_kernel<false>;
      return detail::launch(TG_LAUNCH_SITE, kernel, grid, dim3(kTThreads), s, g);
    }
    case SkinnyGemm::none: break;
  }
  throw std::logic_error("skinny_gemm: the product is not skinny; check skinny_gemm_kind first");
}

}  // namespace tg::kernels::cuda
