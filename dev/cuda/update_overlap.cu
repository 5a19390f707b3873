// Can the SGD-momentum update of the w4096 MLP's weights run beside its backward GEMMs
// rather than after them? tg-train's step with every pass stays ~170 us above the GEMM
// floor, about what the update of three 4096 x 4096 weights costs when it does not overlap
// (it moves 5 floats per element: 960 MiB, ~240 us at the copy's rate). Early updates put
// it on a second stream, but a GEMM keeps every SM busy; whether an update kernel can sit
// beside a GEMM's blocks depends on what the GEMM leaves free on each SM (registers, shared
// memory, threads) and on how many blocks the update asks for.
//
// On stream A: G fp32 GEMMs 1024 x 4096 x 4096 back to back (the input-gradient shape;
// cuBLASLt's first heuristic choice, optionally with CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, so
// that it is chosen for fewer SMs). On stream B, started with them: the update of three
// 4096 x 4096 weights, a grid-stride kernel of `blocks` x `threads`. Prints, per setting, the
// GEMMs alone, the update alone, both at once, and the share of the update hidden:
// (gemms + update - both) / update (1: fully hidden, 0: serialized).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "probe_common.cuh"

namespace {

constexpr int M = 1024, N = 4096, K = 4096, G = 3;
constexpr long kWeight = 4096L * 4096L, kUpdate = 3 * kWeight;

__global__ void __launch_bounds__(256) sgd_momentum_loop(float4* p, const float4* g, float4* v, long n4, float lr,
                                                         float mu) {
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    float4 vv = v[i];
    const float4 gg = g[i];
    float4 pp = p[i];
    vv.x = mu * vv.x + gg.x, vv.y = mu * vv.y + gg.y, vv.z = mu * vv.z + gg.z, vv.w = mu * vv.w + gg.w;
    pp.x -= lr * vv.x, pp.y -= lr * vv.y, pp.z -= lr * vv.z, pp.w -= lr * vv.w;
    v[i] = vv;
    p[i] = pp;
  }
}

float* dev_fill(long n, float value) {
  std::vector<float> h(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) h[static_cast<size_t>(i)] = value * static_cast<float>((i * 7919) % 1000) / 1000.0f;
  return probe::upload(h);
}

struct Gemm {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
};

// Row-major C[M,N] = A[M,K] B[K,N], computed as column-major C^T = B^T A^T; sm_target 0: unset.
Gemm make_gemm(cublasLtHandle_t lt, int sm_target, size_t ws_bytes) {
  Gemm g{};
  CK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (sm_target > 0)
    CK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target));
  CK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_32F, N, K, N));
  CK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_32F, K, M, K));
  CK(cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_32F, N, M, N));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.la, g.lb, g.lc, g.lc, pref, 1, &r, &found));
  if (found == 0) {
    std::printf("no algorithm for sm_target %d\n", sm_target);
    std::exit(1);
  }
  g.algo = r.algo;
  g.ws = r.workspaceSize;
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

}  // namespace

int main() {
  const probe::LtHandle lt;
  const probe::Stream sa, sb;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  float *a = dev_fill(static_cast<long>(M) * K, 1.0f), *b = dev_fill(static_cast<long>(K) * N, -1.0f),
        *c = dev_fill(static_cast<long>(M) * N, 0.0f);
  float *p = dev_fill(kUpdate, 1.0f), *gr = dev_fill(kUpdate, 0.5f), *v = dev_fill(kUpdate, 0.25f);
  const probe::Event fork(cudaEventDisableTiming), join(cudaEventDisableTiming);
  cudaFuncAttributes fa{};
  CK(cudaFuncGetAttributes(&fa, sgd_momentum_loop));
  std::printf("update kernel: %d registers, %zu B static shared memory; %d SMs\n", fa.numRegs, fa.sharedSizeBytes, sms);

  // The median of 5 runs of body(), microseconds, after a warm-up.
  auto timed = [&](auto&& body) { return probe::median_us(sa, body, 1, 5); };
  const float one = 1.0f, zero = 0.0f;
  auto gemms = [&](const Gemm& g) {
    for (int i = 0; i < G; ++i)
      CK(cublasLtMatmul(lt, g.op, &one, b, g.la, a, g.lb, &zero, c, g.lc, c, g.lc, &g.algo, ws, g.ws, sa));
  };
  auto update = [&](cudaStream_t s, int blocks, int threads) {
    sgd_momentum_loop<<<blocks, threads, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(gr),
                                                 reinterpret_cast<float4*>(v), kUpdate / 4, 1e-6f, 0.9f);
    CK(cudaGetLastError());
  };

  std::printf("%-10s %-16s %12s %12s %12s %8s\n", "sm_target", "update grid", "gemms_us", "update_us", "both_us",
              "hidden");
  const int full = static_cast<int>((kUpdate / 4 + 255) / 256);
  for (int target : {0, sms - 8, sms - 16}) {
    const Gemm g = make_gemm(lt, target, ws_bytes);
    const float t_g = timed([&] { gemms(g); });
    for (int threads : {256, 128}) {
      for (int blocks : {sms / 2, sms, 2 * sms, 4 * sms, full}) {
        if (threads == 128 && blocks == full) continue;
        const float t_u = timed([&] { update(sa, blocks, threads); });
        const float t_b = timed([&] {
          CK(cudaEventRecord(fork, sa));
          CK(cudaStreamWaitEvent(sb, fork, 0));
          update(sb, blocks, threads);
          CK(cudaEventRecord(join, sb));
          gemms(g);
          CK(cudaStreamWaitEvent(sa, join, 0));
        });
        std::printf("%-10d %6d x %-7d %12.1f %12.1f %12.1f %8.2f\n", target, blocks, threads, t_g, t_u, t_b,
                    (t_g + t_u - t_b) / t_u);
      }
    }
    cublasLtMatmulDescDestroy(g.op);
    for (cublasLtMatrixLayout_t l : {g.la, g.lb, g.lc}) cublasLtMatrixLayoutDestroy(l);
  }
  return 0;
}
