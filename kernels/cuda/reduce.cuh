#pragma once
// The reduction frame (internal to kernels/cuda): sums over one axis of a tensor seen as
// [outer, len, inner], in double, in an order fixed by the element positions alone.
//
// The order depends on a value's position along the reduced axis (and on inner), never
// on len, outer, the grid, the alignment or the scratch size. So zero rows appended at
// the end of the axis (a padded batch, docs/architecture.md "Bucket padding is exact")
// only add +0.0 to sums that already exist, and every output keeps its bits; and the
// direct, looped and split executions below give the same bits. Every sum starts at
// +0.0, so none is ever -0.0 and adding a zero never changes a bit.
//  - inner > 1 (columns): row r is in group g = (r / 16) mod 256; a group sums its rows
//    in increasing order; block partial b (b < 32) adds groups 8b..8b+7 in order; the
//    result adds the block partials in order.
//  - inner == 1 (rows): the axis is cut into chunks of 8192 values. In a chunk, lane t
//    of a warp keeps four sums, component i over positions 128k + 4t + i for k = 0, 1,
//    ... in order; the lane adds them as (c0 + c1) + (c2 + c3), the warp by the
//    xor-shuffle tree (warp_sum). The result adds the chunk sums as finish_kernel does.
//  - finish_kernel, the common last step of every split reduction (layernorm_grad_gamma_beta's
//    too): parts p_0, p_1, ... are added in order in runs of 32, and the runs in order.
//    For 32 parts or fewer that is one ordered sum.
//
// Bytes in flight, the thing that sets the bandwidth of these loops: a column warp loads
// 16 rows x 512 B before it adds (64 float registers), a row warp 8 x 512 B; at two to
// four such blocks of 8 warps per SM that is 64-128 KB per SM, above the ~30 KB per SM
// that 4 TB/s at ~1 us of loaded DRAM latency needs. The double adds cost one
// float->double conversion per element; at 16 per clock per SM (sm_90) the GPU converts
// 4M elements per microsecond, 4 times what 4 TB/s delivers.
//
// Variants of the column loop (TG_COLREDUCE / set_col_reduce_variant, cuda_kernels.h),
// all in the order above, so all give the same bits; kept side by side until measured.
// On an H200 at 64 MiB ([16384, 1024]) variant 0 reaches 68% of copy and 91% at 256 MiB:
// 28.2 against 71.6 us for 4x the bytes is ~13 us of fixed cost, of which finish_kernel
// is ~2. The split launch is 8 tiles x 32 partials = 256 blocks, 2 per SM, all resident
// at once; each warp runs 4 tiles of 16 rows at 64 MiB (16 at 256 MiB).
//  0: each warp loads a tile (16 x 512 B = 8 KB), waits for all of it, adds it (64
//     conversions per lane, ~1 us per SM for the 16 warps' tiles), then loads the next:
//     128 KB per SM in flight at the start of a tile, none while it is added. All warps
//     start together, so at 64 MiB the GPU moves in ~4 synchronized waves of 17 MB,
//     with the DRAM queue draining between them; at 256 MiB the warps drift apart and
//     the queue stays full.
//  1: the tile as two halves of 8 rows, the next half's loads issued before the current
//     half is added: always 8-16 rows (4-8 KB) per warp, 64-128 KB per SM in flight,
//     while converting too, with the same 64 float registers. Expected: most of the
//     per-wave drain gone at 64 MiB (a few us), the same at 256 MiB.
//  2: 1, and a split launch ends without finish_kernel: the last of a column tile's 32
//     block partials to finish (a counter per tile, col_done_slots) adds the 32 partials
//     of its 128 columns itself. One launch instead of two: saves finish_kernel's wait
//     for the whole grid, its launch and its L2 round trip (~1-2 us).
#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"

namespace tg::kernels::cuda {
int col_reduce_variant();  // cuda_kernels.h
}

namespace tg::kernels::cuda::detail {

constexpr int kColWidth = 128;                     // columns per warp, 4 per lane
constexpr int kColTile = 16;                       // rows of one group a warp loads at once
constexpr int kColGroups = 256;
constexpr int kColWarps = 8;                       // groups per block partial
constexpr int kColParts = kColGroups / kColWarps;  // block partials: 32 at most
constexpr int64_t kRowChunk = 8192;
constexpr int kRun = 32;  // parts per run in finish_kernel

// A Load gives the value at flat index i, at position a along the reduced axis:
// float at(int64_t i, int64_t a) and float4 at4(int64_t i, int64_t a) (i % 4 == 0, 16-byte aligned).
struct PlainLoad {
  const float* x;
  __device__ float at(int64_t i, int64_t) const { return x[i]; }
  __device__ float4 at4(int64_t i, int64_t) const { return *reinterpret_cast<const float4*>(x + i); }
};

// ---- finish: out[k] (+)= scale * the ordered sum of part[k * nparts ...] ---------------
// Outputs k < n0 go to y0[k], the others to y1[k - n0] (layernorm's dgamma and dbeta in
// one launch). Defined in reduce.cu.
void launch_finish(const double* part, int64_t nparts, int64_t n, float* y0, int64_t n0, float* y1, double scale,
                   bool accumulate, cudaStream_t s);

// ---- columns (inner > 1) --------------------------------------------------------------
struct ColShape {
  int64_t outer, len, inner;
  int64_t n_ct;   // 128-column tiles per outer index
  int64_t tile0;  // first (outer, column tile) of this launch; blockIdx.x counts from it
  int nb;         // block partials: min(32, ceil(len / 128))
};

// Column of lane l's slot i: the vector path owns 4 adjacent columns (one float4), the
// scalar one 4 columns 32 apart (each load instruction coalesced). A column's sum does
// not depend on which lane owns it.
template <bool kVec>
__device__ __forceinline__ int col_of(int lane, int i) {
  return kVec ? 4 * lane + i : lane + 32 * i;
}

// Adds the 4 values of q to 4 double sums, component by component.
__device__ __forceinline__ void add4(double (&a)[4], const float4& q) {
  a[0] += static_cast<double>(q.x);
  a[1] += static_cast<double>(q.y);
  a[2] += static_cast<double>(q.z);
  a[3] += static_cast<double>(q.w);
}
// p[0..3], those with ok[i] only (0 elsewhere).
template <typename Get>
__device__ __forceinline__ float4 gather4(const bool (&ok)[4], Get get) {
  return make_float4(ok[0] ? get(0) : 0.0f, ok[1] ? get(1) : 0.0f, ok[2] ? get(2) : 0.0f, ok[3] ? get(3) : 0.0f);
}

// Rows r0 .. r0 + N - 1 of one lane's columns; kFull: all of them exist. Absent values are 0.
template <bool kVec, bool kFull, typename Load, int N>
__device__ __forceinline__ void load_col_tile(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                              const int64_t (&col)[4], const bool (&ok)[4], float4 (&v)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int64_t r = r0 + j;
    const int64_t row = base + r * inner;
    const bool in = kFull || r < len;
    if constexpr (kVec) {
      v[j] = in ? load.at4(row + col[0], r) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
      const bool here[4] = {in && ok[0], in && ok[1], in && ok[2], in && ok[3]};
      v[j] = gather4(here, [&](int i) { return load.at(row + col[i], r); });
    }
  }
}

// Rows r0 .. r0 + N - 1, predicated only when some of them are past len.
template <bool kVec, typename Load, int N>
__device__ __forceinline__ void load_col_rows(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                              const int64_t (&col)[4], const bool (&ok)[4], float4 (&v)[N]) {
  if (r0 + N <= len)
    load_col_tile<kVec, true>(load, base, r0, len, inner, col, ok, v);
  else
    load_col_tile<kVec, false>(load, base, r0, len, inner, col, ok, v);
}
template <int N>
__device__ __forceinline__ void add_rows(double (&acc)[4], const float4 (&v)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) add4(acc, v[j]);
}

// acc += one group's rows in increasing order: the tiles of kColTile rows at first,
// first + 4096, ... A lane without columns (past inner) skips the loads.
//  - kPipe false (variant 0): a tile's 16 loads issue back to back (unpredicated when the
//    tile is full), then the 16 rows are added; nothing is in flight while they are.
//  - kPipe true (variants 1, 2): the tile in two halves of 8 rows, the next half's loads
//    issued before the current half is added, so 8 to 16 rows are always in flight (the
//    same 64 float registers). Same rows, same order, same bits; an absent half is not
//    loaded, an absent row of a present one adds +0.0 as in variant 0.
template <bool kPipe, bool kVec, typename Load>
__device__ __forceinline__ void col_group_sum(const Load& load, const ColShape& sh, int64_t base, int64_t first,
                                              const int64_t (&col)[4], const bool (&ok)[4], double (&acc)[4]) {
  const int64_t step = int64_t{kColGroups} * kColTile;
  if (!ok[0] || first >= sh.len) return;
  if constexpr (!kPipe) {
    for (int64_t r0 = first; r0 < sh.len; r0 += step) {
      float4 v[kColTile];
      load_col_rows<kVec>(load, base, r0, sh.len, sh.inner, col, ok, v);
      add_rows(acc, v);
    }
  } else {
    constexpr int kHalf = kColTile / 2;
    float4 a[kHalf], b[kHalf];
    load_col_rows<kVec>(load, base, first, sh.len, sh.inner, col, ok, a);
    for (int64_t r0 = first;; r0 += step) {
      const bool second = r0 + kHalf < sh.len;
      if (second) load_col_rows<kVec>(load, base, r0 + kHalf, sh.len, sh.inner, col, ok, b);
      add_rows(acc, a);
      if (!second) return;
      const bool next = r0 + step < sh.len;
      if (next) load_col_rows<kVec>(load, base, r0 + step, sh.len, sh.inner, col, ok, a);
      add_rows(acc, b);
      if (!next) return;
    }
  }
}

// Variant 2's end of a split launch: the block partials of column tile blockIdx.x that
// arrive count on done[blockIdx.x]; the last to arrive adds the tile's nb partials, a
// thread per column, in the order finish_kernel does (one ordered sum: nb <= 32), so the
// bits are finish_kernel's, whichever block comes last. It then sets the counter back to
// 0, so each launch finds its counters at 0 (col_done_slots).
__device__ __forceinline__ void finish_col_tile(const ColShape& sh, int64_t o, int64_t c0, float* y, const double* part,
                                                int64_t out0, unsigned* done, double scale, bool accumulate) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(done + blockIdx.x, 1u) == static_cast<unsigned>(sh.nb - 1);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int64_t c = c0 + threadIdx.x;
  if (threadIdx.x < kColWidth && c < sh.inner) {
    const double* p = part + (o * sh.inner + c - out0) * sh.nb;
    double v[kColParts];
#pragma unroll
    for (int k = 0; k < kColParts; ++k) v[k] = k < sh.nb ? __ldcg(p + k) : 0.0;
    double total = 0.0;
#pragma unroll
    for (int k = 0; k < kColParts; ++k) total += v[k];
    float* dst = y + o * sh.inner + c;
    *dst = static_cast<float>(total * scale) + (accumulate ? *dst : 0.0f);
  }
  if (threadIdx.x == 0) done[blockIdx.x] = 0;
}

// One block of 8 warps per (outer index, column tile); warp w computes group 8b + w of
// block partial b. kSplit: blockIdx.y is b, the partial goes to part[(out - out0) * nb + b];
// otherwise the block computes b = 0..nb-1 in turn and writes y (direct when nb == 1).
// kV, the variant (col_reduce_variant): 0 today's loads, 1 pipelined loads, 2 pipelined
// loads and, split, the last block partial of a tile finishing it (no finish_kernel).
template <int kV, bool kVec, bool kSplit, typename Load>
__global__ void __launch_bounds__(256, 2) reduce_cols_kernel(Load load, ColShape sh, float* y, double* part,
                                                          int64_t out0, unsigned* done, double scale,
                                                          bool accumulate) {
  static_assert(kV != 2 || kSplit, "variant 2 differs from 1 only when split");
  pdl::prologue();
  __shared__ double wsum[kColWarps][4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t tile = sh.tile0 + blockIdx.x;
  const int64_t o = tile / sh.n_ct;
  const int64_t c0 = (tile % sh.n_ct) * kColWidth;
  int64_t col[4];
  bool ok[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    col[i] = c0 + col_of<kVec>(lane, i);
    ok[i] = col[i] < sh.inner;
  }
  const int64_t base = o * sh.len * sh.inner;
  double total[4] = {0.0, 0.0, 0.0, 0.0};
  const int b_end = kSplit ? static_cast<int>(blockIdx.y) + 1 : sh.nb;
  for (int b = kSplit ? static_cast<int>(blockIdx.y) : 0; b < b_end; ++b) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    col_group_sum<kV != 0, kVec>(load, sh, base, (int64_t{b} * kColWarps + w) * kColTile, col, ok, acc);
#pragma unroll
    for (int i = 0; i < 4; ++i) wsum[w][i][lane] = acc[i];
    __syncthreads();
    if (w == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        double p = 0.0;
#pragma unroll
        for (int k = 0; k < kColWarps; ++k) p += wsum[k][i][lane];
        if constexpr (kSplit) {
          if (ok[i]) part[(o * sh.inner + col[i] - out0) * sh.nb + b] = p;
        } else {
          total[i] += p;
        }
      }
      if constexpr (kV == 2) __threadfence();  // the partials before the count (finish_col_tile)
    }
    __syncthreads();
  }
  if constexpr (kV == 2) finish_col_tile(sh, o, c0, y, part, out0, done, scale, accumulate);
  if (!kSplit && w == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (ok[i]) {
        float* dst = y + o * sh.inner + col[i];
        *dst = static_cast<float>(total[i] * scale) + (accumulate ? *dst : 0.0f);
      }
  }
}

// n consecutive done counters for variant 2 (device memory of reduce.cu, all 0 between
// launches), taken in turn from a ring of 65536: two launches in flight at once (graphs
// on several streams) get different ones unless 65536 counters were taken in between.
unsigned* col_done_slots(int64_t n);

template <bool kSplit, typename Load>
auto cols_kernel(int variant, bool vec) {
  if constexpr (kSplit) {
    if (variant == 2) return vec ? reduce_cols_kernel<2, true, kSplit, Load> : reduce_cols_kernel<2, false, kSplit, Load>;
  }
  if (variant == 0) return vec ? reduce_cols_kernel<0, true, kSplit, Load> : reduce_cols_kernel<0, false, kSplit, Load>;
  return vec ? reduce_cols_kernel<1, true, kSplit, Load> : reduce_cols_kernel<1, false, kSplit, Load>;
}

// y[o, i] (+)= scale * sum over the axis. `vec`: inner % 4 == 0 and every pointer the
// load reads is 16-byte aligned. With scratch (8 bytes per output and block partial)
// and few column tiles, the block partials run as separate blocks and finish_kernel (or,
// variant 2, their last block) adds them; otherwise each block loops over its partials.
// Same bits either way, and in every variant.
template <typename Load>
void launch_reduce_cols(const Load& load, bool vec, float* y, int64_t outer, int64_t len, int64_t inner, double scale,
                        bool accumulate, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  const int variant = col_reduce_variant();
  ColShape sh{outer, len, inner, (inner + kColWidth - 1) / kColWidth, 0, 0};
  const int64_t nb = (len + kColWarps * kColTile - 1) / (kColWarps * kColTile);
  sh.nb = static_cast<int>(nb < 1 ? 1 : nb > kColParts ? kColParts : nb);
  const int64_t tiles = outer * sh.n_ct;
  const int64_t per_tile = int64_t{kColWidth} * sh.nb * static_cast<int64_t>(sizeof(double));
  const int64_t fit = scratch ? static_cast<int64_t>(scratch_bytes) / per_tile : 0;
  // Split only when looping would leave SMs idle: 4 blocks per SM is enough without.
  const bool split = sh.nb > 1 && tiles < 4 * static_cast<int64_t>(sm_count()) && fit >= 1;
  const int64_t per_launch = split ? fit : int64_t{0x7fffffff};
  for (int64_t t0 = 0; t0 < tiles; t0 += per_launch) {
    const int64_t n = tiles - t0 < per_launch ? tiles - t0 : per_launch;
    sh.tile0 = t0;
    if (!split) {
      launch(TG_LAUNCH_SITE, cols_kernel<false, Load>(variant, vec), dim3(static_cast<unsigned>(n)), kBlock, s, load,
             sh, y, nullptr, int64_t{0}, nullptr, scale, accumulate);
      continue;
    }
    // The outputs of tiles [t0, t0 + n) are contiguous: from the first tile's first
    // column to the last tile's last one.
    const int64_t out0 = (t0 / sh.n_ct) * inner + (t0 % sh.n_ct) * kColWidth;
    const int64_t last = t0 + n - 1;
    const int64_t end_col = ((last % sh.n_ct) + 1) * kColWidth;
    const int64_t out1 = (last / sh.n_ct) * inner + (end_col < inner ? end_col : inner);
    double* part = static_cast<double*>(scratch);
    unsigned* done = variant == 2 ? col_done_slots(n) : nullptr;
    launch(TG_LAUNCH_SITE, cols_kernel<true, Load>(variant, vec),
           dim3(static_cast<unsigned>(n), static_cast<unsigned>(sh.nb)), kBlock, s, load, sh, y, part, out0, done,
           scale, accumulate);
    if (variant != 2) launch_finish(part, sh.nb, out1 - out0, y + out0, out1 - out0, nullptr, scale, accumulate, s);
  }
}

// ---- rows (inner == 1) ------------------------------------------------------------------
// y[o] = scale * sum of x[o * len ...]; scratch, when given, lets a few long rows spread
// over many warps. `vec`: every row starts 16-byte aligned.
void launch_reduce_rows(const float* x, bool vec, float* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s);

}  // namespace tg::kernels::cuda::detail
