// Could a GEMM of twograph's own carry the SGD-momentum update in its epilogue and still
// keep pace with cuBLASLt? The w4096 MLP's training step stays ~160 us above the GEMM
// floor because the update (5 floats an element) can neither run beside cuBLASLt's FP32
// GEMMs (update_overlap.cu) nor be made cheaper inside them (momentum_gemm.cu: reading C
// costs what it saves). A weight-gradient GEMM whose epilogue reads the velocity and the
// parameter and writes both would move the update's bytes while other blocks of the same
// GEMM compute. That only pays if the GEMM itself is about as fast as cuBLASLt's, which is
// what this probe measures first.
//
// The shape: dW[in, out] = X[batch, in]^T dY[batch, out], batch 1024, in = out = 4096, fp32.
// Both operands are read along k (the batch) in rows, so each k step of a tile is one row
// segment of X and one of dY: an outer product, no transposes. Three SIMT kernels of
// 128 x 128 tiles, each output one chain of fused multiply-adds over k in order:
//  - sgemm_at_b: 256 threads, 8 x 8 results each in two 4 x 4 halves 64 apart (conflict-free
//    float4 shared-memory reads), the next k step's global loads held in registers during
//    the current step's products (two shared buffers);
//  - sgemm_at_b_async: the same threads, operands copied global -> shared by cp.async
//    through kStages buffers, kStages - 1 k steps in flight;
//  - sgemm_at_b_wide: the pipeline with 128 threads of 16 x 8 results (6 shared loads per
//    128 multiply-adds instead of 4 per 64).
// Epilogues: store dW; or v = mu v + dW, p -= lr v (the update, in place).
//
// Printed: the largest differences of dW, v and p from cuBLASLt + an update kernel
// (relative to the largest magnitude), then each kernel's time for the step's three
// weights back to back (median of 9 after 2 warm-ups) next to cuBLASLt's (its heuristic's
// first algorithm, and the best of its candidates) and cuBLASLt + the update kernel.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("FAIL %s:%d %s = %d\n", __FILE__, __LINE__, #x, (int)e_); std::exit(1); } } while (0)

namespace {

constexpr int kBatch = 1024, kIn = 4096, kOut = 4096, G = 3;
constexpr long kWeight = static_cast<long>(kIn) * kOut;
constexpr float kLr = 1e-3f, kMu = 0.9f;
constexpr int kBM = 128, kBN = 128, kThreads = 256;

enum class Epilogue { store, sgd_momentum };

// out[i][j] (row-major, ld n) for i < m, j < n: sum over k < K of a[k][i] * b[k][j]
// (a: K x m, b: K x n, row-major). m, n multiples of 128, K of kBK.
template <int kBK, Epilogue kEpi>
__global__ void __launch_bounds__(kThreads, 2) sgemm_at_b(const float* __restrict__ a, const float* __restrict__ b,
                                                           float* __restrict__ out, float* __restrict__ p, int m, int n,
                                                           int K, float lr, float mu) {
  __shared__ __align__(16) float as[2][kBK][kBM];
  __shared__ __align__(16) float bs[2][kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int i0 = blockIdx.y * kBM, j0 = blockIdx.x * kBN;
  // Global loads of one k step: kBK rows of 128 floats from each operand, float4 each:
  // kBK * 32 float4 per operand, kBK / 8 per thread.
  constexpr int kLoads = kBK * 32 / kThreads;
  float4 ra[kLoads], rb[kLoads];
  auto load = [&](int k0) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int idx = tid + l * kThreads, row = idx / 32, col = (idx % 32) * 4;
      ra[l] = __ldg(reinterpret_cast<const float4*>(a + static_cast<long>(k0 + row) * m + i0 + col));
      rb[l] = __ldg(reinterpret_cast<const float4*>(b + static_cast<long>(k0 + row) * n + j0 + col));
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int idx = tid + l * kThreads, row = idx / 32, col = (idx % 32) * 4;
      *reinterpret_cast<float4*>(&as[buf][row][col]) = ra[l];
      *reinterpret_cast<float4*>(&bs[buf][row][col]) = rb[l];
    }
  };
  float acc[8][8] = {};
  load(0);
  stash(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += kBK) {
    const bool more = k0 + kBK < K;
    if (more) load(k0 + kBK);
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[buf][k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[buf][k][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[buf][k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[buf][k][64 + tx * 4]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
    if (more) {
      stash(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }
  // Thread (ty, tx) holds rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, columns tx*4 + {0..3}
  // and 64 + tx*4 + {0..3}: float4 stores along each row.
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int i = i0 + (r < 4 ? ty * 4 + r : 64 + ty * 4 + r - 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long at = static_cast<long>(i) * n + j0 + h * 64 + tx * 4;
      const float4 g = make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]);
      if constexpr (kEpi == Epilogue::store) {
        *reinterpret_cast<float4*>(out + at) = g;
      } else {  // out is the velocity
        float4 v = *reinterpret_cast<const float4*>(out + at);
        float4 w = *reinterpret_cast<const float4*>(p + at);
        v.x = fmaf(mu, v.x, g.x), v.y = fmaf(mu, v.y, g.y), v.z = fmaf(mu, v.z, g.z), v.w = fmaf(mu, v.w, g.w);
        w.x = fmaf(-lr, v.x, w.x), w.y = fmaf(-lr, v.y, w.y), w.z = fmaf(-lr, v.z, w.z), w.w = fmaf(-lr, v.w, w.w);
        *reinterpret_cast<float4*>(out + at) = v;
        *reinterpret_cast<float4*>(p + at) = w;
      }
    }
  }
}

// The same tiles and epilogues with the operands copied global -> shared by cp.async
// through kStages shared buffers (no registers in between), so kStages - 1 k steps of
// loads are in flight while one is multiplied.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

template <int kBK, int kStages, Epilogue kEpi>
__global__ void __launch_bounds__(kThreads, 2) sgemm_at_b_async(const float* __restrict__ a,
                                                                 const float* __restrict__ b, float* __restrict__ out,
                                                                 float* __restrict__ p, int m, int n, int K, float lr,
                                                                 float mu) {
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                          // [kStages][kBK][kBM]
  float* bs = smem + kStages * kBK * kBM;    // [kStages][kBK][kBN]
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int i0 = blockIdx.y * kBM, j0 = blockIdx.x * kBN;
  constexpr int kLoads = kBK * 32 / kThreads;
  const int tiles = K / kBK;
  auto issue = [&](int tile) {
    if (tile < tiles) {
      const int stage = tile % kStages, k0 = tile * kBK;
#pragma unroll
      for (int l = 0; l < kLoads; ++l) {
        const int idx = tid + l * kThreads, row = idx / 32, col = (idx % 32) * 4;
        cp_async16(as + (stage * kBK + row) * kBM + col, a + static_cast<long>(k0 + row) * m + i0 + col);
        cp_async16(bs + (stage * kBK + row) * kBN + col, b + static_cast<long>(k0 + row) * n + j0 + col);
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
  float acc[8][8] = {};
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) issue(t);
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // this tile's copies visible; every thread done with the stage reloaded next
    issue(tile + kStages - 1);
    const float* at = as + (tile % kStages) * kBK * kBM;
    const float* bt = bs + (tile % kStages) * kBK * kBN;
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(at + k * kBM + ty * 4);
      const float4 a1 = *reinterpret_cast<const float4*>(at + k * kBM + 64 + ty * 4);
      const float4 b0 = *reinterpret_cast<const float4*>(bt + k * kBN + tx * 4);
      const float4 b1 = *reinterpret_cast<const float4*>(bt + k * kBN + 64 + tx * 4);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int i = i0 + (r < 4 ? ty * 4 + r : 64 + ty * 4 + r - 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long at = static_cast<long>(i) * n + j0 + h * 64 + tx * 4;
      const float4 g = make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]);
      if constexpr (kEpi == Epilogue::store) {
        *reinterpret_cast<float4*>(out + at) = g;
      } else {
        float4 v = *reinterpret_cast<const float4*>(out + at);
        float4 w = *reinterpret_cast<const float4*>(p + at);
        v.x = fmaf(mu, v.x, g.x), v.y = fmaf(mu, v.y, g.y), v.z = fmaf(mu, v.z, g.z), v.w = fmaf(mu, v.w, g.w);
        w.x = fmaf(-lr, v.x, w.x), w.y = fmaf(-lr, v.y, w.y), w.z = fmaf(-lr, v.z, w.z), w.w = fmaf(-lr, v.w, w.w);
        *reinterpret_cast<float4*>(out + at) = v;
        *reinterpret_cast<float4*>(p + at) = w;
      }
    }
  }
}

// The pipelined kernel with 128 threads and 16 x 8 results each: rows ty*4 + 32q + {0..3}
// (q < 4, ty < 8), columns tx*4 + 64h + {0..3} (h < 2, tx < 16). 6 shared loads per 128
// multiply-adds instead of 4 per 64. kMinBlocks 3 holds it to 168 registers (3 blocks an
// SM); 2 lets it take 207.
constexpr int kWideThreads = 128;
template <int kBK, int kStages, Epilogue kEpi, int kMinBlocks = 3>
__global__ void __launch_bounds__(kWideThreads, kMinBlocks) sgemm_at_b_wide(const float* __restrict__ a,
                                                                    const float* __restrict__ b,
                                                                    float* __restrict__ out, float* __restrict__ p,
                                                                    int m, int n, int K, float lr, float mu) {
  extern __shared__ __align__(16) float smem[];
  float* as = smem;
  float* bs = smem + kStages * kBK * kBM;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int i0 = blockIdx.y * kBM, j0 = blockIdx.x * kBN;
  constexpr int kLoads = kBK * 32 / kWideThreads;
  const int tiles = K / kBK;
  auto issue = [&](int tile) {
    if (tile < tiles) {
      const int stage = tile % kStages, k0 = tile * kBK;
#pragma unroll
      for (int l = 0; l < kLoads; ++l) {
        const int idx = tid + l * kWideThreads, row = idx / 32, col = (idx % 32) * 4;
        cp_async16(as + (stage * kBK + row) * kBM + col, a + static_cast<long>(k0 + row) * m + i0 + col);
        cp_async16(bs + (stage * kBK + row) * kBN + col, b + static_cast<long>(k0 + row) * n + j0 + col);
      }
    }
    cp_async_commit();
  };
  float acc[16][8] = {};
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) issue(t);
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    issue(tile + kStages - 1);
    const float* at = as + (tile % kStages) * kBK * kBM;
    const float* bt = bs + (tile % kStages) * kBK * kBN;
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[16], bv[8];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(at + k * kBM + 32 * q + ty * 4);
        av[4 * q] = v.x, av[4 * q + 1] = v.y, av[4 * q + 2] = v.z, av[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 v = *reinterpret_cast<const float4*>(bt + k * kBN + 64 * h + tx * 4);
        bv[4 * h] = v.x, bv[4 * h + 1] = v.y, bv[4 * h + 2] = v.z, bv[4 * h + 3] = v.w;
      }
#pragma unroll
      for (int r = 0; r < 16; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
  }
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int i = i0 + 32 * (r / 4) + ty * 4 + r % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long at = static_cast<long>(i) * n + j0 + h * 64 + tx * 4;
      const float4 g = make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]);
      if constexpr (kEpi == Epilogue::store) {
        *reinterpret_cast<float4*>(out + at) = g;
      } else {
        float4 v = *reinterpret_cast<const float4*>(out + at);
        float4 w = *reinterpret_cast<const float4*>(p + at);
        v.x = fmaf(mu, v.x, g.x), v.y = fmaf(mu, v.y, g.y), v.z = fmaf(mu, v.z, g.z), v.w = fmaf(mu, v.w, g.w);
        w.x = fmaf(-lr, v.x, w.x), w.y = fmaf(-lr, v.y, w.y), w.z = fmaf(-lr, v.z, w.z), w.w = fmaf(-lr, v.w, w.w);
        *reinterpret_cast<float4*>(out + at) = v;
        *reinterpret_cast<float4*>(p + at) = w;
      }
    }
  }
}

// The reference update after a cuBLASLt gradient: the same arithmetic as the epilogue.
__global__ void sgd_momentum_kernel(float4* p, const float4* g, float4* v, long n4, float lr, float mu) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 vv = v[i], pp = p[i];
  const float4 gg = g[i];
  vv.x = fmaf(mu, vv.x, gg.x), vv.y = fmaf(mu, vv.y, gg.y), vv.z = fmaf(mu, vv.z, gg.z), vv.w = fmaf(mu, vv.w, gg.w);
  pp.x = fmaf(-lr, vv.x, pp.x), pp.y = fmaf(-lr, vv.y, pp.y), pp.z = fmaf(-lr, vv.z, pp.z), pp.w = fmaf(-lr, vv.w, pp.w);
  v[i] = vv;
  p[i] = pp;
}

std::vector<float> pseudo_random(long n, unsigned seed, float scale) {
  std::vector<float> h(static_cast<size_t>(n));
  unsigned s = seed;
  for (float& x : h) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
  }
  return h;
}

float* upload(const std::vector<float>& h) {
  float* d;
  CK(cudaMalloc(&d, h.size() * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

float* clone(const float* src, long n) {
  float* d;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, src, n * sizeof(float), cudaMemcpyDeviceToDevice));
  return d;
}

double max_rel_diff(const float* a_dev, const float* b_dev, long n) {
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  CK(cudaMemcpy(a.data(), a_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), b_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

}  // namespace

int main() {
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  std::vector<float*> x(G), dy(G), grad(G), mine(G), p_ref(G), v_ref(G), p_own(G), v_own(G);
  for (int l = 0; l < G; ++l) {
    x[l] = upload(pseudo_random(static_cast<long>(kBatch) * kIn, 11u + l, 2.0f));
    dy[l] = upload(pseudo_random(static_cast<long>(kBatch) * kOut, 23u + l, 0.02f));
    grad[l] = upload(std::vector<float>(static_cast<size_t>(kWeight), 0.0f));
    mine[l] = upload(std::vector<float>(static_cast<size_t>(kWeight), 0.0f));
    p_ref[l] = upload(pseudo_random(kWeight, 37u + l, 0.1f));
    v_ref[l] = upload(pseudo_random(kWeight, 41u + l, 0.01f));
    p_own[l] = clone(p_ref[l], kWeight);
    v_own[l] = clone(v_ref[l], kWeight);
  }

  // cuBLASLt: row-major dW[in, out] = X^T dY as column-major dW^T[out, in] = dY^T (out x
  // batch) times X (batch x in, read transposed from its in x batch column-major view).
  cublasLtMatmulDesc_t op;
  CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t tb = CUBLAS_OP_T;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, kOut, kBatch, kOut));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, kIn, kBatch, kIn));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, kOut, kIn, kOut));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t cand[8];
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, cand, &found));
  if (found == 0) {
    std::printf("no cuBLASLt algorithm\n");
    return 1;
  }
  const float one = 1.0f, zero = 0.0f;
  auto lt_gemm = [&](int l, const cublasLtMatmulHeuristicResult_t& r) {
    CK(cublasLtMatmul(lt, op, &one, dy[l], la, x[l], lb, &zero, grad[l], lc, grad[l], lc, &r.algo, ws,
                      r.workspaceSize, s));
  };
  const long n4 = kWeight / 4;
  const unsigned ublocks = static_cast<unsigned>((n4 + 255) / 256);
  auto ref_update = [&](int l) {
    sgd_momentum_kernel<<<ublocks, 256, 0, s>>>(reinterpret_cast<float4*>(p_ref[l]),
                                                reinterpret_cast<const float4*>(grad[l]),
                                                reinterpret_cast<float4*>(v_ref[l]), n4, kLr, kMu);
    CK(cudaGetLastError());
  };
  const dim3 grid(kOut / kBN, kIn / kBM);
  auto own_store = [&](int l, auto kernel) {
    kernel<<<grid, kThreads, 0, s>>>(x[l], dy[l], mine[l], nullptr, kIn, kOut, kBatch, kLr, kMu);
    CK(cudaGetLastError());
  };
  auto own_update = [&](int l, auto kernel) {
    kernel<<<grid, kThreads, 0, s>>>(x[l], dy[l], v_own[l], p_own[l], kIn, kOut, kBatch, kLr, kMu);
    CK(cudaGetLastError());
  };

  auto async_bytes = [](int bk, int stages) { return static_cast<size_t>(stages) * bk * (kBM + kBN) * sizeof(float); };
  auto own_async = [&](int l, auto kernel, int bk, int stages, bool update) {
    kernel<<<grid, kThreads, async_bytes(bk, stages), s>>>(x[l], dy[l], update ? v_own[l] : mine[l],
                                                           update ? p_own[l] : nullptr, kIn, kOut, kBatch, kLr, kMu);
    CK(cudaGetLastError());
  };
  CK(cudaFuncSetAttribute(sgemm_at_b_async<16, 4, Epilogue::store>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(async_bytes(16, 4))));
  CK(cudaFuncSetAttribute(sgemm_at_b_async<16, 4, Epilogue::sgd_momentum>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(async_bytes(16, 4))));

  auto own_wide = [&](int l, auto kernel, int bk, int stages, bool update) {
    kernel<<<grid, kWideThreads, async_bytes(bk, stages), s>>>(x[l], dy[l], update ? v_own[l] : mine[l],
                                                               update ? p_own[l] : nullptr, kIn, kOut, kBatch, kLr,
                                                               kMu);
    CK(cudaGetLastError());
  };
  CK(cudaFuncSetAttribute(sgemm_at_b_wide<16, 4, Epilogue::store>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(async_bytes(16, 4))));
  CK(cudaFuncSetAttribute(sgemm_at_b_wide<16, 4, Epilogue::sgd_momentum>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(async_bytes(16, 4))));

  // Correctness, one step from the same state: the own kernels against cuBLASLt + update.
  for (int l = 0; l < G; ++l) {
    lt_gemm(l, cand[0]);
    ref_update(l);
    own_store(l, sgemm_at_b<8, Epilogue::store>);
    own_update(l, sgemm_at_b<8, Epilogue::sgd_momentum>);
  }
  CK(cudaStreamSynchronize(s));
  double dg = 0, dv = 0, dp = 0;
  for (int l = 0; l < G; ++l) {
    dg = std::max(dg, max_rel_diff(grad[l], mine[l], kWeight));
    dv = std::max(dv, max_rel_diff(v_ref[l], v_own[l], kWeight));
    dp = std::max(dp, max_rel_diff(p_ref[l], p_own[l], kWeight));
  }
  std::printf("one step against cuBLASLt + update: max rel diff dW %.3g, v %.3g, p %.3g\n", dg, dv, dp);
  auto check_product = [&](const char* what, auto&& run) {
    double d = 0;
    for (int l = 0; l < G; ++l) {
      run(l);
      CK(cudaStreamSynchronize(s));
      d = std::max(d, max_rel_diff(grad[l], mine[l], kWeight));
    }
    std::printf("%s dW against cuBLASLt: max rel diff %.3g\n", what, d);
  };
  check_product("pipelined kernel's", [&](int l) { own_async(l, sgemm_at_b_async<8, 3, Epilogue::store>, 8, 3, false); });
  check_product("128-thread kernel's", [&](int l) { own_wide(l, sgemm_at_b_wide<8, 4, Epilogue::store>, 8, 4, false); });
  {  // the 128-thread update, a second step from the state both forms reached in the first
    double wv = 0, wp = 0;
    for (int l = 0; l < G; ++l) {
      lt_gemm(l, cand[0]);
      ref_update(l);
      own_wide(l, sgemm_at_b_wide<8, 4, Epilogue::sgd_momentum>, 8, 4, true);
    }
    CK(cudaStreamSynchronize(s));
    for (int l = 0; l < G; ++l) {
      wv = std::max(wv, max_rel_diff(v_ref[l], v_own[l], kWeight));
      wp = std::max(wp, max_rel_diff(p_ref[l], p_own[l], kWeight));
    }
    std::printf("128-thread update, a second step: max rel diff v %.3g, p %.3g\n", wv, wp);
  }

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timed = [&](auto&& body) {  // median of 9 after 2 warm-ups, microseconds
    std::vector<float> t;
    for (int rep = 0; rep < 11; ++rep) {
      CK(cudaEventRecord(e0, s));
      body();
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (rep >= 2) t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double flop = 2.0 * kBatch * kIn * static_cast<double>(kOut) * G;
  auto row = [&](const char* name, float us) {
    std::printf("  %-44s %9.1f us  %6.1f TFLOP/s\n", name, us, flop / (us * 1e-6) / 1e12);
  };
  std::printf("%d weight gradients %d x %d, batch %d (fp32), back to back:\n", G, kIn, kOut, kBatch);
  float best_lt = 1e30f;
  int best = 0;
  for (int c = 0; c < found; ++c) {
    const float us = timed([&] { for (int l = 0; l < G; ++l) lt_gemm(l, cand[c]); });
    if (c == 0) row("cuBLASLt, heuristic's first", us);
    if (us < best_lt) best_lt = us, best = c;
  }
  char name[80];
  std::snprintf(name, sizeof name, "cuBLASLt, best of %d (candidate %d)", found, best);
  row(name, best_lt);
  row("cuBLASLt best + sgd_momentum kernel",
      timed([&] { for (int l = 0; l < G; ++l) { lt_gemm(l, cand[best]); ref_update(l); } }));
  row("own, k step 8, store dW", timed([&] { for (int l = 0; l < G; ++l) own_store(l, sgemm_at_b<8, Epilogue::store>); }));
  row("own, k step 16, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_store(l, sgemm_at_b<16, Epilogue::store>); }));
  row("own, k step 8, update in the epilogue",
      timed([&] { for (int l = 0; l < G; ++l) own_update(l, sgemm_at_b<8, Epilogue::sgd_momentum>); }));
  row("own, k step 16, update in the epilogue",
      timed([&] { for (int l = 0; l < G; ++l) own_update(l, sgemm_at_b<16, Epilogue::sgd_momentum>); }));
  row("own, cp.async k step 8, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<8, 3, Epilogue::store>, 8, 3, false); }));
  row("own, cp.async k step 8, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<8, 4, Epilogue::store>, 8, 4, false); }));
  row("own, cp.async k step 16, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<16, 3, Epilogue::store>, 16, 3, false); }));
  row("own, cp.async k step 16, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<16, 4, Epilogue::store>, 16, 4, false); }));
  row("own, cp.async k step 8, 3 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<8, 3, Epilogue::sgd_momentum>, 8, 3, true); }));
  row("own, cp.async k step 8, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<8, 4, Epilogue::sgd_momentum>, 8, 4, true); }));
  row("own, cp.async k step 16, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_async<16, 4, Epilogue::sgd_momentum>, 16, 4, true); }));
  row("own, 128 threads, k step 8, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<8, 4, Epilogue::store>, 8, 4, false); }));
  row("own, 128 threads, k step 8, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<8, 3, Epilogue::store>, 8, 3, false); }));
  row("own, 128 threads, k step 8, 6 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<8, 6, Epilogue::store>, 8, 6, false); }));
  row("own, 128 threads <= 255 regs, k 8, 4 stages, store",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<8, 4, Epilogue::store, 2>, 8, 4, false); }));
  row("own, 128 threads, k step 8, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<8, 4, Epilogue::sgd_momentum>, 8, 4, true); }));
  row("own, 128 threads, k step 16, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<16, 3, Epilogue::store>, 16, 3, false); }));
  row("own, 128 threads, k step 16, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<16, 4, Epilogue::store>, 16, 4, false); }));
  CK(cudaFuncSetAttribute(sgemm_at_b_wide<16, 4, Epilogue::store, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(async_bytes(16, 4))));
  row("own, 128 threads <= 255 regs, k 16, 4 stages, store",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<16, 4, Epilogue::store, 2>, 16, 4, false); }));
  row("own, 128 threads, k step 16, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_wide<16, 4, Epilogue::sgd_momentum>, 16, 4, true); }));
  return 0;
}
