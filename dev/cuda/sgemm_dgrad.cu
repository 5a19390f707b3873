// The next GEMM of the w4096 MLP's step to take from cuBLASLt: the input gradient
// dX[batch, in] = dZ[batch, out] W[in, out]^T (batch 1024, in = out = 4096, fp32). cuBLASLt's
// kernel for it takes ~700 us against ~670 for the forward and the weight-gradient products of
// the same size (docs/results/h200-probes/lt-epilogues-3b55d94.txt), and the step runs a
// separate relu_grad over its result. The floor counts cuBLASLt's time, so a kernel of our own
// at the weight-gradient kernel's speed, with relu_grad in its epilogue, is what the step
// needs to get under it.
//
// Both operands are read along k (out) in rows here, the layout the weight-gradient kernel
// does not have: its k steps are rows of X and dY. So the copies transpose: each k tile of
// 16 columns of dZ's rows and of W's rows goes to shared memory k-major ([k][row], rows
// padded by 4 floats against bank conflicts), one float per cp.async (4-byte copies, which
// .ca allows), so that the main loop is the weight-gradient kernel's (simt_main_loop of
// kernels/cuda/gemm/gemm_simt.cuh): 128 x 128 tiles, 128 threads of 16 x 8 results, double-buffered
// fragments, the stage switch inside the last k step, serpentine product order, each output
// one chain of fused multiply-adds over k in order.
// Epilogues: store dX; or relu_grad (dX = dZ W^T where y > 0, else 0, y the layer's ReLU output).
//
// Printed: each own kernel's largest difference from cuBLASLt's dX (relative to the largest
// magnitude), then the time of the two input gradients of a step back to back (median of 9
// after 2 warm-ups): cuBLASLt's (heuristic's first, best of its candidates), cuBLASLt + a
// relu_grad kernel, and the own kernels.
#include <type_traits>

#include "kernels/cuda/gemm/gemm_simt.cuh"
#include "wgrad_common.cuh"

namespace {

using namespace wgrad;

constexpr int kB = 1024, kInF = 4096, kOutF = 4096, kLayers = 2;
constexpr int kTile = 128, kThreads = 128, kStep = 16, kStages = 4, kPad = 4, kLd = kTile + kPad;
constexpr int kRows = 16, kCols = 8;
constexpr size_t kSmem = sizeof(float) * kStages * kStep * kLd * 2;

enum class Epi { store, relu_grad, relu_grad_rows4 };
enum Order { kSerpentine, kSerpentineCols };
// How a k tile's 128 rows x 16 k of an operand map onto the 128 threads' 16 four-byte copies:
//  kMapRowPairs: a warp copies 2 rows x 16 k (two 64-byte runs); its shared stores fall on 16 banks
//             twice (k and k + 8 collide: 2-way conflicts);
//  kMapRowQuads: a warp copies 4 rows x 8 k (four 32-byte sectors); its stores fall on 32 banks.
enum Map { kMapRowPairs, kMapRowQuads };

using tg::kernels::cuda::cp_async4;  // the cp.async helpers of kernels/cuda/gemm/gemm_simt.cuh
using tg::kernels::cuda::cp_async_commit;

template <int kOrder>
__device__ constexpr int2 product_at(int s) {
  if (kOrder == kSerpentine) {
    const int r = s / kCols, c = s % kCols;
    return {r, r % 2 ? kCols - 1 - c : c};
  }
  const int c = s / kRows, r = s % kRows;
  return {c % 2 ? kRows - 1 - r : r, c};
}

// A thread's first copy (l = 0): its row and k inside the tile; copy l is that plus copy_delta(l).
template <int kMap>
__device__ __forceinline__ int2 copy_base(int tid) {
  return kMap == kMapRowPairs ? int2{tid / kStep, tid % kStep} : int2{tid / 8, tid % 8};
}
template <int kMap>
__device__ constexpr int2 copy_delta(int l) {
  return kMap == kMapRowPairs ? int2{l * (kThreads / kStep), 0} : int2{16 * (l >> 1), 8 * (l & 1)};
}

// A thread's 16 x 8 results to out (rows i0 + 32 (r / 4) + row0 + r % 4, columns
// j0 + 64 h + col0 + 0..3), through the relu_grad mask of y for the relu_grad epilogues.
template <Epi kEpi>
__device__ __forceinline__ void store_tile(const float (&acc)[kRows][kCols], float* __restrict__ out,
                                           const float* __restrict__ y, int n, int i0, int j0, int row0, int col0) {
  auto at_out = [&](int r, int h) {
    return static_cast<long long>(i0 + 32 * (r / 4) + row0 + r % 4) * n + j0 + 64 * h + col0;
  };
  auto masked = [](float4 g, float4 yy) {
    g.x = yy.x > 0.0f ? g.x : 0.0f, g.y = yy.y > 0.0f ? g.y : 0.0f;
    g.z = yy.z > 0.0f ? g.z : 0.0f, g.w = yy.w > 0.0f ? g.w : 0.0f;
    return g;
  };
  constexpr int kBatch = kEpi == Epi::relu_grad_rows4 ? 4 : 1;  // rows whose y loads issue before any store
#pragma unroll
  for (int r0 = 0; r0 < kRows; r0 += kBatch) {
    float4 yy[kBatch][2];
    if constexpr (kEpi != Epi::store) {
#pragma unroll
      for (int r = 0; r < kBatch; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) yy[r][h] = *reinterpret_cast<const float4*>(y + at_out(r0 + r, h));
    }
#pragma unroll
    for (int r = 0; r < kBatch; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rr = r0 + r;
        float4 g = make_float4(acc[rr][4 * h], acc[rr][4 * h + 1], acc[rr][4 * h + 2], acc[rr][4 * h + 3]);
        if constexpr (kEpi != Epi::store) g = masked(g, yy[r][h]);
        *reinterpret_cast<float4*>(out + at_out(rr, h)) = g;
      }
  }
}

// out[i][j] = sum over k < K of a[i][k] b[j][k] (a: m x K, b: n x K, row-major), for
// i < m, j < n; m, n multiples of 128, K of 16. y (relu_grad): the ReLU's output, out's shape.
// kParts: the k steps over which a tile's 32 copies a thread spread (1: all in the tile's first
// step; 8: four in each of the first eight, as CUTLASS's multistage loop spreads them).
template <int kOrder, Epi kEpi, int kMap = kMapRowPairs, int kParts = 1>
__global__ void __launch_bounds__(kThreads, 2) sgemm_abt(const float* __restrict__ a, const float* __restrict__ b,
                                                         float* __restrict__ out, const float* __restrict__ y, int m,
                                                         int n, int K) {
  static_assert(kStep % kParts == 0 && kParts < kStep, "the last part must commit before the tile's wait");
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                          // [kStages][kStep][kLd]: a's tile, k-major
  float* bs = smem + kStages * kStep * kLd;  // the same for b
  const int tid = threadIdx.x;
  const int row0 = tid / 16 * 4, col0 = tid % 16 * 4;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const int tiles = K / kStep;
  // The copies' pointers start at the thread's first element (l = 0) of k tile 0 and advance
  // a tile's 16 columns once all of a tile's copies are issued (tiles are copied in order).
  const int2 rk0 = copy_base<kMap>(tid);
  const float* ga = a + static_cast<long long>(i0 + rk0.x) * K + rk0.y;
  const float* gb = b + static_cast<long long>(j0 + rk0.x) * K + rk0.y;
  const unsigned sa0 = static_cast<unsigned>(__cvta_generic_to_shared(as + rk0.y * kLd + rk0.x));
  const unsigned sb0 = static_cast<unsigned>(__cvta_generic_to_shared(bs + rk0.y * kLd + rk0.x));
  // Copies l in [first, last) of k tile `tile` into its stage (tile % kStages).
  auto copy = [&](int tile, int first, int last) {
    if (tile >= tiles) return;
    const unsigned stage_at = 4u * static_cast<unsigned>(tile % kStages * kStep * kLd);
#pragma unroll
    for (int l = first; l < last; ++l) {
      const int dr = copy_delta<kMap>(l).x, dk = copy_delta<kMap>(l).y;
      const unsigned at = stage_at + 4u * static_cast<unsigned>(dk * kLd + dr);
      const long long g = static_cast<long long>(dr) * K + dk;
      cp_async4(sa0 + at, ga + g);
      cp_async4(sb0 + at, gb + g);
    }
    if (last == kStep) ga += kStep, gb += kStep;
  };
  constexpr int kPerPart = kStep / kParts;  // copies l of one operand per part
  int pending = 0;                           // the tile whose copies at_step spreads
  auto issue = [&](int tile) {
    if (kParts == 1 || tile < kStages - 1) {  // the prologue copies whole tiles
      copy(tile, 0, kStep);
      cp_async_commit();
    } else {
      pending = tile;
    }
  };
  auto at_step = [&](int, int k) {
    if (kParts > 1 && k < kParts) {
      copy(pending, k * kPerPart, (k + 1) * kPerPart);
      if (k == kParts - 1) cp_async_commit();
    }
  };
  float av[2][kRows], bv[2][kCols];
  auto load_fragments = [&](int buf, int stage, int k) {
    tg::kernels::cuda::load_kmajor_fragments<32, 64>(av[buf], bv[buf], as + (stage * kStep + k) * kLd,
                                                     bs + (stage * kStep + k) * kLd, row0, col0);
  };
  float acc[kRows][kCols] = {};
  tg::kernels::cuda::simt_main_loop<kStep, kStages>(tiles, acc, av, bv, issue, load_fragments, product_at<kOrder>,
                                                    at_step);
  store_tile<kEpi>(acc, out, y, n, i0, j0, row0, col0);
}

// The other way round: keep both operands k-contiguous in shared memory, as they are in global
// memory, so that 16-byte cp.async copies them without transposing, and read fragments along k:
// for each group of 4 k, a float4 of each of the thread's 16 rows of a and 8 rows of b, then
// 16 x 8 x 4 products (each output's chain still over k in order). As many shared loads per
// product as the k-major kernel, and no transposing copies. A k tile is 32 wide: a row of a
// tile is 128 bytes, 8 chunks of 16, and chunk c of row r sits at chunk c ^ ((r / 4) % 8), so
// that the 16 different rows of b a half-warp reads fall on all eight 16-byte bank groups.
// kRowStages stages of 32 k (32 KiB a stage for both operands). kHalves: the thread's 16 rows of
// a loaded in 1 or 2 halves per group of 4 k (registers: 64 or 32 for them).
constexpr int kRowStep = 32, kChunks = kRowStep / 4;
template <int kRowStages>
constexpr size_t rows_smem() {
  return sizeof(float) * kRowStages * kRowStep * kTile * 2;
}
template <Epi kEpi, int kRowStages, int kHalves>
__global__ void __launch_bounds__(kThreads, 2) sgemm_abt_rows(const float* __restrict__ a, const float* __restrict__ b,
                                                              float* __restrict__ out, const float* __restrict__ y,
                                                              int m, int n, int K) {
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                                // [kRowStages][kTile][kRowStep], chunks swizzled
  float* bs = smem + kRowStages * kTile * kRowStep;
  const int tid = threadIdx.x;
  const int row0 = tid / 16 * 4, col0 = tid % 16 * 4;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const int tiles = K / kRowStep;
  // Copies: chunk e = tid + 128 l (l < 8) of a tile is row e / 8, chunk e % 8: a warp copies
  // four rows' 128 contiguous bytes.
  const int copy_row = tid / kChunks, copy_chunk = tid % kChunks;
  const float* ga = a + static_cast<long long>(i0 + copy_row) * K + copy_chunk * 4;
  const float* gb = b + static_cast<long long>(j0 + copy_row) * K + copy_chunk * 4;
  constexpr int kCopyRowsApart = kThreads / kChunks;  // 16
  const unsigned sa0 = static_cast<unsigned>(__cvta_generic_to_shared(as));
  const unsigned sb0 = static_cast<unsigned>(__cvta_generic_to_shared(bs));
  auto issue = [&](int tile) {
    if (tile < tiles) {
      const int stage = tile % kRowStages;
#pragma unroll
      for (int l = 0; l < kTile / kCopyRowsApart; ++l) {
        const int r = copy_row + l * kCopyRowsApart;
        const unsigned at =
            4u * static_cast<unsigned>((stage * kTile + r) * kRowStep + ((copy_chunk ^ ((r >> 2) & 7)) * 4));
        const long long g = static_cast<long long>(l) * kCopyRowsApart * K;
        tg::kernels::cuda::cp_async16(sa0 + at, ga + g);
        tg::kernels::cuda::cp_async16(sb0 + at, gb + g);
      }
      ga += kRowStep;
      gb += kRowStep;
    }
    cp_async_commit();
  };
  // The thread's rows of a all have swizzle (row0 / 4) % 8, its rows of b (col0 / 4) % 8.
  const int swz_a = (row0 >> 2) & 7, swz_b = (col0 >> 2) & 7;
  float acc[kRows][kCols] = {};
#pragma unroll
  for (int t = 0; t < kRowStages - 1; ++t) issue(t);
  for (int tile = 0; tile < tiles; ++tile) {
    tg::kernels::cuda::cp_async_wait<kRowStages - 2>();
    __syncthreads();  // tile's copies visible; every thread done with the stage refilled next
    issue(tile + kRowStages - 1);
    const int stage = tile % kRowStages;
    const float* at = as + stage * kTile * kRowStep;
    const float* bt = bs + stage * kTile * kRowStep;
#pragma unroll
    for (int kc = 0; kc < kChunks; ++kc) {
      float4 bv[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c)
        bv[c] = *reinterpret_cast<const float4*>(bt + (col0 + 64 * (c / 4) + c % 4) * kRowStep + ((kc ^ swz_b) * 4));
#pragma unroll
      for (int half = 0; half < kHalves; ++half) {
        constexpr int kHalfRows = kRows / kHalves;
        float4 av[kHalfRows];
#pragma unroll
        for (int rr = 0; rr < kHalfRows; ++rr) {
          const int r = half * kHalfRows + rr;
          av[rr] = *reinterpret_cast<const float4*>(at + (row0 + 32 * (r / 4) + r % 4) * kRowStep + ((kc ^ swz_a) * 4));
        }
#pragma unroll
        for (int rr = 0; rr < kHalfRows; ++rr) {
          const int r = half * kHalfRows + rr;
#pragma unroll
          for (int cc = 0; cc < kCols; ++cc) {
            const int c = rr % 2 ? kCols - 1 - cc : cc;  // serpentine
            acc[r][c] = fmaf(av[rr].x, bv[c].x, acc[r][c]);
            acc[r][c] = fmaf(av[rr].y, bv[c].y, acc[r][c]);
            acc[r][c] = fmaf(av[rr].z, bv[c].z, acc[r][c]);
            acc[r][c] = fmaf(av[rr].w, bv[c].w, acc[r][c]);
          }
        }
      }
    }
  }
  store_tile<kEpi>(acc, out, y, n, i0, j0, row0, col0);
}

__global__ void relu_grad_kernel(float4* d, const float4* y, long n4) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 g = d[i];
  const float4 yy = y[i];
  g.x = yy.x > 0.0f ? g.x : 0.0f, g.y = yy.y > 0.0f ? g.y : 0.0f;
  g.z = yy.z > 0.0f ? g.z : 0.0f, g.w = yy.w > 0.0f ? g.w : 0.0f;
  d[i] = g;
}

// cuBLASLt's input gradient as the runtime maps it: row-major dX = dZ W^T is column-major
// dX^T [in, batch] = op(A) B with A = W's storage as column-major [out, in] (ld out), transposed,
// and B = dZ's storage as column-major [out, batch] (ld out).
struct LtInputGrad {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, ld{};
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  LtInputGrad(cublasLtHandle_t lt, size_t ws_bytes) {
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, kOutF, kInF, kOutF));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, kOutF, kB, kOutF));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, kInF, kB, kInF));
    candidates = lt_candidates(lt, op, la, lb, ld, ws_bytes, 8, "the input gradient");
  }
  void run(cublasLtHandle_t lt, const float* w, const float* dz, float* dx, void* ws, size_t c, cudaStream_t s) const {
    const float one = 1.0f, zero = 0.0f;
    const cublasLtMatmulHeuristicResult_t& r = candidates[c];
    CK(cublasLtMatmul(lt, op, &one, w, la, dz, lb, &zero, dx, ld, dx, ld, &r.algo, ws, r.workspaceSize, s));
  }
};

}  // namespace

int main() {
  const Context ctx;
  cudaStream_t s = ctx.s;
  std::vector<float*> dz(kLayers), w(kLayers), y(kLayers), ref(kLayers), mine(kLayers);
  const long out_elems = static_cast<long>(kB) * kInF;
  for (int l = 0; l < kLayers; ++l) {
    dz[l] = upload(pseudo_random(static_cast<long>(kB) * kOutF, 51u + l, 0.02f));
    w[l] = upload(pseudo_random(static_cast<long>(kInF) * kOutF, 61u + l, 0.05f));
    y[l] = upload(pseudo_random(out_elems, 71u + l, 2.0f));  // half of it > 0: the ReLU's output pattern
    ref[l] = upload(std::vector<float>(static_cast<size_t>(out_elems), 0.0f));
    mine[l] = upload(std::vector<float>(static_cast<size_t>(out_elems), 0.0f));
  }
  const LtInputGrad lt(ctx.lt, ctx.ws_bytes);
  auto lt_gemm = [&](int l, size_t c) { lt.run(ctx.lt, w[l], dz[l], ref[l], ctx.ws, c, s); };
  auto relu_grad = [&](int l) {
    const long n4 = out_elems / 4;
    relu_grad_kernel<<<static_cast<unsigned>((n4 + 255) / 256), 256, 0, s>>>(reinterpret_cast<float4*>(ref[l]),
                                                                             reinterpret_cast<const float4*>(y[l]), n4);
    CK(cudaGetLastError());
  };
  auto own = [&](int l, auto kernel, size_t smem) {
    kernel<<<dim3(kInF / kTile, kB / kTile), kThreads, smem, s>>>(dz[l], w[l], mine[l], y[l], kB, kInF, kOutF);
    CK(cudaGetLastError());
  };
  auto timed = [&](auto&& body) { return median_us(s, body); };
  const double flop = 2.0 * kB * kInF * static_cast<double>(kOutF) * kLayers;
  auto row = [&](const char* name, float us) {
    std::printf("  %-48s %9.1f us  %6.1f TFLOP/s\n", name, us, flop / (us * 1e-6) / 1e12);
  };
  // Each own kernel: checked against cuBLASLt's dX (with relu_grad applied after it for the
  // relu_grad epilogue), then timed.
  auto config = [&](const char* what, auto kernel, bool with_relu_grad, size_t smem = kSmem) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    double d = 0;
    for (int l = 0; l < kLayers; ++l) {
      lt_gemm(l, 0);
      if (with_relu_grad) relu_grad(l);
      own(l, kernel, smem);
      CK(cudaStreamSynchronize(s));
      d = std::max(d, max_rel_diff(ref[l], mine[l], out_elems));
    }
    std::printf("%s: max rel diff from cuBLASLt %.3g\n", what, d);
    row(what, timed([&] { for (int l = 0; l < kLayers; ++l) own(l, kernel, smem); }));
  };
  std::printf("%d input gradients [%d, %d] x [%d, %d]^T (fp32), back to back:\n", kLayers, kB, kOutF, kInF, kOutF);
  float best = 1e30f;
  size_t pick = 0;
  for (size_t c = 0; c < lt.candidates.size(); ++c) {
    const float us = timed([&] { for (int l = 0; l < kLayers; ++l) lt_gemm(l, c); });
    if (c == 0) row("cuBLASLt, heuristic's first", us);
    if (us < best) best = us, pick = c;
  }
  char name[80];
  std::snprintf(name, sizeof name, "cuBLASLt, best of %zu (candidate %zu)", lt.candidates.size(), pick);
  row(name, best);
  row("cuBLASLt best + relu_grad kernel", timed([&] { for (int l = 0; l < kLayers; ++l) { lt_gemm(l, pick); relu_grad(l); } }));
  config("own, serpentine, store", sgemm_abt<kSerpentine, Epi::store>, false);
  config("own, serpentine columns, store", sgemm_abt<kSerpentineCols, Epi::store>, false);
  config("own, serpentine, relu_grad epilogue", sgemm_abt<kSerpentine, Epi::relu_grad>, true);
  config("own, serpentine columns, relu_grad epilogue", sgemm_abt<kSerpentineCols, Epi::relu_grad>, true);
  config("  + relu_grad 4 rows at a time", sgemm_abt<kSerpentineCols, Epi::relu_grad_rows4>, true);
  config("serp. cols, 4 rows x 8 k a warp, store", sgemm_abt<kSerpentineCols, Epi::store, kMapRowQuads>, false);
  config("serp. cols, copies over 8 k steps, store", sgemm_abt<kSerpentineCols, Epi::store, kMapRowPairs, 8>, false);
  config("serp. cols, 4 x 8 a warp, over 8 steps, store", sgemm_abt<kSerpentineCols, Epi::store, kMapRowQuads, 8>,
         false);
  config("serp. cols, 4 x 8 a warp, over 4 steps, store", sgemm_abt<kSerpentineCols, Epi::store, kMapRowQuads, 4>,
         false);
  config("  + relu_grad 4 rows at a time", sgemm_abt<kSerpentineCols, Epi::relu_grad_rows4, kMapRowQuads, 8>, true);
  config("k-contiguous tiles, 3 stages of 32, rows in 2 halves, store", sgemm_abt_rows<Epi::store, 3, 2>, false,
         rows_smem<3>());
  config("k-contiguous tiles, 3 stages of 32, rows at once, store", sgemm_abt_rows<Epi::store, 3, 1>, false,
         rows_smem<3>());
  config("k-contiguous tiles, 2 stages of 32, rows in 2 halves, store", sgemm_abt_rows<Epi::store, 2, 2>, false,
         rows_smem<2>());
  config("  + relu_grad 4 rows at a time", sgemm_abt_rows<Epi::relu_grad_rows4, 3, 2>, true, rows_smem<3>());
  return 0;
}
