#pragma once
// The reduction frame (internal to kernels/cuda): sums over one axis of a tensor seen as
// [outer, len, inner], in double, in an order fixed by the element positions alone.
//
// The order-of-sums contract. The order depends on a value's position along the reduced
// axis (and on inner), never on len, outer, the grid, the alignment or the scratch size.
// So zero rows appended at the end of the axis (a padded batch, docs/architecture.md
// "Bucket padding is exact") only add +0.0 to sums that already exist, and every output
// keeps its bits; the looped and split launches below give the same bits; and the static
// and dynamic executors get bitwise equal results whatever buffers, alignment and scratch
// each hands the kernels. Every sum starts at +0.0, so none is ever -0.0 and adding a
// zero never changes a bit.
//  - inner > 1 (columns): row r is in group g = (r / 16) mod 256; a group sums its rows
//    in increasing order; block partial b (b < 32) adds groups 8b..8b+7 in order; the
//    result adds the block partials in order. Which lane or warp owns a column does not
//    enter the order.
//  - inner == 1 (rows): the axis is cut into chunks of 8192 values. In a chunk, lane t
//    of a warp keeps four sums, component i over positions 128k + 4t + i for k = 0, 1,
//    ... in order; the lane adds them as (c0 + c1) + (c2 + c3), the warp by the
//    xor-shuffle tree (warp_sum). The result adds the chunk sums as finish_kernel does.
//  - finish_kernel, the common last step of a split reduction (finish_col_tile and
//    layernorm's ln_finish_kernel add in its order too): parts p_0, p_1, ... are added in
//    order in runs of 32, and the runs in order. For 32 parts or fewer that is one
//    ordered sum.
// Any kernel that changes how these sums are grouped changes output bits; a faster order
// has to be proved against this one (dev/cuda/colreduce_variants.cu times the orders and
// loop shapes that were tried).
//
// Bytes in flight, the thing that sets the bandwidth of these loops: a column warp loads
// 16 rows x 512 B before it adds (64 float registers), a row warp 8 x 512 B; at two to
// four such blocks of 8 warps per SM that is 64-128 KB per SM, above the ~30 KB per SM
// that 4 TB/s at ~1 us of loaded DRAM latency needs. The double adds cost one
// float->double conversion per element; at 16 per clock per SM (sm_90) the GPU converts
// 4M elements per microsecond, 4 times what 4 TB/s delivers.
//
// The column loop has two launches, both in the order above:
//  - looped (many column tiles, or no scratch): a block of 8 warps per (outer index,
//    128-column tile), a lane owning 4 columns (a float4); the block computes its block
//    partials in turn. A warp loads a group's tile in two halves of 8 rows and issues
//    the next half's loads before it adds the current one, so 8 to 16 rows are always in
//    flight while it converts.
//  - split (few column tiles and scratch for the partials): a block per (32-column tile,
//    block partial), a column per lane (each row one coalesced 128-byte line, scalar
//    loads, one double sum per lane), so there are 4 times the blocks of 128-column
//    tiles: at 64 registers 4 blocks of 8 warps fit an SM, and short blocks refill idle
//    SMs as the row kernel's do instead of the whole grid moving in a few synchronized
//    waves. The last block partial of a tile to finish adds the tile's partials itself
//    (finish_col_tile), which saves a second launch and its wait for the whole grid.
#include <cstddef>
#include <cstdint>

namespace tg::kernels::cuda::detail {

constexpr int kColWidth = 128;                     // columns per warp, 4 per lane
constexpr int kNarrowWidth = 32;                   // split: columns per warp, 1 per lane
constexpr int kColTile = 16;                       // rows of one group a warp loads at once
constexpr int kColGroups = 256;
constexpr int kColWarps = 8;                       // groups per block partial
constexpr int kColParts = kColGroups / kColWarps;  // block partials: 32 at most
constexpr int64_t kRowChunk = 8192;
constexpr int kRun = 32;  // parts per run in finish_kernel

// How launch_reduce_cols runs a column reduction (host logic only, so that it is testable
// without a device; defined in reduce.cu). Split: the block partials run as separate
// blocks of `width` (32) columns, n_ct tiles per outer index, per_launch tiles at a time,
// as many as the scratch holds; otherwise one launch loops, in tiles of 128 columns.
struct ColPlan {
  bool split;
  int width;
  int64_t n_ct;
  int nb;
  int64_t per_launch;
};
ColPlan col_plan(int64_t outer, int64_t len, int64_t inner, size_t scratch_bytes, int sms);

// The outputs of column tiles [t0, t0 + n) of `width` columns (n_ct per outer index) are
// contiguous: from the first tile's first column to the last tile's last one. Returns
// them as [first, end).
inline void col_tile_outputs(int64_t n_ct, int64_t inner, int64_t t0, int64_t n, int width, int64_t& first,
                             int64_t& end) {
  first = (t0 / n_ct) * inner + (t0 % n_ct) * width;
  const int64_t last = t0 + n - 1;
  const int64_t end_col = ((last % n_ct) + 1) * width;
  end = (last / n_ct) * inner + (end_col < inner ? end_col : inner);
}

}  // namespace tg::kernels::cuda::detail

// The rest is device code, for the .cu files only (the plan above is also for host tests).
#if defined(__CUDACC__)
#include <cuda_runtime.h>


#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda::detail {

// A Load gives the value at flat index i, at position a along the reduced axis, widened
// to float: float at(int64_t i, int64_t a) and float4 at4(int64_t i, int64_t a) (i % 4 == 0,
// aligned4). The sums are the same for every element type: only the loads widen, and the
// outputs (Y: float, Bf16 or F16) round once, from the float that f32 would store.
template <typename T>
struct PlainLoadOf {
  const T* x;
  __device__ float at(int64_t i, int64_t) const { return x[i]; }
  __device__ float4 at4(int64_t i, int64_t) const { return load4_wide(x + i); }
};
using PlainLoad = PlainLoadOf<float>;
template <typename Load>
constexpr bool kIsPlainLoad = false;
template <typename T>
constexpr bool kIsPlainLoad<PlainLoadOf<T>> = true;

// An output of the frame: scale * total (+ the value there with `accumulate`), rounded to
// float as f32 stores it, then to Y.
template <typename Y>
__device__ __forceinline__ void store_sum(Y* dst, double total, double scale, bool accumulate) {
  *dst = narrow<Y>(static_cast<float>(total * scale) + (accumulate ? static_cast<float>(*dst) : 0.0f));
}

// ---- finish: out[k] (+)= scale * the ordered sum of part[k * nparts ...] ---------------
// Outputs k < n0 go to y0[k], the others to y1[k - n0] (layernorm's dgamma and dbeta in
// one launch). Defined in reduce.cu for Y float, Bf16 and F16.
template <typename Y>
void launch_finish(const double* part, int64_t nparts, int64_t n, Y* y0, int64_t n0,
                   typename std::remove_const<Y>::type* y1, double scale, bool accumulate, cudaStream_t s);

// ---- columns (inner > 1) --------------------------------------------------------------
struct ColShape {
  int64_t outer, len, inner;
  int64_t n_ct;   // column tiles per outer index: of 128 columns looped, 32 split
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
// first + 4096, ... A lane without columns (past inner) skips the loads. A tile goes in
// two halves of 8 rows, the next half's loads issued before the current half is added,
// so 8 to 16 rows are always in flight (64 float registers); an absent half is not
// loaded, an absent row of a present one adds +0.0.
template <bool kVec, typename Load>
__device__ __forceinline__ void col_group_sum(const Load& load, const ColShape& sh, int64_t base, int64_t first,
                                              const int64_t (&col)[4], const bool (&ok)[4], double (&acc)[4]) {
  const int64_t step = int64_t{kColGroups} * kColTile;
  if (!ok[0] || first >= sh.len) return;
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

// Column tile `tile`: its outer index o, first column c0, lane's columns and which exist.
template <bool kVec>
__device__ __forceinline__ void tile_columns(const ColShape& sh, int64_t tile, int lane, int64_t& o, int64_t& c0,
                                             int64_t (&col)[4], bool (&ok)[4]) {
  o = tile / sh.n_ct;
  c0 = (tile % sh.n_ct) * kColWidth;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    col[i] = c0 + col_of<kVec>(lane, i);
    ok[i] = col[i] < sh.inner;
  }
}

// The end of a split launch: the block partials of column tile blockIdx.x (kWidth
// columns) that arrive count on done[blockIdx.x]; the last to arrive adds the tile's nb
// partials, a thread per column, in the order finish_kernel does (one ordered sum:
// nb <= 32), so the bits are finish_kernel's, whichever block comes last. It then sets
// the counter back to 0, so each launch finds its counters at 0 (col_done_slots).
template <int kWidth, typename Y>
__device__ __forceinline__ void finish_col_tile(const ColShape& sh, int64_t o, int64_t c0, Y* y, const double* part,
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
  if (threadIdx.x < kWidth && c < sh.inner) {
    const double* p = part + (o * sh.inner + c - out0) * sh.nb;
    double v[kColParts];
#pragma unroll
    for (int k = 0; k < kColParts; ++k) v[k] = k < sh.nb ? __ldcg(p + k) : 0.0;
    double total = 0.0;
#pragma unroll
    for (int k = 0; k < kColParts; ++k) total += v[k];
    store_sum(y + o * sh.inner + c, total, scale, accumulate);
  }
  if (threadIdx.x == 0) done[blockIdx.x] = 0;
}

// The looped launch: one block of 8 warps per (outer index, 128-column tile); the block
// computes block partials b = 0..nb-1 in turn (warp w group 8b + w), adds each
// partial's warps in order, and writes y.
template <bool kVec, typename Load, typename Y>
__global__ void __launch_bounds__(256, 2) reduce_cols_kernel(Load load, ColShape sh, Y* y, double scale,
                                                          bool accumulate) {
  pdl::prologue();
  __shared__ double wsum[kColWarps][4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int64_t o = 0, c0 = 0, col[4];
  bool ok[4];
  tile_columns<kVec>(sh, sh.tile0 + blockIdx.x, lane, o, c0, col, ok);
  const int64_t base = o * sh.len * sh.inner;
  double total[4] = {0.0, 0.0, 0.0, 0.0};
  for (int b = 0; b < sh.nb; ++b) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    col_group_sum<kVec>(load, sh, base, (int64_t{b} * kColWarps + w) * kColTile, col, ok, acc);
#pragma unroll
    for (int i = 0; i < 4; ++i) wsum[w][i][lane] = acc[i];
    __syncthreads();
    if (w == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        double p = 0.0;
#pragma unroll
        for (int k = 0; k < kColWarps; ++k) p += wsum[k][i][lane];
        total[i] += p;
      }
    }
    __syncthreads();
  }
  if (w == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (ok[i]) store_sum(y + o * sh.inner + col[i], total[i], scale, accumulate);
  }
}

// n consecutive done counters for the split launch (device memory of reduce.cu, all 0
// between launches), taken in turn from a ring of 65536: two launches in flight at once
// (graphs on several streams) get different ones unless 65536 counters were taken in
// between.
unsigned* col_done_slots(int64_t n);

// ---- the split launch: a column per lane ------------------------------------------
// A warp per (32-column tile, group): lane l owns column c0 + l, so each row's load is
// one coalesced 128-byte line and a lane keeps one double sum; a group's rows are loaded
// kNarrowTiles tiles (32 rows, 4 KB a warp) at a time before they are added, which with
// 8 warps and 4 blocks per SM keeps 128 KB per SM in flight. 32 floats of loads is the
// most that still fits 4 blocks per SM (64 registers a thread): more spills, the loads'
// 64-bit addresses taking the registers.
constexpr int kNarrowTiles = 2;

// Rows r0 + t * 4096 + j (t < kNarrowTiles, j < 16) of one lane's column at `base` (its
// row 0), in increasing order; kFull: all exist. Absent rows are 0 and not loaded.
template <bool kFull, typename Load>
__device__ __forceinline__ void narrow_load(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                            float (&v)[kNarrowTiles * kColTile]) {
#pragma unroll
  for (int t = 0; t < kNarrowTiles; ++t)
#pragma unroll
    for (int j = 0; j < kColTile; ++j) {
      const int64_t r = r0 + int64_t{t} * kColGroups * kColTile + j;
      v[t * kColTile + j] = kFull || r < len ? load.at(base + r * inner, r) : 0.0f;
    }
}

// acc += the rows of the group whose first row is `first`, in increasing order: batches
// of kNarrowTiles consecutive tiles of the group. An absent row of a present batch adds +0.0.
template <typename Load>
__device__ __forceinline__ void narrow_group_sum(const Load& load, int64_t base, int64_t first, int64_t len,
                                                 int64_t inner, double& acc) {
  constexpr int64_t kStep = int64_t{kNarrowTiles} * kColGroups * kColTile;
  for (int64_t r0 = first; r0 < len; r0 += kStep) {
    float v[kNarrowTiles * kColTile];
    if (r0 + int64_t{kNarrowTiles - 1} * kColGroups * kColTile + kColTile <= len)
      narrow_load<true>(load, base, r0, len, inner, v);
    else
      narrow_load<false>(load, base, r0, len, inner, v);
#pragma unroll
    for (int j = 0; j < kNarrowTiles * kColTile; ++j) acc += static_cast<double>(v[j]);
  }
}

// Block (32-column tile blockIdx.x of this launch, block partial blockIdx.y), 8 warps:
// warp w sums group 8b + w of its lane's column, the block adds its warps in order and
// writes part[(out - out0) * nb + b]; the tile's last partial to finish adds the nb
// partials (finish_col_tile).
template <typename Load, typename Y>
__global__ void __launch_bounds__(kColWarps * 32, 4) reduce_cols_narrow_kernel(Load load, ColShape sh, Y* y,
                                                                             double* part, int64_t out0, unsigned* done,
                                                                             double scale, bool accumulate) {
  pdl::prologue();
  __shared__ double wsum[kColWarps][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t tile = sh.tile0 + blockIdx.x;
  const int64_t o = tile / sh.n_ct, c0 = (tile % sh.n_ct) * kNarrowWidth;
  const int64_t c = c0 + lane;
  const bool ok = c < sh.inner;
  const int b = static_cast<int>(blockIdx.y);
  double acc = 0.0;
  if (ok)
    narrow_group_sum(load, o * sh.len * sh.inner + c, (int64_t{b} * kColWarps + w) * kColTile, sh.len, sh.inner, acc);
  wsum[w][lane] = acc;
  __syncthreads();
  if (w == 0) {
    double p = 0.0;
#pragma unroll
    for (int k = 0; k < kColWarps; ++k) p += wsum[k][lane];
    if (ok) part[(o * sh.inner + c - out0) * sh.nb + b] = p;
    __threadfence();  // the partials before the count (finish_col_tile)
  }
  finish_col_tile<kNarrowWidth>(sh, o, c0, y, part, out0, done, scale, accumulate);
}

// y[o, i] (+)= scale * sum over the axis. `vec`: inner % 4 == 0 and every pointer the
// load reads is aligned4. With scratch (8 bytes per output and block partial)
// and few column tiles, the block partials run as separate blocks and their tile's last
// block adds them; otherwise each block loops over its partials. Same bits either way.
// Only plain loads split: the other load (layernorm's dy * xhat) comes without scratch,
// which holds its rows' statistics, so the split kernel is not built for it.
template <typename Load, typename Y>
void launch_reduce_cols(const Load& load, bool vec, Y* y, int64_t outer, int64_t len, int64_t inner, double scale,
                        bool accumulate, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  constexpr bool kPlain = kIsPlainLoad<Load>;
  const ColPlan p = col_plan(outer, len, inner, kPlain && scratch ? scratch_bytes : 0, sm_count());
  ColShape sh{outer, len, inner, p.n_ct, 0, p.nb};
  const int64_t tiles = outer * p.n_ct;
  for (int64_t t0 = 0; t0 < tiles; t0 += p.per_launch) {
    const int64_t n = tiles - t0 < p.per_launch ? tiles - t0 : p.per_launch;
    sh.tile0 = t0;
    if constexpr (kPlain) {
      if (p.split) {
        int64_t out0 = 0, out1 = 0;
        col_tile_outputs(p.n_ct, inner, t0, n, p.width, out0, out1);
        launch(TG_LAUNCH_SITE, reduce_cols_narrow_kernel<Load, Y>, dim3(static_cast<unsigned>(n), static_cast<unsigned>(p.nb)),
               kBlock, s, load, sh, y, static_cast<double*>(scratch), out0, col_done_slots(n), scale, accumulate);
        continue;
      }
    }
    launch(TG_LAUNCH_SITE, vec ? reduce_cols_kernel<true, Load, Y> : reduce_cols_kernel<false, Load, Y>,
           dim3(static_cast<unsigned>(n)), kBlock, s, load, sh, y, scale, accumulate);
  }
}

// ---- rows (inner == 1) ------------------------------------------------------------------
// y[o] = scale * sum of x[o * len ...]; scratch, when given, lets a few long rows spread
// over many warps. `vec`: every row starts aligned4. T: float, Bf16 or F16 (reduce.cu).
template <typename T>
void launch_reduce_rows(const T* x, bool vec, T* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s);

}  // namespace tg::kernels::cuda::detail
#endif  // __CUDACC__
