// Which cuBLASLt epilogues does fp32 (CUBLAS_COMPUTE_32F, TF32 off) offer for the GEMMs of
// tg-train's models, and what do they cost next to cublasSgemm? Row-major problems are
// mapped onto cuBLASLt's column-major ones by computing C^T = B^T A^T.
// Prints one line per (shape, epilogue): algorithms found, workspace, microseconds per call.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "probe_common.cuh"

struct Gemm {
  const char* name;
  int m, n, k;        // row-major C[m,n] = op(A)[m,k] op(B)[k,n]
  bool ta, tb;
};

struct Epi {
  const char* name;
  cublasLtEpilogue_t e;
  int bias;  // 0 none, 1 bias input (len n), 2 bias-gradient output (len n)
  int aux;   // 0 none, 1 relu bitmask, 2 fp32 matrix
};

static float* dev(size_t n) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return probe::upload(h);
}

int main() {
  const probe::LtHandle lt;
  const probe::BlasHandle blas;
  const probe::Stream s(cudaStreamDefault);
  const size_t ws_bytes = 32u << 20;
  void* ws = probe::blas_workspace(blas, s, ws_bytes);

  const Gemm gemms[] = {
      {"mlp256 fwd 32x256x256", 32, 256, 256, false, false},
      {"mlp256 fwd-last 32x10x256", 32, 10, 256, false, false},
      {"mlp256 dgrad 32x256x256", 32, 256, 256, false, true},
      {"mlp256 wgrad 256x256x32", 256, 256, 32, true, false},
      {"mlp4096 fwd 1024x4096x4096", 1024, 4096, 4096, false, false},
      {"mlp4096 dgrad 1024x4096x4096", 1024, 4096, 4096, false, true},
      {"mlp4096 wgrad 4096x4096x1024", 4096, 4096, 1024, true, false},
      {"tfm qkv 8192x512x512", 8192, 512, 512, false, false},
      {"tfm fc1 8192x2048x512", 8192, 2048, 512, false, false},
      {"tfm fc2 8192x512x2048", 8192, 512, 2048, false, false},
      {"tfm fc2-dgrad 8192x2048x512", 8192, 2048, 512, false, true},
      {"tfm fc1-wgrad 512x2048x8192", 512, 2048, 8192, true, false},
  };
  const Epi fwd[] = {{"DEFAULT", CUBLASLT_EPILOGUE_DEFAULT, 0, 0},       {"BIAS", CUBLASLT_EPILOGUE_BIAS, 1, 0},
                     {"RELU_BIAS", CUBLASLT_EPILOGUE_RELU_BIAS, 1, 0},   {"GELU_BIAS", CUBLASLT_EPILOGUE_GELU_BIAS, 1, 0},
                     {"RELU_AUX_BIAS", CUBLASLT_EPILOGUE_RELU_AUX_BIAS, 1, 1},
                     {"GELU_AUX_BIAS", CUBLASLT_EPILOGUE_GELU_AUX_BIAS, 1, 2}};
  const Epi dgrad[] = {{"DEFAULT", CUBLASLT_EPILOGUE_DEFAULT, 0, 0},
                       {"DRELU", CUBLASLT_EPILOGUE_DRELU, 0, 1},
                       {"DRELU_BGRAD", CUBLASLT_EPILOGUE_DRELU_BGRAD, 2, 1},
                       {"DGELU", CUBLASLT_EPILOGUE_DGELU, 0, 2},
                       {"DGELU_BGRAD", CUBLASLT_EPILOGUE_DGELU_BGRAD, 2, 2}};
  const Epi wgrad[] = {{"DEFAULT", CUBLASLT_EPILOGUE_DEFAULT, 0, 0},
                       {"BGRADA", CUBLASLT_EPILOGUE_BGRADA, 2, 0},
                       {"BGRADB", CUBLASLT_EPILOGUE_BGRADB, 2, 0}};

  std::printf("%-30s %-14s %5s %9s %10s %10s\n", "gemm", "epilogue", "algos", "ws_KiB", "lt_us", "sgemm_us");
  for (const Gemm& g : gemms) {
    float* A = dev((size_t)g.m * g.k);
    float* B = dev((size_t)g.k * g.n);
    float* C = dev((size_t)g.m * g.n);
    float* bias = dev(std::max(g.m, g.n) + 0ul);
    float* aux = dev((size_t)g.m * g.n + 4096);
    // column-major view: D'[n, m] = op(B)'[n, k] op(A)'[k, m]
    const int mm = g.n, nn = g.m, kk = g.k;
    const cublasOperation_t opA = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = g.tb ? g.k : g.n, ldb = g.ta ? g.m : g.k, ldd = g.n;
    // cublasSgemm reference
    const float one = 1.0f, zero = 0.0f;
    auto time = [&](auto&& f) { return probe::mean_us(s, 10, 50, f); };
    const float sg = time([&] {
      CK(cublasSgemm(blas, opA, opB, mm, nn, kk, &one, B, lda, A, ldb, &zero, C, ldd));
    });
    const bool is_wgrad = g.ta, is_dgrad = g.tb;
    const Epi* list = is_wgrad ? wgrad : is_dgrad ? dgrad : fwd;
    const int count = is_wgrad ? 3 : is_dgrad ? 5 : 6;
    for (int i = 0; i < count; ++i) {
      const Epi& ep = list[i];
      cublasLtMatmulDesc_t op;
      CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep.e, sizeof ep.e));
      if (ep.bias) CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
      if (ep.aux) {
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
        int64_t ld = ep.aux == 1 ? (mm + 127) / 128 * 128 : (mm + 7) / 8 * 8;
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
      }
      cublasLtMatrixLayout_t la, lb, ld_;
      CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, g.tb ? kk : mm, g.tb ? mm : kk, lda));
      CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, g.ta ? nn : kk, g.ta ? kk : nn, ldb));
      CK(cublasLtMatrixLayoutCreate(&ld_, CUDA_R_32F, mm, nn, ldd));
      cublasLtMatmulPreference_t pref;
      CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
      cublasLtMatmulHeuristicResult_t res[8];
      int found = 0;
      const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld_, ld_, pref, 8, res, &found);
      float best = -1;
      size_t wsz = 0;
      if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
        wsz = res[0].workspaceSize;
        best = time([&] {
          CK(cublasLtMatmul(lt, op, &one, B, la, A, lb, &zero, C, ld_, C, ld_, &res[0].algo, ws, ws_bytes, s));
        });
      }
      std::printf("%-30s %-14s %5d %9zu %10.2f %10.2f%s\n", g.name, ep.name, found, wsz / 1024, best, sg,
                  hs == CUBLAS_STATUS_SUCCESS ? "" : "  (heuristic refused)");
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(ld_);
      cublasLtMatmulDescDestroy(op);
    }
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(bias); cudaFree(aux);
  }
  return 0;
}
