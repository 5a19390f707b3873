// The small-GEMM kernel of the CUDA backend: the GEMM family (matmul, linear, linear_add,
// matmul_add, matmul_act_grad, matmul_bias_grad) on products too small for cuBLASLt's
// kernels to pay off (path 3 of gemm.h's routing table).
//
// Why: in an overhead-bound model (tg-train's MLP at batch 32, width 256) every GEMM is
// 32 x 256 x 256, two million multiply-adds: a few microseconds of latency and nothing
// else. cuBLASLt's kernels, built for throughput (and its heuristic offers one algorithm
// for the forward shape), take longer than the product needs. This kernel
// trades peak throughput for latency: 16 x 16 output tiles (32 blocks for 32 x 256), the
// whole k extent of both operand tiles loaded at once (one memory latency, not one per k
// slice), k split four ways inside the block, and the epilogue (bias, ReLU/GELU, the
// residual or accumulated term, the bias gradient) applied before the one store. It is
// launched with programmatic dependent launch like every kernel of the backend, which
// cuBLASLt's are not.
//
// Order of the sums, fixed by the shape alone: thread group q (of 4) adds its k values
// q*64 .. q*64+63 of each 256-wide k chunk in increasing k, chunk after chunk; the four
// group sums are added as ((g0 + g1) + g2) + g3. The epilogue then runs in the unfused
// ops' order (bias_add, the activation, the accumulated term added last, an activation's
// gradient of the result for matmul_act_grad) with the
// unfused kernels' functors, so a fused GEMM gives the bits of this kernel's plain
// product followed by the unfused ops. Both executors call it through gemm_op for the
// same shapes, so an unfused static graph and the dynamic executor stay bitwise equal.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemm/gemm_epilogue.cuh"
#include "kernels/cuda/gemm/gemm_small.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kTile = 16;     // output rows and columns per block
constexpr int kChunk = 256;   // k values staged per pass
constexpr int kGroups = 4;    // k groups per block
constexpr int kPerGroup = kChunk / kGroups;
constexpr int kThreads = 256;
constexpr int kPad = 4;       // a row of the staged tiles is kChunk + 4 floats: rows 4 banks apart

// Stages rows [r0, r0 + 16) x k values [k0, k0 + kChunk) of op(X) into s[row][k] (zeros
// outside). kTrans: op(X)[r][kk] = X[kk * ld + r], else X[r * ld + kk]. Consecutive
// threads read consecutive addresses in either layout.
template <bool kTrans>
__device__ __forceinline__ void stage(const float* x, int64_t ld, int64_t r0, int64_t rows, int64_t k0, int64_t k,
                                      float (*s)[kChunk + kPad]) {
  constexpr int kPerThread = kTile * kChunk / kThreads;
  float v[kPerThread];
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int e = u * kThreads + static_cast<int>(threadIdx.x);
    const int r = kTrans ? e % kTile : e / kChunk;
    const int kk = kTrans ? e / kTile : e % kChunk;
    const int64_t gr = r0 + r, gk = k0 + kk;
    v[u] = gr < rows && gk < k ? (kTrans ? x[gk * ld + gr] : x[gr * ld + gk]) : 0.0f;
  }
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int e = u * kThreads + static_cast<int>(threadIdx.x);
    s[kTrans ? e % kTile : e / kChunk][kTrans ? e / kTile : e % kChunk] = v[u];
  }
}

template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads) small_gemm_kernel(GemmArgs g) {
  __shared__ __align__(16) float as[kTile][kChunk + kPad];
  __shared__ __align__(16) float bs[kTile][kChunk + kPad];  // op(B) transposed: bs[column][k]
  __shared__ float part[kGroups][kTile][kTile + 1];
  __shared__ float bias_part[kGroups][kTile];
  pdl::prologue();
  const int64_t z = blockIdx.z;
  const float* a = g.a + z * g.stride_a;
  const float* b = g.b + z * g.stride_b;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTile, n0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int t = static_cast<int>(threadIdx.x);
  const int q = t / (kThreads / kGroups), r = t % (kThreads / kGroups);
  // This thread's outputs: rows ti and ti + 8, columns tj and tj + 8 of the tile (the
  // eight columns a quarter warp reads are in eight different bank groups).
  const int ti = r / 8, tj = r % 8;
  // Blocks of the first row of tiles also sum op(B)'s columns: the bias gradient.
  const bool bias_grad = g.bias_grad != nullptr && blockIdx.y == 0;
  // The output this thread stores, and the epilogue's operands of it, loaded now so that
  // their latency passes under the product's instead of following it.
  const int i = t / kTile, j = t % kTile;
  const int64_t gi = m0 + i, gj = n0 + j;
  const bool stores = gi < g.m && gj < g.n;
  const int64_t at = z * g.stride_d + gi * g.ldd + gj;
  const float bias_v = stores && g.bias ? g.bias[gj] : 0.0f;
  const float c_v = stores && g.c ? g.c[at] : 0.0f;
  const float act_v = stores && g.act_in ? g.act_in[at] : 0.0f;
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
  float bacc = 0.0f;
  for (int64_t k0 = 0; k0 < g.k; k0 += kChunk) {
    // op(B)[kk][j] staged as bs[j][kk]: op(B)^T is B read with the other transpose.
    stage<kTransA>(a, g.lda, m0, g.m, k0, g.k, as);
    stage<!kTransB>(b, g.ldb, n0, g.n, k0, g.k, bs);
    __syncthreads();
    const int64_t left = g.k - k0;
    const int end = left >= (q + 1) * kPerGroup ? kPerGroup : left > q * kPerGroup ? static_cast<int>(left - q * kPerGroup) : 0;
    const int kb = q * kPerGroup;
    // Zeros past k add nothing to a sum that is not -0.0; stop at the last quad that has k values.
    for (int kk = 0; kk < end; kk += 4) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[ti][kb + kk]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[ti + 8][kb + kk]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[tj][kb + kk]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[tj + 8][kb + kk]);
      const int n4 = end - kk < 4 ? end - kk : 4;
      const float av0[4] = {a0.x, a0.y, a0.z, a0.w}, av1[4] = {a1.x, a1.y, a1.z, a1.w};
      const float bv0[4] = {b0.x, b0.y, b0.z, b0.w}, bv1[4] = {b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (u < n4) {
          acc[0][0] = __fmaf_rn(av0[u], bv0[u], acc[0][0]);
          acc[0][1] = __fmaf_rn(av0[u], bv1[u], acc[0][1]);
          acc[1][0] = __fmaf_rn(av1[u], bv0[u], acc[1][0]);
          acc[1][1] = __fmaf_rn(av1[u], bv1[u], acc[1][1]);
        }
      }
    }
    if (bias_grad && r < kTile)
      for (int kk = 0; kk < end; ++kk) bacc = __fadd_rn(bacc, bs[r][kb + kk]);
    __syncthreads();
  }
  part[q][ti][tj] = acc[0][0];
  part[q][ti][tj + 8] = acc[0][1];
  part[q][ti + 8][tj] = acc[1][0];
  part[q][ti + 8][tj + 8] = acc[1][1];
  if (bias_grad && r < kTile) bias_part[q][r] = bacc;
  __syncthreads();
  if (bias_grad && t < kTile && gj < g.n)
    g.bias_grad[gj] = __fadd_rn(__fadd_rn(__fadd_rn(bias_part[0][t], bias_part[1][t]), bias_part[2][t]), bias_part[3][t]);
  if (!stores) return;
  const float v = __fadd_rn(__fadd_rn(__fadd_rn(part[0][i][j], part[1][i][j]), part[2][i][j]), part[3][i][j]);
  g.d[at] = small_gemm_epilogue(g, v, bias_v, c_v, act_v);
}

}  // namespace

bool small_gemm_fits(int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (batch < 1 || m < 1 || n < 1 || k < 1) return false;
  // At most 4 k chunks (a block loops over them) and 2^23 multiply-adds: past that
  // cuBLASLt's tensor-core-free fp32 kernels fill the GPU better than 16 x 16 tiles do.
  if (k > 4 * kChunk || batch > 65535 || (m + kTile - 1) / kTile > 65535) return false;
  const double fmas = static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                      static_cast<double>(k);
  return fmas <= static_cast<double>(int64_t{1} << 23);
}

void small_gemm(const GemmArgs& g, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((g.n + kTile - 1) / kTile), static_cast<unsigned>((g.m + kTile - 1) / kTile),
                  static_cast<unsigned>(g.batch));
  auto k = g.trans_a ? (g.trans_b ? small_gemm_kernel<true, true> : small_gemm_kernel<true, false>)
                     : (g.trans_b ? small_gemm_kernel<false, true> : small_gemm_kernel<false, false>);
  detail::launch(TG_LAUNCH_SITE, k, grid, dim3(kThreads), s, g);
}

}  // namespace tg::kernels::cuda
