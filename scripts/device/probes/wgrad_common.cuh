#pragma once
// What the probes of the w4096 MLP's weight gradients and their SGD-momentum update
// (momentum_gemm.cu, sgemm_update.cu) share: the shape, pseudo-random operands, the
// update's arithmetic, cuBLASLt's weight-gradient GEMM, comparison and timing. A probe is
// a standalone program; this header keeps the two from writing the same code twice.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("FAIL %s:%d %s = %d\n", __FILE__, __LINE__, #x, (int)e_); std::exit(1); } } while (0)

namespace wgrad {

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

inline std::vector<float> pseudo_random(long n, unsigned seed, float scale) {
  std::vector<float> h(static_cast<size_t>(n));
  unsigned s = seed;
  for (float& x : h) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
  }
  return h;
}

inline float* upload(const std::vector<float>& h) {
  float* d;
  CK(cudaMalloc(&d, h.size() * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

inline float* clone(const float* src, long n) {
  float* d;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, src, n * sizeof(float), cudaMemcpyDeviceToDevice));
  return d;
}

// max |a - b| / max |a| over n device floats.
inline double max_rel_diff(const float* a_dev, const float* b_dev, long n) {
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
  cublasLtHandle_t lt{};
  cudaStream_t s{};
  size_t ws_bytes = 32u << 20;
  void* ws = nullptr;
  Context() {
    CK(cublasLtCreate(&lt));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&ws, ws_bytes));
  }
};

// The median of 9 timed runs of body() on stream s after 2 warm-ups, microseconds.
template <typename Body>
float median_us(cudaStream_t s, Body&& body) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
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
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace wgrad
