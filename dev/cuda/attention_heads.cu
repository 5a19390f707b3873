// Can the transformer's attention GEMMs read q, k, v in the linear layers' [B, S, H*dh] layout
// and write the context merged, so that the four head transposes of the block disappear?
// Matrix (b, h) of such a "head view" starts at b*S*D + h*dh with leading dimension D: not an
// affine function of one batch index, so one strided-batched call cannot walk it. Three ways:
//  - H strided-batched calls, one per head, each over b (stride S*D);
//  - one cublasSgemmBatched call with device pointer arrays;
//  - one cuBLASLt call with CUBLASLT_BATCH_MODE_POINTER_ARRAY (if its heuristic offers an
//    algorithm for fp32 on this GPU).
// Each is timed against the packed strided-batched GEMM the graph runs today (plus what the
// transposes it would remove cost), and checked against it: max |difference|.
// tg-train's transformer: B 32, S 256, H 8, dh 64 (D 512). Prints one line per (GEMM, way).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "probe_common.cuh"

namespace {

constexpr int B = 32, S = 256, H = 8, DH = 64, D = H * DH, BH = B * H;

float* dev_random(size_t n, unsigned seed) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>(((i + 1) * 2654435761u + seed) % 2001) / 1000.0f - 1.0f;
  return probe::upload(h);
}

// [B, S, H, dh] -> [B, H, S, dh] (split) or back (merge: to_heads false), one float per thread.
__global__ void heads_transpose(const float* x, float* y, bool to_heads) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * S * D) return;
  const long j = i % DH, rest = i / DH;
  if (to_heads) {  // i indexes y = [B, H, S, dh]
    const long s = rest % S, h = (rest / S) % H, b = rest / (S * H);
    y[i] = x[((b * S + s) * H + h) * DH + j];
  } else {  // i indexes y = [B, S, H, dh]
    const long h = rest % H, s = (rest / H) % S, b = rest / (H * S);
    y[i] = x[((b * H + h) * S + s) * DH + j];
  }
}

double max_diff(const float* a, const float* b, size_t n) { return probe::max_abs_diff(a, b, static_cast<long>(n)); }

// Row-major C[M,N] = op(A) op(B), strided batched: cuBLAS's column-major C^T = op(B)^T op(A)^T.
void gemm_rm(cublasHandle_t h, bool ta, bool tb, int m, int n, int k, const float* a, int lda, long sa, const float* b,
             int ldb, long sb, float* c, int ldc, long sc, int batch) {
  const float one = 1.0f, zero = 0.0f;
  CK(cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                               ldb, sb, a, lda, sa, &zero, c, ldc, sc, batch));
}

}  // namespace

int main() {
  const probe::BlasHandle blas;
  const probe::LtHandle lt;
  const probe::Stream s(cudaStreamDefault);
  const size_t ws_bytes = 32u << 20;
  void* ws = probe::blas_workspace(blas, s, ws_bytes);
  auto time = [&](auto&& f) { return probe::mean_us(s, 5, 50, f); };

  const size_t act = static_cast<size_t>(B) * S * D, sc = static_cast<size_t>(BH) * S * S;
  float *qv = dev_random(act, 1), *kv = dev_random(act, 2), *vv = dev_random(act, 3), *p = dev_random(sc, 4);
  float *qp, *kp, *vp, *scores, *scores2, *ctxp, *merged, *merged2;
  for (float** x : {&qp, &kp, &vp, &ctxp, &merged, &merged2}) CK(cudaMalloc(x, act * 4));
  for (float** x : {&scores, &scores2}) CK(cudaMalloc(x, sc * 4));
  const int threads = 256, blocks = static_cast<int>((act + threads - 1) / threads);
  auto split = [&](const float* x, float* y) { heads_transpose<<<blocks, threads, 0, s>>>(x, y, true); CK(cudaGetLastError()); };
  auto merge = [&](const float* x, float* y) { heads_transpose<<<blocks, threads, 0, s>>>(x, y, false); CK(cudaGetLastError()); };
  split(qv, qp);
  split(kv, kp);
  split(vv, vp);
  const float t_split = time([&] { split(qv, qp); });

  // Pointer arrays for the one-call ways: i = b*H + h.
  std::vector<const float*> hq(BH), hk(BH), hv(BH), hp(BH);
  std::vector<float*> hs(BH), ho(BH);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int i = b * H + h;
      const long off = static_cast<long>(b) * S * D + h * DH;
      hq[i] = qv + off, hk[i] = kv + off, hv[i] = vv + off, ho[i] = merged2 + off;
      hs[i] = scores2 + static_cast<long>(i) * S * S, hp[i] = p + static_cast<long>(i) * S * S;
    }
  void* arrays;
  CK(cudaMalloc(&arrays, 6 * BH * sizeof(void*)));
  float** ds = static_cast<float**>(arrays);  // the outputs first, then the inputs
  float** dO = ds + BH;
  const float** dq = const_cast<const float**>(dO + BH);
  const float** dk = dq + BH;
  const float** dv = dk + BH;
  const float** dp = dv + BH;
  CK(cudaMemcpy(dq, hq.data(), BH * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, hk.data(), BH * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, hv.data(), BH * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dp, hp.data(), BH * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, hs.data(), BH * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dO, ho.data(), BH * 8, cudaMemcpyHostToDevice));
  const float one = 1.0f, zero = 0.0f;

  std::printf("transpose of one [B,S,H,dh] tensor (the graph runs 4 per inference step): %.2f us\n", t_split);
  std::printf("%-22s %-26s %10s %12s\n", "gemm", "way", "us", "max|diff|");

  // scores = q k^T, [S, S] per (b, h).
  auto qk_packed = [&] { gemm_rm(blas, false, true, S, S, DH, qp, DH, S * DH, kp, DH, S * DH, scores, S, S * S, BH); };
  const float t0 = time(qk_packed);
  std::printf("%-22s %-26s %10.2f %12s\n", "scores = q k^T", "packed (today)", t0, "-");
  auto qk_heads = [&] {
    for (int h = 0; h < H; ++h)
      gemm_rm(blas, false, true, S, S, DH, qv + h * DH, D, static_cast<long>(S) * D, kv + h * DH, D,
              static_cast<long>(S) * D, scores2 + static_cast<long>(h) * S * S, S, static_cast<long>(H) * S * S, B);
  };
  float t = time(qk_heads);
  std::printf("%-22s %-26s %10.2f %12.3g\n", "scores = q k^T", "H strided calls", t, max_diff(scores, scores2, sc));
  CK(cudaMemset(scores2, 0, sc * 4));
  auto qk_ptr = [&] {
    CK(cublasSgemmBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, S, S, DH, &one, dk, D, dq, D, &zero, ds, S, BH));
  };
  t = time(qk_ptr);
  std::printf("%-22s %-26s %10.2f %12.3g\n", "scores = q k^T", "cublasSgemmBatched", t, max_diff(scores, scores2, sc));

  // ctx = p v, [S, dh] per (b, h); merged into [B, S, D].
  auto pv_packed = [&] {
    gemm_rm(blas, false, false, S, DH, S, p, S, S * S, vp, DH, S * DH, ctxp, DH, S * DH, BH);
    merge(ctxp, merged);
  };
  const float t1 = time(pv_packed);
  std::printf("%-22s %-26s %10.2f %12s\n", "ctx = p v, merged", "packed + merge (today)", t1, "-");
  auto pv_heads = [&] {
    for (int h = 0; h < H; ++h)
      gemm_rm(blas, false, false, S, DH, S, p + static_cast<long>(h) * S * S, S, static_cast<long>(H) * S * S,
              vv + h * DH, D, static_cast<long>(S) * D, merged2 + h * DH, D, static_cast<long>(S) * D, B);
  };
  t = time(pv_heads);
  std::printf("%-22s %-26s %10.2f %12.3g\n", "ctx = p v, merged", "H strided calls", t, max_diff(merged, merged2, act));
  CK(cudaMemset(merged2, 0, act * 4));
  auto pv_ptr = [&] {
    CK(cublasSgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, DH, S, S, &one, dv, D, dp, S, &zero, dO, D, BH));
  };
  t = time(pv_ptr);
  std::printf("%-22s %-26s %10.2f %12.3g\n", "ctx = p v, merged", "cublasSgemmBatched", t, max_diff(merged, merged2, act));

  // cuBLASLt with pointer-array batches: does its heuristic offer fp32 algorithms here?
  {
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtMatrixLayout_t la, lb, lc;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, DH, S, D));  // k stored col-major [dh, S], ld D
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, DH, S, D));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, S, S, S));
    const int32_t count = BH, mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    for (cublasLtMatrixLayout_t l : {la, lb, lc}) {
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode));
    }
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t res[8];
    int found = 0;
    const cublasStatus_t hs_status = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, res, &found);
    if (hs_status != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::printf("%-22s %-26s %10s %12s  (heuristic: status %d, %d algorithms)\n", "scores = q k^T",
                  "cuBLASLt pointer arrays", "n/a", "-", static_cast<int>(hs_status), found);
    } else {
      CK(cudaMemset(scores2, 0, sc * 4));
      t = time([&] {
        CK(cublasLtMatmul(lt, op, &one, dk, la, dq, lb, &zero, ds, lc, ds, lc, &res[0].algo, ws, ws_bytes, s));
      });
      std::printf("%-22s %-26s %10.2f %12.3g  (%d algorithms)\n", "scores = q k^T", "cuBLASLt pointer arrays", t,
                  max_diff(scores, scores2, sc), found);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {la, lb, lc}) cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(op);
  }
  return 0;
}
