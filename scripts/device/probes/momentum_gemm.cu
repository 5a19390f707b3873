// What would SGD momentum inside the weight-gradient GEMM save on the w4096 MLP's step?
// tg-train's step with every pass stays ~170 us above the GEMM floor, mostly the update
// (update_overlap.cu: it cannot hide beside the GEMMs). cuBLASLt computes
// D = alpha A B + beta C, so a weight-gradient GEMM with beta = momentum and C = D = the
// velocity writes the new velocity in place of the gradient: the gradient never goes to
// memory and the update that follows is plain SGD on the velocity (p -= lr v: three floats
// an element instead of five). Whether that pays depends on what reading C costs a
// compute-bound GEMM, which this probe measures.
//
// For G weights of 4096 x 4096 (the MLP's hidden layers; batch 1024), each timed as the
// sequence the step would run, back to back:
//  unfused: dW = X^T dY (beta 0) into a gradient, then v = mu v + g, p -= lr v (5 floats);
//  fused:   v = X^T dY + mu v (beta = mu, C = D = v), then p -= lr v (3 floats);
// and the GEMMs alone with beta 0 and with beta = mu, and the two updates alone. Both
// sequences start from the same p and v; the probe prints the largest difference of the
// resulting p and v (relative to their largest magnitude): the fused form rounds
// mu v + (X^T dY) once in the epilogue where the unfused rounds the product, then the sum.
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

__global__ void sgd_momentum_kernel(float4* p, const float4* g, float4* v, long n4, float lr, float mu) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 vv = v[i];
  const float4 gg = g[i];
  float4 pp = p[i];
  vv.x = mu * vv.x + gg.x, vv.y = mu * vv.y + gg.y, vv.z = mu * vv.z + gg.z, vv.w = mu * vv.w + gg.w;
  pp.x -= lr * vv.x, pp.y -= lr * vv.y, pp.z -= lr * vv.z, pp.w -= lr * vv.w;
  v[i] = vv;
  p[i] = pp;
}

__global__ void sgd_kernel(float4* p, const float4* v, long n4, float lr) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 vv = v[i];
  float4 pp = p[i];
  pp.x -= lr * vv.x, pp.y -= lr * vv.y, pp.z -= lr * vv.z, pp.w -= lr * vv.w;
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

// Row-major dW[in, out] = X[batch, in]^T dY[batch, out], as column-major
// dW^T[out, in] = dY^T[out, batch] (X^T)^T: A = dY (out x batch, ld out), B = X read
// transposed (in x batch, ld in), C = D (out x in, ld out). beta is a run-time argument.
struct WeightGradGemm {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  cublasLtMatmulAlgo_t algo{};
  size_t ws = 0;
};

WeightGradGemm make_gemm(cublasLtHandle_t lt, size_t ws_bytes) {
  WeightGradGemm g;
  CK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t tb = CUBLAS_OP_T;
  CK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_32F, kOut, kBatch, kOut));
  CK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_32F, kIn, kBatch, kIn));
  CK(cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_32F, kOut, kIn, kOut));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  // One algorithm for beta 0 and beta mu (beta is a run-time scalar to cuBLASLt), run
  // in place (C = D) in the fused form.
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.la, g.lb, g.lc, g.lc, pref, 1, &r, &found));
  if (found == 0) {
    std::printf("no algorithm\n");
    std::exit(1);
  }
  g.algo = r.algo;
  g.ws = r.workspaceSize;
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

double max_rel_diff(const float* a_dev, const float* b_dev, long n) {
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  CK(cudaMemcpy(a.data(), a_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), b_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0, scale = 0;
  for (long i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[static_cast<size_t>(i)]) - b[static_cast<size_t>(i)]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[static_cast<size_t>(i)])));
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
  std::vector<float*> x(G), dy(G), grad(G), p0(G), v0(G), p1(G), v1(G), p2(G), v2(G);
  for (int l = 0; l < G; ++l) {
    x[l] = upload(pseudo_random(static_cast<long>(kBatch) * kIn, 11u + l, 2.0f));
    dy[l] = upload(pseudo_random(static_cast<long>(kBatch) * kOut, 23u + l, 0.02f));
    grad[l] = upload(std::vector<float>(static_cast<size_t>(kWeight), 0.0f));
    p0[l] = upload(pseudo_random(kWeight, 37u + l, 0.1f));
    v0[l] = upload(pseudo_random(kWeight, 41u + l, 0.01f));
    for (float** copy : {&p1[l], &p2[l]}) {
      CK(cudaMalloc(copy, kWeight * sizeof(float)));
      CK(cudaMemcpy(*copy, p0[l], kWeight * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    for (float** copy : {&v1[l], &v2[l]}) {
      CK(cudaMalloc(copy, kWeight * sizeof(float)));
      CK(cudaMemcpy(*copy, v0[l], kWeight * sizeof(float), cudaMemcpyDeviceToDevice));
    }
  }
  const WeightGradGemm gemm = make_gemm(lt, ws_bytes);
  const float one = 1.0f, zero = 0.0f, mu = kMu;
  const long n4 = kWeight / 4;
  const unsigned blocks = static_cast<unsigned>((n4 + 255) / 256);
  auto wgrad = [&](int l, float* out, const float* beta) {
    CK(cublasLtMatmul(lt, gemm.op, &one, dy[l], gemm.la, x[l], gemm.lb, beta, out, gemm.lc, out, gemm.lc, &gemm.algo,
                      ws, gemm.ws, s));
  };
  auto update_unfused = [&](int l, float* p, float* v) {
    sgd_momentum_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(grad[l]),
                                               reinterpret_cast<float4*>(v), n4, kLr, kMu);
    CK(cudaGetLastError());
  };
  auto update_fused = [&](float* p, const float* v) {
    sgd_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(v), n4, kLr);
    CK(cudaGetLastError());
  };

  // One step of each form from the same state: the difference they make.
  for (int l = 0; l < G; ++l) {
    wgrad(l, grad[l], &zero);
    update_unfused(l, p1[l], v1[l]);
    wgrad(l, v2[l], &mu);
    update_fused(p2[l], v2[l]);
  }
  CK(cudaStreamSynchronize(s));
  double dv = 0, dp = 0;
  for (int l = 0; l < G; ++l) {
    dv = std::max(dv, max_rel_diff(v1[l], v2[l], kWeight));
    dp = std::max(dp, max_rel_diff(p1[l], p2[l], kWeight));
  }
  std::printf("one step, fused against unfused: max |dv| / max |v| = %.3g, max |dp| / max |p| = %.3g\n", dv, dp);

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Median of 9 timed runs after 2 warm-ups, microseconds; state keeps evolving (a few
  // steps of lr 1e-3 on bounded data stay finite).
  auto timed = [&](auto&& body) {
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
  const float gemm_beta0 = timed([&] { for (int l = 0; l < G; ++l) wgrad(l, grad[l], &zero); });
  const float gemm_betamu = timed([&] { for (int l = 0; l < G; ++l) wgrad(l, v2[l], &mu); });
  const float upd5 = timed([&] { for (int l = 0; l < G; ++l) update_unfused(l, p1[l], v1[l]); });
  const float upd3 = timed([&] { for (int l = 0; l < G; ++l) update_fused(p2[l], v2[l]); });
  const float unfused = timed([&] {
    for (int l = 0; l < G; ++l) {
      wgrad(l, grad[l], &zero);
      update_unfused(l, p1[l], v1[l]);
    }
  });
  const float fused = timed([&] {
    for (int l = 0; l < G; ++l) {
      wgrad(l, v2[l], &mu);
      update_fused(p2[l], v2[l]);
    }
  });
  std::printf("%d weight gradients of %d x %d (batch %d), microseconds, median of 9:\n", G, kIn, kOut, kBatch);
  std::printf("  GEMMs, beta 0                     %9.1f\n", gemm_beta0);
  std::printf("  GEMMs, beta mu, C = D = velocity  %9.1f\n", gemm_betamu);
  std::printf("  sgd_momentum (5 floats/element)   %9.1f\n", upd5);
  std::printf("  sgd on the velocity (3 floats)    %9.1f\n", upd3);
  std::printf("  unfused: GEMM + sgd_momentum      %9.1f\n", unfused);
  std::printf("  fused:   GEMM(beta mu) + sgd      %9.1f\n", fused);
  std::printf("  saved                             %9.1f (%.1f%% of unfused)\n", unfused - fused,
              100.0 * (unfused - fused) / unfused);
  return 0;
}
