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
//  Nsight Compute at 64 MiB (docs/results/h200-logs/ncu-reductions-c246025.txt, base
//  clocks): variant 2's 256 blocks of 121 registers fill 0.97 of a wave at 25% theoretical
//  occupancy, the SMs are active 63% of the kernel's cycles and DRAM runs at 51% of its
//  peak; reduce_rows_kernel (2048 blocks, 64 registers, 3.9 waves) keeps the SMs active 82%
//  of its cycles at 73% of DRAM peak. What is left at 64 MiB is blocks that end at
//  different times with nothing to refill the idle SMs, not the loads' depth.
//  3: not this order: a block per (column tile, group, slice of 4 tiles), the slice sums
//     added by a second launch (reduce_cols_slices_kernel below; reduce.cu says why).
//     Deterministic and padding-exact, to other bits past 4096 rows. Only where 0-2
//     split (len > 128, few column tiles) and the scratch holds a column tile's slice
//     sums; otherwise the call runs variant 2.
//  4: this order with a warp per 32 columns (a column per lane, scalar loads, each row one
//     coalesced 128-byte line) instead of 128: the parallelism Nsight found missing. A
//     column's sum does not depend on which lane owns it, so the bits are 0-2's. At
//     [16384, 1024]: 32 column tiles x 32 block partials = 1024 blocks of 8 warps (4x
//     variant 2's), each warp one group of 4 tiles, loaded 2 tiles (32 rows, 4 KB) at a
//     time before it adds them: 32 floats and one double sum per lane instead of 64 and
//     four, 64 registers, 4 blocks per SM (50% occupancy, ~1.9 waves) with 128 KB in
//     flight per SM, so short blocks refill the SMs as reduce_rows_kernel's do. The
//     split path ends as variant 2 (the tile's last block partial adds its 32 partials,
//     finish_col_tile, 32 threads instead of 128), and needs a quarter of its scratch
//     per tile. Only split, plain loads (col_plan); elsewhere variant 2 runs. Expected
//     before measuring: ~19-21 us at 64 MiB (>= 80% of copy, near reduce_sum_rows).
//     Measured on one H200 in one session (held timing, tg-kernels): 22.5 us, 77.4% of
//     copy at 64 MiB (variant 2 in the same session: 24.3-25.4 us, 68.5-71.8%;
//     reduce_sum_rows 18.9 us) and 68.0 us, 94.6% at 256 MiB (variant 2 68.8, 93.6%). A
//     second session: 22.6 us (76.5%) against variant 2's 23.9 us (72.4%) at 64 MiB, and
//     68.9 against 68.5 us at 256 MiB (no gain there).
//     Short of 80%. Three candidates for the rest were built as run-time switches to these
//     bits and timed in one session, three rounds each at 64 MiB (commit 88a8ed7; its
//     output: docs/results/h200-probes/colreduce-knobs-88a8ed7.txt), then removed:
//      - a register ring (each row's register reloaded with the next batch's row right
//        after its add, so loads go out during the add chain): 24.0-24.2 us against
//        22.6-22.7, and 72-73 against 68.5-68.8 us at 256 MiB: slower; the chain of
//        adds is not what holds the warps;
//      - fence.acq_rel.gpu for __threadfence in the block's end: 22.5-22.7 us, no change;
//      - a lean end (warps 1-7 arrive and exit, warp 0 alone adds, fences once, counts
//        and finishes, no __syncthreads): 22.2-22.5 us, within the rounds' spread.
//     So neither the adds nor the end of a block explains the ~7 us of fixed cost
//     (22.6 us at 64 MiB, 68.8 at 256 MiB) against the copy's ~4 (34.7, 128 us for
//     twice the bytes). It is the launch's own ramp and drain: on the same data
//     (scripts/device/probes/colreduce_floor.cu, docs/results/h200-probes/
//     colreduce-floor-f2fd100.txt), launched 20 times back to back, this kernel takes
//     20.6 us (84.6% of the copy) with programmatic dependent launch and 22.0 without;
//     a kernel with its access pattern and no ordered end (an atomicAdd per lane) 20.4-
//     20.7 us; a plain contiguous read of the 64 MiB 17.5 us. One launch alone, as
//     tg-kernels' first timing takes it, pays the grid's dispatch and its last block's
//     end with nothing beside them; back to back with programmatic dependent launch (its
//     second timing, and a graph replay), the next grid is already resident, waiting in
//     pdl::wait, when this one completes.
#include <cstddef>
#include <cstdint>

namespace tg::kernels::cuda::detail {

constexpr int kColWidth = 128;                     // columns per warp, 4 per lane
constexpr int kNarrowWidth = 32;                   // variant 4: columns per warp, 1 per lane
constexpr int kColTile = 16;                       // rows of one group a warp loads at once
constexpr int kColGroups = 256;
constexpr int kColWarps = 8;                       // groups per block partial
constexpr int kColParts = kColGroups / kColWarps;  // block partials: 32 at most
constexpr int64_t kRowChunk = 8192;
constexpr int kRun = 32;  // parts per run in finish_kernel

// How launch_reduce_cols runs a column reduction (host logic only, so that it is testable
// without a device; defined in reduce.cu). `variant` is the loop that runs (0, 1, 2 or 4;
// the caller has already tried variant 3's slices and asks for 2 when they did not run):
// 4 only for plain loads that split, 2 where 4 was asked otherwise. Split: the block
// partials run as separate blocks, per_launch column tiles (of `width` columns, n_ct per
// outer index) at a time, as many as the scratch holds; otherwise one launch loops.
struct ColPlan {
  int variant;
  bool split;
  int width;
  int64_t n_ct;
  int nb;
  int64_t per_launch;
};
ColPlan col_plan(int variant, bool plain_load, int64_t outer, int64_t len, int64_t inner, size_t scratch_bytes,
                 int sms);

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

namespace tg::kernels::cuda {
int col_reduce_variant();  // cuda_kernels.h
}

namespace tg::kernels::cuda::detail {

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
  int64_t n_ct;   // column tiles per outer index: of 128 columns, 32 in variant 4's kernel
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

// Variants 2 and 4's end of a split launch: the block partials of column tile blockIdx.x
// (kWidth columns) that arrive count on done[blockIdx.x]; the last to arrive adds the
// tile's nb partials, a thread per column, in the order finish_kernel does (one ordered
// sum: nb <= 32), so the bits are finish_kernel's, whichever block comes last. It then
// sets the counter back to 0, so each launch finds its counters at 0 (col_done_slots).
template <int kWidth>
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
  if (threadIdx.x < kWidth && c < sh.inner) {
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
  int64_t o = 0, c0 = 0, col[4];
  bool ok[4];
  tile_columns<kVec>(sh, sh.tile0 + blockIdx.x, lane, o, c0, col, ok);
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
  if constexpr (kV == 2) finish_col_tile<kColWidth>(sh, o, c0, y, part, out0, done, scale, accumulate);
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

// ---- variant 4: a column per lane --------------------------------------------------
// The frame's order with a warp per (32-column tile, group): lane l owns column c0 + l,
// so each row's load is one coalesced 128-byte line, a lane keeps one double sum, and a
// group's rows are loaded kNarrowTiles tiles (kNarrowTiles x 16 rows) at a time before
// they are added; the 8 warps of a block are groups 8b..8b+7, added in warp order as in
// reduce_cols_kernel. Only split (blockIdx.y is b) and only for plain loads: elsewhere
// the call runs variant 2 (col_plan).
// Measured on one H200 at 64 MiB (held timing, one session; variant 2 24.3-25.4 us): 2
// tiles unpipelined 22.5 us; 1 tile pipelined (two buffers) 23.0; 1 tile unpipelined 23.6;
// 64 floats of loads (4 tiles, or 2 pipelined) at 2 blocks per SM 25.2-25.8. More than 4
// blocks per SM spills (ptxas: the loads' 64-bit addresses take the registers).
constexpr int kNarrowTiles = 2;
constexpr bool kNarrowPipe = false;

// Rows r0 + t * 4096 + j (t < kT, j < 16) of one lane's column at `base` (its row 0),
// in increasing order; kFull: all exist. Absent rows are 0 and not loaded.
template <int kT, bool kFull, typename Load>
__device__ __forceinline__ void narrow_load(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                            float (&v)[kT * kColTile]) {
#pragma unroll
  for (int t = 0; t < kT; ++t)
#pragma unroll
    for (int j = 0; j < kColTile; ++j) {
      const int64_t r = r0 + int64_t{t} * kColGroups * kColTile + j;
      v[t * kColTile + j] = kFull || r < len ? load.at(base + r * inner, r) : 0.0f;
    }
}
template <int kT, typename Load>
__device__ __forceinline__ void narrow_rows(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                            float (&v)[kT * kColTile]) {
  if (r0 + int64_t{kT - 1} * kColGroups * kColTile + kColTile <= len)
    narrow_load<kT, true>(load, base, r0, len, inner, v);
  else
    narrow_load<kT, false>(load, base, r0, len, inner, v);
}
template <int N>
__device__ __forceinline__ void narrow_add(double& acc, const float (&v)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) acc += static_cast<double>(v[j]);
}

// acc += the rows of the group whose first row is `first`, in increasing order: batches
// of kT consecutive tiles of the group. kPipe: the next batch's loads issue before the
// current one is added (two buffers). An absent row of a present batch adds +0.0.
template <int kT, bool kPipe, typename Load>
__device__ __forceinline__ void narrow_group_sum(const Load& load, int64_t base, int64_t first, int64_t len,
                                                 int64_t inner, double& acc) {
  constexpr int64_t kStep = int64_t{kT} * kColGroups * kColTile;
  if (first >= len) return;
  if constexpr (!kPipe) {
    for (int64_t r0 = first; r0 < len; r0 += kStep) {
      float v[kT * kColTile];
      narrow_rows<kT>(load, base, r0, len, inner, v);
      narrow_add(acc, v);
    }
  } else {
    float a[kT * kColTile], b[kT * kColTile];
    narrow_rows<kT>(load, base, first, len, inner, a);
    for (int64_t r0 = first;; r0 += 2 * kStep) {
      const bool second = r0 + kStep < len;
      if (second) narrow_rows<kT>(load, base, r0 + kStep, len, inner, b);
      narrow_add(acc, a);
      if (!second) return;
      const bool next = r0 + 2 * kStep < len;
      if (next) narrow_rows<kT>(load, base, r0 + 2 * kStep, len, inner, a);
      narrow_add(acc, b);
      if (!next) return;
    }
  }
}

// 64 float registers of loads at most per lane: 4 blocks of 8 warps per SM with up to 32
// (64 registers a thread), 2 with 64 (3 spills).
constexpr int narrow_min_blocks(int kT, bool kPipe) { return kT * kColTile * (kPipe ? 2 : 1) <= 32 ? 4 : 2; }

// Block (32-column tile blockIdx.x of this launch, block partial blockIdx.y), 8 warps:
// warp w sums group 8b + w of its lane's column, the block adds its warps in order and
// writes part[(out - out0) * nb + b]; the tile's last partial to finish adds the nb
// partials (finish_col_tile, as variant 2).
template <int kT, bool kPipe, typename Load>
__global__ void __launch_bounds__(kColWarps * 32, narrow_min_blocks(kT, kPipe)) reduce_cols_narrow_kernel(
    Load load, ColShape sh, float* y, double* part, int64_t out0, unsigned* done, double scale, bool accumulate) {
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
    narrow_group_sum<kT, kPipe>(load, o * sh.len * sh.inner + c,
                                                (int64_t{b} * kColWarps + w) * kColTile, sh.len, sh.inner, acc);
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

// ---- variant 3: slices of groups in separate blocks ----------------------------------
// Block (column tile, group g, slice s) of kSliceTiles warps: warp w sums tile
// k = kSliceTiles s + w of group g (rows (256 k + g) * 16 .. + 15, in increasing order),
// the block adds its warps' tile sums in warp order and writes the slice sum to
// part[(o * inner + column - out0) * ng * nsl + g * nsl + s]. Slice boundaries are fixed
// by the tile index alone, so zero rows appended only add +0.0 to a tile, a slice or a
// group, or make new all-zero tiles and slices. slice_finish_kernel (reduce.cu) adds,
// per column, each group's slices in order, groups 8b..8b+7 in order (lane b), and the
// 32 lane sums in order: the frame's order of groups, with a group's rows associated by
// tiles and slices. For len <= 4096 (a tile per group) that is the frame's sum itself.
constexpr int kSliceTiles = 4;  // tiles of a group per slice, one per warp

template <bool kVec, typename Load>
__global__ void __launch_bounds__(kSliceTiles * 32, 4) reduce_cols_slices_kernel(Load load, ColShape sh, int ng,
                                                                                 int64_t nsl, double* part,
                                                                                 int64_t out0) {
  pdl::prologue();
  __shared__ double wsum[kSliceTiles][4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t g = blockIdx.y, s = blockIdx.z;
  int64_t o = 0, c0 = 0, col[4];
  bool ok[4];
  tile_columns<kVec>(sh, sh.tile0 + blockIdx.x, lane, o, c0, col, ok);
  const int64_t r0 = ((s * kSliceTiles + w) * kColGroups + g) * kColTile;
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  if (ok[0] && r0 < sh.len) {
    float4 v[kColTile];
    load_col_rows<kVec>(load, o * sh.len * sh.inner, r0, sh.len, sh.inner, col, ok, v);
    add_rows(acc, v);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) wsum[w][i][lane] = acc[i];
  __syncthreads();
  if (w != 0) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    double p = 0.0;
#pragma unroll
    for (int k = 0; k < kSliceTiles; ++k) p += wsum[k][i][lane];
    if (ok[i]) part[(o * sh.inner + col[i] - out0) * (ng * nsl) + g * nsl + s] = p;
  }
}

// out[k] (+)= scale * the sum of part[k * ng * nsl ...] in variant 3's order (above), a
// warp per output. Defined in reduce.cu.
void launch_slice_finish(const double* part, int ng, int64_t nsl, int64_t n, float* y, double scale, bool accumulate,
                         cudaStream_t s);

// Variant 3's launches: for each run of column tiles whose slice sums fit the scratch,
// reduce_cols_slices_kernel over (tiles, groups, slices) and slice_finish_kernel.
// Returns false, launching nothing, when one column tile's slice sums (8 bytes x 128
// columns x groups x slices: 256 KiB per 64K rows at 256 groups) exceed the scratch;
// the caller then runs variant 2 instead, whose bits differ (so padding is exact only
// while the padded length still fits: up to 524288 rows in the backend's 8 MiB).
template <typename Load>
bool launch_reduce_cols_slices(const Load& load, bool vec, ColShape sh, float* y, double scale, bool accumulate,
                               void* scratch, size_t scratch_bytes, cudaStream_t s) {
  const int64_t ntiles = (sh.len + kColTile - 1) / kColTile;
  const int ng = static_cast<int>(ntiles < kColGroups ? ntiles : kColGroups);
  const int64_t nsl = ((ntiles + kColGroups - 1) / kColGroups + kSliceTiles - 1) / kSliceTiles;
  const int64_t per_tile = int64_t{kColWidth} * ng * nsl * static_cast<int64_t>(sizeof(double));
  const int64_t fit = scratch ? static_cast<int64_t>(scratch_bytes) / per_tile : 0;
  if (fit < 1 || nsl > 65535) return false;
  const int64_t tiles = sh.outer * sh.n_ct;
  auto k = vec ? reduce_cols_slices_kernel<true, Load> : reduce_cols_slices_kernel<false, Load>;
  double* part = static_cast<double*>(scratch);
  for (int64_t t0 = 0; t0 < tiles; t0 += fit) {
    const int64_t n = tiles - t0 < fit ? tiles - t0 : fit;
    sh.tile0 = t0;
    int64_t out0 = 0, out1 = 0;
    col_tile_outputs(sh.n_ct, sh.inner, t0, n, kColWidth, out0, out1);
    launch(TG_LAUNCH_SITE, k, dim3(static_cast<unsigned>(n), static_cast<unsigned>(ng), static_cast<unsigned>(nsl)),
           kSliceTiles * 32, s, load, sh, ng, nsl, part, out0);
    launch_slice_finish(part, ng, nsl, out1 - out0, y + out0, scale, accumulate, s);
  }
  return true;
}

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
// variants 2 and 4, their last block) adds them; otherwise each block loops over its
// partials. Same bits either way, and in every variant but 3.
template <typename Load>
void launch_reduce_cols(const Load& load, bool vec, float* y, int64_t outer, int64_t len, int64_t inner, double scale,
                        bool accumulate, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  constexpr bool kPlain = std::is_same_v<Load, PlainLoad>;
  int variant = col_reduce_variant();
  // Variant 3 where the others would split (len > 128, so it never takes the looped
  // path's bits for a length where its own differ: they agree up to 4096 rows); when
  // its slice sums do not fit the scratch, this call runs variant 2 (see above).
  // Only plain loads: the other (layernorm's dy * xhat) never gets scratch, and its
  // slices kernel would spill.
  if (variant == 3) {
    if constexpr (kPlain) {
      const ColPlan p = col_plan(2, true, outer, len, inner, scratch ? scratch_bytes : 0, sm_count());
      ColShape sh{outer, len, inner, p.n_ct, 0, p.nb};
      if (p.split && launch_reduce_cols_slices(load, vec, sh, y, scale, accumulate, scratch, scratch_bytes, s)) return;
    }
    variant = 2;
  }
  const ColPlan p = col_plan(variant, kPlain, outer, len, inner, scratch ? scratch_bytes : 0, sm_count());
  ColShape sh{outer, len, inner, p.n_ct, 0, p.nb};
  const int64_t tiles = outer * p.n_ct;
  for (int64_t t0 = 0; t0 < tiles; t0 += p.per_launch) {
    const int64_t n = tiles - t0 < p.per_launch ? tiles - t0 : p.per_launch;
    sh.tile0 = t0;
    if (!p.split) {
      launch(TG_LAUNCH_SITE, cols_kernel<false, Load>(p.variant, vec), dim3(static_cast<unsigned>(n)), kBlock, s, load,
             sh, y, nullptr, int64_t{0}, nullptr, scale, accumulate);
      continue;
    }
    int64_t out0 = 0, out1 = 0;
    col_tile_outputs(p.n_ct, inner, t0, n, p.width, out0, out1);
    double* part = static_cast<double*>(scratch);
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(p.nb));
    if (p.variant == 4) {
      if constexpr (kPlain)
        launch(TG_LAUNCH_SITE, reduce_cols_narrow_kernel<kNarrowTiles, kNarrowPipe, Load>, grid, kBlock, s, load, sh, y, part, out0,
               col_done_slots(n), scale, accumulate);
      continue;
    }
    unsigned* done = p.variant == 2 ? col_done_slots(n) : nullptr;
    launch(TG_LAUNCH_SITE, cols_kernel<true, Load>(p.variant, vec), grid, kBlock, s, load, sh, y, part, out0, done,
           scale, accumulate);
    if (p.variant != 2) launch_finish(part, p.nb, out1 - out0, y + out0, out1 - out0, nullptr, scale, accumulate, s);
  }
}

// ---- rows (inner == 1) ------------------------------------------------------------------
// y[o] = scale * sum of x[o * len ...]; scratch, when given, lets a few long rows spread
// over many warps. `vec`: every row starts 16-byte aligned.
void launch_reduce_rows(const float* x, bool vec, float* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s);

}  // namespace tg::kernels::cuda::detail
#endif  // __CUDACC__
