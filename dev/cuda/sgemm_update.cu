// Could a GEMM of twograph's own carry the SGD-momentum update in its epilogue and still
// keep pace with cuBLASLt? The w4096 MLP's training step stays ~160 us above the GEMM
// floor because the update (5 floats an element) can neither run beside cuBLASLt's FP32
// GEMMs (update_overlap.cu) nor be made cheaper inside them (momentum_gemm.cu: reading C
// costs what it saves). A weight-gradient GEMM whose epilogue reads the velocity and the
// parameter and writes both would move the update's bytes while other blocks of the same
// GEMM compute. That only pays if the GEMM itself is as fast as cuBLASLt's.
//
// The shape: dW[in, out] = X[batch, in]^T dY[batch, out], batch 1024, in = out = 4096, fp32.
// Both operands are read along k (the batch) in rows, so each k step of a tile is one row
// segment of X and one of dY: an outer product, no transposes. SIMT kernels of 128 x 128
// tiles (or 128 x 256), each output one chain of fused multiply-adds over k in order, so
// their bits equal cuBLASLt's (whose FP32 kernel sums k in order too):
//  - sgemm_at_b: 256 threads, 8 x 8 results each, the next k step's global loads held in
//    registers during the current step's products (two shared buffers);
//  - sgemm_at_b_pipelined: operands copied global -> shared by cp.async through kStages
//    buffers; 128 threads of 16 x 8 results (or 256 of 8 x 8 / 8 x 16);
//  - sgemm_at_b_fragpipe: the same copies with the main loop CUTLASS's multistage SIMT
//    GEMM uses (double-buffered fragments, the stage switch inside the last k step), and
//    the choices Nsight Compute's stall reasons and SASS (sgemm-stalls.sh) pointed at: the
//    order of a k step's products, copy addresses advanced instead of recomputed, k step 16,
//    the thread layout, and for the update epilogue rows loaded in batches.
// Epilogues: store dW; or v = mu v + dW, p -= lr v (the update, in place).
//
// Printed: cuBLASLt's time for the step's three weights back to back (median of 9 after 2
// warm-ups; its heuristic's first algorithm, the best of its candidates, and the best +
// the update kernel), then each own kernel's, each after its largest difference from
// cuBLASLt's dW (or from cuBLASLt + the update kernel's v and p), relative to the largest
// magnitude.
#include <type_traits>

#include "kernels/cuda/gemm/gemm_simt.cuh"
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
using tg::kernels::cuda::cp_async16;  // the cp.async helpers of kernels/cuda/gemm/gemm_simt.cuh
using tg::kernels::cuda::cp_async_commit;
using tg::kernels::cuda::cp_async_wait;
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  cp_async16(static_cast<unsigned>(__cvta_generic_to_shared(smem)), gmem);
}

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

// The order of a k step's kRows x kCols multiply-adds. It decides which operand a
// multiply-add shares with the one before (the register reuse cache), and so, through the
// register allocation, how many of its three operands fall in one register bank: the
// dispatch stalls Nsight Compute counts (sgemm-stalls.sh). Product s of the step is
// (row, column) =
//  kRowMajor: row by row; kColMajor: column by column;
//  kSerpentine: row by row, odd rows right to left (the column operand carries over);
//  kSerpentineCols: column by column, odd columns bottom to top;
//  kZ2x2: 2 x 2 blocks, row pair by row pair (serpentine over the column pairs), each block
//    (r, c), (r + 1, c), (r + 1, c + 1), (r, c + 1);
//  kZ2x2Cols: the same blocks column pair by column pair (serpentine over the row pairs):
//    the order cuBLASLt's kernel issues its 16 x 8 products in (its SASS, sgemm-stalls.sh).
enum Order { kRowMajor, kColMajor, kSerpentine, kSerpentineCols, kZ2x2, kZ2x2Cols };

template <int kOrder, int kRows, int kCols>
__device__ constexpr int2 product_at(int s) {
  if (kOrder == kRowMajor) return {s / kCols, s % kCols};
  if (kOrder == kColMajor) return {s % kRows, s / kRows};
  if (kOrder == kSerpentine) {
    const int r = s / kCols, c = s % kCols;
    return {r, r % 2 ? kCols - 1 - c : c};
  }
  if (kOrder == kSerpentineCols) {
    const int c = s / kRows, r = s % kRows;
    return {c % 2 ? kRows - 1 - r : r, c};
  }
  const int block = s / 4, in = s % 4, dr = in == 1 || in == 2, dc = in >= 2;
  if (kOrder == kZ2x2) {
    const int block_cols = kCols / 2;
    const int br = block / block_cols, bc0 = block % block_cols, bc = br % 2 ? block_cols - 1 - bc0 : bc0;
    return {2 * br + dr, 2 * bc + dc};
  }
  const int block_rows = kRows / 2;
  const int bc = block / block_rows, br0 = block % block_rows, br = bc % 2 ? block_rows - 1 - br0 : br0;
  return {2 * br + dr, 2 * bc + dc};
}

template <int kOrder, int kRows, int kCols>
__device__ __forceinline__ void outer_product(float (&acc)[kRows][kCols], const float (&av)[kRows],
                                              const float (&bv)[kCols]) {
#pragma unroll
  for (int s = 0; s < kRows * kCols; ++s) {
    const int2 rc = product_at<kOrder, kRows, kCols>(s);
    acc[rc.x][rc.y] = fmaf(av[rc.x], bv[rc.y], acc[rc.x][rc.y]);
  }
}

// Tiles of 128 x kTileN. Thread (ty, tx), tx < 16: rows ty*4 + kRowStep*q + {0..3}, columns
// tx*4 + 64h + {0..3}: 256 threads on 128 x 128 tiles 8 x 8 results each, 128 threads 16 x 8,
// 256 threads on 128 x 256 tiles 8 x 16. kOrder: the order of a k step's multiply-adds.
template <int kThreadCount, int kBK, int kStages, Epilogue kEpi, int kMinBlocks, int kTileN = 128,
          int kOrder = kRowMajor>
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
      outer_product<kOrder>(acc, av, bv);
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

// The main loop as CUTLASS's multistage SIMT GEMM arranges it (simt_main_loop of
// kernels/cuda/gemm/gemm_simt.cuh, which matmul_sgd_momentum's kernel runs too: two fragment
// buffers, the stage switch inside the tile's last k step). The tiles, epilogues and
// kOrder are sgemm_at_b_pipelined's, and so is the thread
// layout unless kSquareWarps: then (128 threads, 128 x 128 tiles only) each warp computes a
// 64 x 64 quarter of the tile, its lanes 4 along the rows and 8 along the columns, each
// thread rows 16q + 4 lane_row + {0..3} and columns 32h + 4 lane_col + {0..3} of it: a k
// step's row fragment is 4 distinct float4 across the warp and its column fragment 8 (one
// 128-byte shared-memory wavefront each), as in cuBLASLt's kernel, instead of 2 and 16.
// kPointerCopies: each thread's global sources and shared destinations of the copies are
// computed once and advanced tile by tile (the sources by kBK rows, the stage by one), as
// cuBLASLt's kernel does, instead of recomputed from the tile's index with 64-bit
// multiplies in the loop (issue_tile). kPrefetchTiles (update epilogue only): that many k
// tiles before the end, each thread asks L2 for one row of the tile's velocity and
// parameter (prefetch.global.L2), so their DRAM reads overlap the last products and the
// epilogue's loads hit L2. kBatchRows (update epilogue): the velocity and parameter of that
// many of the thread's rows loaded before any of them is updated, so more loads are in flight.
template <int kThreadCount, int kBK, int kStages, Epilogue kEpi, int kMinBlocks, int kTileN = 128,
          int kOrder = kRowMajor, bool kSquareWarps = false, bool kPointerCopies = false, int kPrefetchTiles = 0,
          int kBatchRows = 1>
__global__ void __launch_bounds__(kThreadCount, kMinBlocks) sgemm_at_b_fragpipe(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, float* __restrict__ p, int m,
    int n, int K, float lr, float mu) {
  constexpr int kRowQuads = kBM * 4 / kThreadCount, kColQuads = kTileN / 64;
  constexpr int kRowStep = kSquareWarps ? 16 : kBM / kRowQuads, kColStep = kSquareWarps ? 32 : 64;
  constexpr int kRows = 4 * kRowQuads, kCols = 4 * kColQuads;
  static_assert(kBK % 2 == 0, "the next tile's first fragments go to buffer 0");
  static_assert(!kSquareWarps || (kThreadCount == 128 && kTileN == 128), "square warps: 128 threads, 128 x 128");
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                        // [kStages][kBK][kBM]
  float* bs = smem + kStages * kBK * kBM;  // [kStages][kBK][kTileN]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // The thread's first row and column within the tile.
  const int row0 = kSquareWarps ? warp / 2 * 64 + lane / 8 * 4 : tid / 16 * 4;
  const int col0 = kSquareWarps ? warp % 2 * 64 + lane % 8 * 4 : tid % 16 * 4;
  const int i0 = blockIdx.y * kBM, j0 = blockIdx.x * kTileN;
  const int tiles = K / kBK;
  constexpr int kAQuads = kBM / 4, kBQuads = kTileN / 4;  // float4 copies a row
  constexpr int kACopies = kBK * kAQuads / kThreadCount, kBCopies = kBK * kBQuads / kThreadCount;
  constexpr int kARowsApart = kThreadCount / kAQuads, kBRowsApart = kThreadCount / kBQuads;
  const float* ga = a + static_cast<long>(tid / kAQuads) * m + i0 + tid % kAQuads * 4;
  const float* gb = b + static_cast<long>(tid / kBQuads) * n + j0 + tid % kBQuads * 4;
  const long a_apart = static_cast<long>(kARowsApart) * m, b_apart = static_cast<long>(kBRowsApart) * n;
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(as + tid / kAQuads * kBM + tid % kAQuads * 4));
  const unsigned sb =
      static_cast<unsigned>(__cvta_generic_to_shared(bs + tid / kBQuads * kTileN + tid % kBQuads * 4));
  int write_stage = 0;
  auto issue = [&](int tile) {
    if constexpr (!kPointerCopies) {
      issue_tile<kThreadCount, kBK, kStages, kTileN>(as, bs, a, b, m, n, i0, j0, tile, tiles);
    } else {  // tiles are issued in order, so the pointers are at `tile`'s rows
      if (tile < tiles) {
#pragma unroll
        for (int l = 0; l < kACopies; ++l)
          cp_async16(sa + 4u * static_cast<unsigned>(write_stage * kBK * kBM + l * kARowsApart * kBM), ga + l * a_apart);
#pragma unroll
        for (int l = 0; l < kBCopies; ++l)
          cp_async16(sb + 4u * static_cast<unsigned>(write_stage * kBK * kTileN + l * kBRowsApart * kTileN),
                        gb + l * b_apart);
        ga += static_cast<long>(kBK) * m;
        gb += static_cast<long>(kBK) * n;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
      cp_async_commit();
    }
  };
  float av[2][kRows], bv[2][kCols];
  auto load_fragments = [&](int buf, int stage, int k) {
    tg::kernels::cuda::load_kmajor_fragments<kRowStep, kColStep>(av[buf], bv[buf], as + stage * kBK * kBM + k * kBM,
                                                                 bs + stage * kBK * kTileN + k * kTileN, row0, col0);
  };
  float acc[kRows][kCols] = {};
  auto order = [](int s) { return product_at<kOrder, kRows, kCols>(s); };
  auto prefetch = [&](int tile, int k) {
    if constexpr (kEpi == Epilogue::sgd_momentum && kPrefetchTiles > 0) {
      if (k == 1 && tile == tiles - kPrefetchTiles) {
        // kBM rows of 4 * kTileN bytes in each array: kBM * kTileN / 32 lines of 128 bytes.
#pragma unroll
        for (int line = tid; line < kBM * kTileN / 32; line += kThreadCount) {
          const long at = static_cast<long>(i0 + line / (kTileN / 32)) * n + j0 + line % (kTileN / 32) * 32;
          asm volatile("prefetch.global.L2 [%0];" ::"l"(out + at));
          asm volatile("prefetch.global.L2 [%0];" ::"l"(p + at));
        }
      }
    }
  };
  tg::kernels::cuda::simt_main_loop<kBK, kStages>(tiles, acc, av, bv, issue, load_fragments, order, prefetch);
  if constexpr (kEpi == Epilogue::sgd_momentum) {
    static_assert(kRows % kBatchRows == 0, "whole batches");
#pragma unroll
    for (int r0 = 0; r0 < kRows; r0 += kBatchRows) {
      float4 v[kBatchRows][kColQuads], w[kBatchRows][kColQuads];
      long at[kBatchRows][kColQuads];
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < kColQuads; ++h) {
          const int i = i0 + kRowStep * ((r0 + r) / 4) + row0 + (r0 + r) % 4;
          at[r][h] = static_cast<long>(i) * n + j0 + kColStep * h + col0;
          v[r][h] = *reinterpret_cast<const float4*>(out + at[r][h]);
          w[r][h] = *reinterpret_cast<const float4*>(p + at[r][h]);
        }
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < kColQuads; ++h) {
          const float* g = &acc[r0 + r][h * 4];
          *reinterpret_cast<float4*>(out + at[r][h]) =
              sgd_momentum4(v[r][h], make_float4(g[0], g[1], g[2], g[3]), w[r][h], lr, mu);
          *reinterpret_cast<float4*>(p + at[r][h]) = w[r][h];
        }
    }
  } else {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int i = i0 + kRowStep * (r / 4) + row0 + r % 4;
#pragma unroll
      for (int h = 0; h < kColQuads; ++h) {
        const long at = static_cast<long>(i) * n + j0 + kColStep * h + col0;
        finish4<kEpi>(out, p, at, make_float4(acc[r][h * 4], acc[r][h * 4 + 1], acc[r][h * 4 + 2], acc[r][h * 4 + 3]),
                      lr, mu);
      }
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
  auto stages_bytes = [](int bk, int stages, int tile_n) {
    return static_cast<size_t>(stages) * bk * (kBM + tile_n) * sizeof(float);
  };
  auto check_product = [&](const char* what, auto&& run) {
    double d = 0;
    for (int l = 0; l < G; ++l) {
      run(l);
      CK(cudaStreamSynchronize(s));
      d = std::max(d, max_rel_diff(grad[l], mine[l], kWeight));
    }
    std::printf("%s dW against cuBLASLt: max rel diff %.3g\n", what, d);
  };
  // The update: one step of cuBLASLt + the update kernel against one of `run`, both from
  // the reference's current state (the timed runs move the own state on).
  auto check_update = [&](const char* what, auto&& run) {
    double dv = 0, dp = 0;
    for (int l = 0; l < G; ++l) {
      CK(cudaMemcpyAsync(v_own[l], v_ref[l], kWeight * sizeof(float), cudaMemcpyDeviceToDevice, s));
      CK(cudaMemcpyAsync(p_own[l], p_ref[l], kWeight * sizeof(float), cudaMemcpyDeviceToDevice, s));
      lt_gemm(l, 0);
      ref_update(l);
      run(l);
    }
    CK(cudaStreamSynchronize(s));
    for (int l = 0; l < G; ++l) {
      dv = std::max(dv, max_rel_diff(v_ref[l], v_own[l], kWeight));
      dp = std::max(dp, max_rel_diff(p_ref[l], p_own[l], kWeight));
    }
    std::printf("%s update against cuBLASLt + update: max rel diff v %.3g, p %.3g\n", what, dv, dp);
  };
  auto timed = [&](auto&& body) { return median_us(s, body); };
  const double flop = 2.0 * kBatch * kIn * static_cast<double>(kOut) * G;
  auto row = [&](const char* name, float us) {
    std::printf("  %-58s %9.1f us  %6.1f TFLOP/s\n", name, us, flop / (us * 1e-6) / 1e12);
  };
  // One own kernel configuration: its product checked against cuBLASLt's bits (and its
  // update against cuBLASLt + the update kernel's), then timed for the three weights back
  // to back.
  auto config = [&](const char* what, auto kernel, bool update, int threads, int bk, int stages, int tile_n) {
    const size_t smem = bk == 0 ? 0 : stages_bytes(bk, stages, tile_n);
    if (smem > 0)
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    auto one = [&](int l) { own(l, kernel, threads, smem, update, tile_n); };
    if (update) check_update(what, one);
    else check_product(what, one);
    row(what, timed([&] { for (int l = 0; l < G; ++l) one(l); }));
  };

  std::printf("%d weight gradients %d x %d, batch %d (fp32), back to back; each own kernel checked first:\n", G,
              kIn, kOut, kBatch);
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

  constexpr auto kS = Epilogue::store;
  constexpr auto kU = Epilogue::sgd_momentum;
  // The designs in the order they were found, each step one change.
  config("register prefetch, 256 thr, k8, store", sgemm_at_b<8, kS>, false, kThreads, 0, 0, kBN);
  config("register prefetch, 256 thr, k8, update", sgemm_at_b<8, kU>, true, kThreads, 0, 0, kBN);
  config("cp.async, 128 thr, k8, 4 stages, store", sgemm_at_b_pipelined<kWideThreads, 8, 4, kS, 3>, false,
         kWideThreads, 8, 4, kBN);
  config("cp.async, 128 thr, k8, 4 stages, update", sgemm_at_b_pipelined<kWideThreads, 8, 4, kU, 3>, true,
         kWideThreads, 8, 4, kBN);
  config("+ fragments double-buffered, store", sgemm_at_b_fragpipe<kWideThreads, 8, 4, kS, 2>, false, kWideThreads, 8,
         4, kBN);
  config("+ serpentine order, store", sgemm_at_b_fragpipe<kWideThreads, 8, 4, kS, 2, kBN, kSerpentine>, false,
         kWideThreads, 8, 4, kBN);
  config("+ pointer copies, store", sgemm_at_b_fragpipe<kWideThreads, 8, 4, kS, 2, kBN, kSerpentine, false, true>,
         false, kWideThreads, 8, 4, kBN);
  config("+ k step 16, store", sgemm_at_b_fragpipe<kWideThreads, 16, 4, kS, 2, kBN, kSerpentine, false, true>, false,
         kWideThreads, 16, 4, kBN);
  // The order of a k step's products with everything else fixed (k step 16, pointer copies):
  // the register allocation it leads to decides several percent.
  const char* order_names[] = {"row-major", "column-major", "serpentine", "serpentine columns", "2 x 2 Z",
                               "2 x 2 Z by columns"};
  auto order_row = [&](auto order_tag) {
    constexpr int kOrder = decltype(order_tag)::value;
    char what[96];
    std::snprintf(what, sizeof what, "k16 pointer copies, %s, store", order_names[kOrder]);
    config(what, sgemm_at_b_fragpipe<kWideThreads, 16, 4, kS, 2, kBN, kOrder, false, true>, false, kWideThreads, 16,
           4, kBN);
  };
  order_row(std::integral_constant<int, kRowMajor>{});
  order_row(std::integral_constant<int, kColMajor>{});
  order_row(std::integral_constant<int, kSerpentine>{});
  order_row(std::integral_constant<int, kSerpentineCols>{});
  order_row(std::integral_constant<int, kZ2x2>{});
  order_row(std::integral_constant<int, kZ2x2Cols>{});
  config("k16 pointer copies, serpentine, 64 x 64 warps, store",
         sgemm_at_b_fragpipe<kWideThreads, 16, 4, kS, 2, kBN, kSerpentine, true, true>, false, kWideThreads, 16, 4, kBN);
  config("k16 pointer copies, serpentine, 128 x 256 tiles, store",
         sgemm_at_b_fragpipe<kThreads, 16, 3, kS, 1, 256, kSerpentine, false, true>, false, kThreads, 16, 3, 256);
  // The update in the epilogue of the fast kernel: loaded one row at a time, the velocity
  // and parameter reads of every block of a wave land at once; batches of rows put more
  // of them in flight.
  config("k16 pointer copies, serpentine, update a row at a time", sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentine,
                                                                       false, true>,
         true, kWideThreads, 16, 4, kBN);
  config("  + rows in batches of 2", sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentine, false, true, 0, 2>,
         true, kWideThreads, 16, 4, kBN);
  config("  + rows in batches of 4", sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentine, false, true, 0, 4>,
         true, kWideThreads, 16, 4, kBN);
  config("  + rows in batches of 8", sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentine, false, true, 0, 8>,
         true, kWideThreads, 16, 4, kBN);
  config("  + batches of 4, L2 prefetch 4 tiles ahead",
         sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentine, false, true, 4, 4>, true, kWideThreads, 16, 4,
         kBN);
  config("k16 pointer copies, serpentine columns, batches of 4, update",
         sgemm_at_b_fragpipe<kWideThreads, 16, 4, kU, 2, kBN, kSerpentineCols, false, true, 0, 4>, true, kWideThreads,
         16, 4, kBN);
  return 0;
}
