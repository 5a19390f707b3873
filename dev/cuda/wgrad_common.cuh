#pragma once
// What the probes of the w4096 MLP's weight gradients and their SGD-momentum update
// (momentum_gemm.cu, sgemm_update.cu) share: the shape, pseudo-random operands, the
// update's arithmetic and cuBLASLt's weight-gradient GEMM; the check macro, operands,
// comparison and timing come from probe_common.cuh.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_common.cuh"

namespace wgrad {

using probe::clone;
using probe::max_rel_diff;
using probe::median_us;
using probe::pseudo_random;
using probe::upload;

// The MLP's hidden layers: dW[in, out] = X[batch, in]^T dY[batch, out], G of them a step.
constexpr int kBatch = 1024, kIn = 4096, kOut = 4096, G = 3;
constexpr long kWeight = static_cast<long>(kIn) * kOut;
constexpr float kLr = 1e-3f, kMu = 0.9f;

// v = mu v + g, p -= lr v, one float4: both as single roundings (fused multiply-adds), as
// cuBLASLt's epilogue computes alpha AB + beta C.
__device__ __forceinline__ float4 sgd_momentum4(float4 v, float4 g, float4& p, float lr, float mu) {
  v.x = fmaf(mu, v.x, g.x), v.y = fmaf(mu, v.y, g.y), v.z = fmaf(mu, v.z, g.z), v.w = fmaf(mu, v.w, g.w);
  p.x = fmaf(-lr, v.x, p.x), p.y = fmaf(-lr, v.y, p.y), p.z = fmaf(-lr, v.z, p.z), p.w = fmaf(-lr, v.w, p.w);
  return v;
}

// The update after a gradient g, n4 float4s, a thread each.
__global__ void sgd_momentum_kernel(float4* p, const float4* g, float4* v, long n4, float lr, float mu) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 pp = p[i];
  v[i] = sgd_momentum4(v[i], g[i], pp, lr, mu);
  p[i] = pp;
}

// The heuristic's first `most` algorithms for D = op(A) op(B) (C = D), best first, within
// ws_bytes of workspace; exits naming `what` when it has none.
inline std::vector<cublasLtMatmulHeuristicResult_t> lt_candidates(cublasLtHandle_t lt, cublasLtMatmulDesc_t op,
                                                                   cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                                                   cublasLtMatrixLayout_t ld, size_t ws_bytes, int most,
                                                                   const char* what) {
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> found_algos(static_cast<size_t>(most));
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, most, found_algos.data(), &found));
  cublasLtMatmulPreferenceDestroy(pref);
  if (found == 0) {
    std::printf("no cuBLASLt algorithm for %s\n", what);
    std::exit(1);
  }
  found_algos.resize(static_cast<size_t>(found));
  return found_algos;
}

// cuBLASLt's weight gradient: row-major dW[in, out] = X^T dY as column-major
// dW^T[out, in] = dY^T (out x batch, ld out) times X read transposed (in x batch, ld in);
// C = D (out x in, ld out). beta is a run-time scalar, so one algorithm serves beta 0 and
// an accumulation in place (C = D).
struct LtWeightGrad {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;  // the heuristic's, best first

  LtWeightGrad(cublasLtHandle_t lt, size_t ws_bytes, int most) {
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t tb = CUBLAS_OP_T;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, kOut, kBatch, kOut));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, kIn, kBatch, kIn));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, kOut, kIn, kOut));
    candidates = lt_candidates(lt, op, la, lb, lc, ws_bytes, most, "the weight gradient");
  }
  // out = X^T dY + beta * out with candidate c.
  void run(cublasLtHandle_t lt, const float* x, const float* dy, float* out, const float* beta, void* ws, size_t c,
           cudaStream_t s) const {
    const float one = 1.0f;
    const cublasLtMatmulHeuristicResult_t& r = candidates[c];
    CK(cublasLtMatmul(lt, op, &one, dy, la, x, lb, beta, out, lc, out, lc, &r.algo, ws, r.workspaceSize, s));
  }
};

// One weight's operands and state, the same pseudo-random values in every probe: the
// layer's input x and output gradient dy, a zeroed gradient buffer, the parameter and its
// velocity.
struct Layer {
  float *x, *dy, *grad, *p, *v;
};
inline std::vector<Layer> make_layers() {
  std::vector<Layer> out;
  for (unsigned l = 0; l < G; ++l)
    out.push_back({upload(pseudo_random(static_cast<long>(kBatch) * kIn, 11u + l, 2.0f)),
                   upload(pseudo_random(static_cast<long>(kBatch) * kOut, 23u + l, 0.02f)),
                   upload(std::vector<float>(static_cast<size_t>(kWeight), 0.0f)),
                   upload(pseudo_random(kWeight, 37u + l, 0.1f)), upload(pseudo_random(kWeight, 41u + l, 0.01f))});
  return out;
}

// What every probe of these GEMMs opens: a cuBLASLt handle, a stream, a workspace.
struct Context {
  probe::LtHandle lt;
  probe::Stream s;
  size_t ws_bytes = 32u << 20;
  void* ws = nullptr;
  Context() { CK(cudaMalloc(&ws, ws_bytes)); }
};

}  // namespace wgrad
