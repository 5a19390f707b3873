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
// segment of X and one of dY: an outer product, no transposes. Two SIMT kernels of
// 128 x 128 tiles, each output one chain of fused multiply-adds over k in order:
//  - sgemm_at_b: 256 threads, 8 x 8 results each in two 4 x 4 halves 64 apart (conflict-free
//    float4 shared-memory reads), the next k step's global loads held in registers during
//    the current step's products (two shared buffers);
//  - sgemm_at_b_pipelined: operands copied global -> shared by cp.async through kStages
//    buffers, kStages - 1 k steps in flight; 256 threads of 8 x 8 results, or 128 threads
//    of 16 x 8 (6 shared loads per 128 multiply-adds instead of 4 per 64).
// Epilogues: store dW; or v = mu v + dW, p -= lr v (the update, in place).
//
// Printed: the largest differences of dW, v and p from cuBLASLt + an update kernel
// (relative to the largest magnitude), then each kernel's time for the step's three
// weights back to back (median of 9 after 2 warm-ups) next to cuBLASLt's (its heuristic's
// first algorithm, and the best of its candidates) and cuBLASLt + the update kernel.
#include "wgrad_common.cuh"

namespace {

using namespace wgrad;

constexpr int kBM = 128, kBN = 128, kThreads = 256, kWideThreads = 128;

enum class Epilogue { store, sgd_momentum };

// Four results g of row-major position `at`: stored (out is dW), or the update applied
// (out is the velocity, p the parameter).
template <Epilogue kEpi>
__device__ __forceinline__ void finish4(float* out, float* p, long at, float4 g, float lr, float mu) {
  if constexpr (kEpi == Epilogue::store) {
    *reinterpret_cast<float4*>(out + at) = g;
  } else {
    float4 w = *reinterpret_cast<const float4*>(p + at);
    *reinterpret_cast<float4*>(out + at) = sgd_momentum4(*reinterpret_cast<const float4*>(out + at), g, w, lr, mu);
    *reinterpret_cast<float4*>(p + at) = w;
  }
}

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
      finish4<kEpi>(out, p, at, make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]),
                    lr, mu);
    }
  }
}

// The same tiles and epilogues with the operands copied global -> shared by cp.async
// through kStages shared buffers (no registers in between), so kStages - 1 k steps of
// loads are in flight while one is multiplied. kThreadCount 256: 8 x 8 results a thread,
// rows ty*4 + 64q + {0..3} (q < 2); 128: 16 x 8, rows ty*4 + 32q + {0..3} (q < 4), 6 shared
// loads per 128 multiply-adds instead of 4 per 64; columns tx*4 + 64h + {0..3} (h < 2)
// either way. kMinBlocks bounds the registers: 128 threads at 3 blocks an SM get 168, at 2
// get 207.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// k step `tile` of both operands (kBK rows of the block's 128 columns of a, kTileN of b)
// into shared stage tile % kStages, kThreads threads copying 16 bytes at a time, as one
// commit group; past the last tile an empty group, which keeps the wait counts uniform.
template <int kThreadCount, int kBK, int kStages, int kTileN>
__device__ __forceinline__ void issue_tile(float* as, float* bs, const float* a, const float* b, int m, int n, int i0,
                                           int j0, int tile, int tiles) {
  if (tile < tiles) {
    const int stage = tile % kStages, k0 = tile * kBK;
#pragma unroll
    for (int l = 0; l < kBK * (kBM / 4) / kThreadCount; ++l) {
      const int idx = static_cast<int>(threadIdx.x) + l * kThreadCount, row = idx / (kBM / 4), col = idx % (kBM / 4) * 4;
      cp_async16(as + (stage * kBK + row) * kBM + col, a + static_cast<long>(k0 + row) * m + i0 + col);
    }
#pragma unroll
    for (int l = 0; l < kBK * (kTileN / 4) / kThreadCount; ++l) {
      const int idx = static_cast<int>(threadIdx.x) + l * kThreadCount, row = idx / (kTileN / 4),
                col = idx % (kTileN / 4) * 4;
      cp_async16(bs + (stage * kBK + row) * kTileN + col, b + static_cast<long>(k0 + row) * n + j0 + col);
    }
  }
  cp_async_commit();
}

// Tiles of 128 x kTileN. Thread (ty, tx), tx < 16: rows ty*4 + kRowStep*q + {0..3}, columns
// tx*4 + 64h + {0..3}: 256 threads on 128 x 128 tiles 8 x 8 results each, 128 threads 16 x 8,
// 256 threads on 128 x 256 tiles 8 x 16. kColOuter: the multiply-adds of a k step column by
// column instead of row by row (which operand stays in the reuse cache).
template <int kThreadCount, int kBK, int kStages, Epilogue kEpi, int kMinBlocks, int kTileN = 128,
          bool kColOuter = false>
__global__ void __launch_bounds__(kThreadCount, kMinBlocks) sgemm_at_b_pipelined(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, float* __restrict__ p, int m,
    int n, int K, float lr, float mu) {
  constexpr int kRowQuads = kBM * 4 / kThreadCount, kRowStep = kBM / kRowQuads, kColQuads = kTileN / 64;
  constexpr int kRows = 4 * kRowQuads, kCols = 4 * kColQuads;
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                        // [kStages][kBK][kBM]
  float* bs = smem + kStages * kBK * kBM;  // [kStages][kBK][kTileN]
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int i0 = blockIdx.y * kBM, j0 = blockIdx.x * kTileN;
  const int tiles = K / kBK;
  auto issue = [&](int tile) {
    issue_tile<kThreadCount, kBK, kStages, kTileN>(as, bs, a, b, m, n, i0, j0, tile, tiles);
  };
  float acc[kRows][kCols] = {};
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) issue(t);
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // this tile's copies visible; every thread done with the stage reloaded next
    issue(tile + kStages - 1);
    const float* at = as + (tile % kStages) * kBK * kBM;
    const float* bt = bs + (tile % kStages) * kBK * kTileN;
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[kRows], bv[kCols];
#pragma unroll
      for (int q = 0; q < kRowQuads; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(at + k * kBM + kRowStep * q + ty * 4);
        av[4 * q] = v.x, av[4 * q + 1] = v.y, av[4 * q + 2] = v.z, av[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int h = 0; h < kColQuads; ++h) {
        const float4 v = *reinterpret_cast<const float4*>(bt + k * kTileN + 64 * h + tx * 4);
        bv[4 * h] = v.x, bv[4 * h + 1] = v.y, bv[4 * h + 2] = v.z, bv[4 * h + 3] = v.w;
      }
      if constexpr (kColOuter) {
#pragma unroll
        for (int c = 0; c < kCols; ++c)
#pragma unroll
          for (int r = 0; r < kRows; ++r) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
      } else {
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int c = 0; c < kCols; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int i = i0 + kRowStep * (r / 4) + ty * 4 + r % 4;
#pragma unroll
    for (int h = 0; h < kColQuads; ++h) {
      const long at = static_cast<long>(i) * n + j0 + h * 64 + tx * 4;
      finish4<kEpi>(out, p, at, make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]),
                    lr, mu);
    }
  }
}

}  // namespace

int main() {
  const Context ctx;
  cudaStream_t s = ctx.s;
  // ref: cuBLASLt's gradient and the update kernel's state; own: the own kernels' (mine
  // their products), from the same values.
  const std::vector<Layer> layers = make_layers();
  std::vector<float*> x(G), dy(G), grad(G), mine(G), p_ref(G), v_ref(G), p_own(G), v_own(G);
  for (int l = 0; l < G; ++l) {
    const Layer& w = layers[static_cast<size_t>(l)];
    x[l] = w.x, dy[l] = w.dy, grad[l] = w.grad, p_ref[l] = w.p, v_ref[l] = w.v;
    mine[l] = clone(grad[l], kWeight);
    p_own[l] = clone(p_ref[l], kWeight);
    v_own[l] = clone(v_ref[l], kWeight);
  }

  const LtWeightGrad gemm(ctx.lt, ctx.ws_bytes, 8);
  const float zero = 0.0f;
  auto lt_gemm = [&](int l, size_t c) { gemm.run(ctx.lt, x[l], dy[l], grad[l], &zero, ctx.ws, c, s); };
  const long n4 = kWeight / 4;
  const unsigned ublocks = static_cast<unsigned>((n4 + 255) / 256);
  auto ref_update = [&](int l) {
    sgd_momentum_kernel<<<ublocks, 256, 0, s>>>(reinterpret_cast<float4*>(p_ref[l]),
                                                reinterpret_cast<const float4*>(grad[l]),
                                                reinterpret_cast<float4*>(v_ref[l]), n4, kLr, kMu);
    CK(cudaGetLastError());
  };
  // One launch of an own kernel for weight l: into `mine` (store) or the own v and p (update).
  auto own = [&](int l, auto kernel, int threads, size_t smem, bool update, int tile_n = kBN) {
    kernel<<<dim3(kOut / tile_n, kIn / kBM), threads, smem, s>>>(x[l], dy[l], update ? v_own[l] : mine[l],
                                                                 update ? p_own[l] : nullptr, kIn, kOut, kBatch, kLr,
                                                                 kMu);
    CK(cudaGetLastError());
  };
  auto stages_bytes = [](int bk, int stages) { return static_cast<size_t>(stages) * bk * (kBM + kBN) * sizeof(float); };
  auto own_store = [&](int l, auto kernel) { own(l, kernel, kThreads, 0, false); };
  auto own_update = [&](int l, auto kernel) { own(l, kernel, kThreads, 0, true); };
  auto own_async = [&](int l, auto kernel, int bk, int stages, bool update) {
    own(l, kernel, kThreads, stages_bytes(bk, stages), update);
  };
  auto own_wide = [&](int l, auto kernel, int bk, int stages, bool update) {
    own(l, kernel, kWideThreads, stages_bytes(bk, stages), update);
  };
  // 128 x 256 tiles, 256 threads of 8 x 16, one block an SM.
  constexpr size_t kLongTileBytes = 4 * 8 * (kBM + 256) * sizeof(float);
  auto own_long = [&](int l, auto kernel, bool update) { own(l, kernel, kThreads, kLongTileBytes, update, 256); };
  auto allow_smem = [&](auto kernel, int bk, int stages) {  // past the default 48 KiB
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(stages_bytes(bk, stages))));
  };
  allow_smem(sgemm_at_b_pipelined<kThreads, 16, 4, Epilogue::store, 2>, 16, 4);
  allow_smem(sgemm_at_b_pipelined<kThreads, 16, 4, Epilogue::sgd_momentum, 2>, 16, 4);
  allow_smem(sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::store, 3>, 16, 4);
  allow_smem(sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::sgd_momentum, 3>, 16, 4);
  allow_smem(sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::store, 2>, 16, 4);

  // Correctness, one step from the same state: the own kernels against cuBLASLt + update.
  for (int l = 0; l < G; ++l) {
    lt_gemm(l, 0);
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
  check_product("pipelined kernel's", [&](int l) { own_async(l, sgemm_at_b_pipelined<kThreads, 8, 3, Epilogue::store, 2>, 8, 3, false); });
  check_product("128-thread kernel's", [&](int l) { own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::store, 3>, 8, 4, false); });
  check_product("128 x 256 tile kernel's",
                [&](int l) { own_long(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::store, 1, 256>, false); });
  {  // the 128-thread update, a second step from the state both forms reached in the first
    double wv = 0, wp = 0;
    for (int l = 0; l < G; ++l) {
      lt_gemm(l, 0);
      ref_update(l);
      own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::sgd_momentum, 3>, 8, 4, true);
    }
    CK(cudaStreamSynchronize(s));
    for (int l = 0; l < G; ++l) {
      wv = std::max(wv, max_rel_diff(v_ref[l], v_own[l], kWeight));
      wp = std::max(wp, max_rel_diff(p_ref[l], p_own[l], kWeight));
    }
    std::printf("128-thread update, a second step: max rel diff v %.3g, p %.3g\n", wv, wp);
  }

  auto timed = [&](auto&& body) { return median_us(s, body); };
  const double flop = 2.0 * kBatch * kIn * static_cast<double>(kOut) * G;
  auto row = [&](const char* name, float us) {
    std::printf("  %-44s %9.1f us  %6.1f TFLOP/s\n", name, us, flop / (us * 1e-6) / 1e12);
  };
  std::printf("%d weight gradients %d x %d, batch %d (fp32), back to back:\n", G, kIn, kOut, kBatch);
  float best_lt = 1e30f;
  const size_t found = gemm.candidates.size();
  size_t best = 0;
  for (size_t c = 0; c < found; ++c) {
    const float us = timed([&] { for (int l = 0; l < G; ++l) lt_gemm(l, c); });
    if (c == 0) row("cuBLASLt, heuristic's first", us);
    if (us < best_lt) best_lt = us, best = c;
  }
  char name[80];
  std::snprintf(name, sizeof name, "cuBLASLt, best of %zu (candidate %zu)", found, best);
  row(name, best_lt);
  row("cuBLASLt best + sgd_momentum kernel",
      timed([&] { for (int l = 0; l < G; ++l) { lt_gemm(l, best); ref_update(l); } }));
  row("own, k step 8, store dW", timed([&] { for (int l = 0; l < G; ++l) own_store(l, sgemm_at_b<8, Epilogue::store>); }));
  row("own, k step 16, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_store(l, sgemm_at_b<16, Epilogue::store>); }));
  row("own, k step 8, update in the epilogue",
      timed([&] { for (int l = 0; l < G; ++l) own_update(l, sgemm_at_b<8, Epilogue::sgd_momentum>); }));
  row("own, k step 16, update in the epilogue",
      timed([&] { for (int l = 0; l < G; ++l) own_update(l, sgemm_at_b<16, Epilogue::sgd_momentum>); }));
  row("own, cp.async k step 8, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 8, 3, Epilogue::store, 2>, 8, 3, false); }));
  row("own, cp.async k step 8, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::store, 2>, 8, 4, false); }));
  row("own, cp.async k step 16, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 16, 3, Epilogue::store, 2>, 16, 3, false); }));
  row("own, cp.async k step 16, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 16, 4, Epilogue::store, 2>, 16, 4, false); }));
  row("own, cp.async k step 8, 3 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 8, 3, Epilogue::sgd_momentum, 2>, 8, 3, true); }));
  row("own, cp.async k step 8, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::sgd_momentum, 2>, 8, 4, true); }));
  row("own, cp.async k step 16, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_async(l, sgemm_at_b_pipelined<kThreads, 16, 4, Epilogue::sgd_momentum, 2>, 16, 4, true); }));
  row("own, 128 threads, k step 8, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::store, 3>, 8, 4, false); }));
  row("own, 128 threads, k step 8, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 3, Epilogue::store, 3>, 8, 3, false); }));
  row("own, 128 threads, k step 8, 6 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 6, Epilogue::store, 3>, 8, 6, false); }));
  row("own, 128 threads <= 255 regs, k 8, 4 stages, store",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::store, 2>, 8, 4, false); }));
  row("own, 128 threads, k step 8, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::sgd_momentum, 3>, 8, 4, true); }));
  row("own, 128 threads, k 8, 4 stages, store, column order",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 8, 4, Epilogue::store, 3, 128, true>, 8, 4, false); }));
  row("own, 128 x 256 tiles, k 8, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_long(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::store, 1, 256>, false); }));
  row("own, 128 x 256 tiles, k 8, 4 stages, store, column order",
      timed([&] { for (int l = 0; l < G; ++l) own_long(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::store, 1, 256, true>, false); }));
  row("own, 128 x 256 tiles, k 8, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_long(l, sgemm_at_b_pipelined<kThreads, 8, 4, Epilogue::sgd_momentum, 1, 256>, true); }));
  row("own, 128 threads, k step 16, 3 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 16, 3, Epilogue::store, 3>, 16, 3, false); }));
  row("own, 128 threads, k step 16, 4 stages, store dW",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::store, 3>, 16, 4, false); }));
  row("own, 128 threads <= 255 regs, k 16, 4 stages, store",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::store, 2>, 16, 4, false); }));
  row("own, 128 threads, k step 16, 4 stages, update",
      timed([&] { for (int l = 0; l < G; ++l) own_wide(l, sgemm_at_b_pipelined<kWideThreads, 16, 4, Epilogue::sgd_momentum, 3>, 16, 4, true); }));
  return 0;
}
