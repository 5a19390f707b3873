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
#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"

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

// Rows r0 .. r0 + 15 of one lane's columns; kFull: all of them exist. Absent values are 0.
template <bool kVec, bool kFull, typename Load>
__device__ __forceinline__ void load_col_tile(const Load& load, int64_t base, int64_t r0, int64_t len, int64_t inner,
                                              const int64_t (&col)[4], const bool (&ok)[4], float4 (&v)[kColTile]) {
#pragma unroll
  for (int j = 0; j < kColTile; ++j) {
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

// One block of 8 warps per (outer index, column tile); warp w computes group 8b + w of
// block partial b. kSplit: blockIdx.y is b, the partial goes to part[(out - out0) * nb + b];
// otherwise the block computes b = 0..nb-1 in turn and writes y (direct when nb == 1).
template <bool kVec, bool kSplit, typename Load>
__global__ void __launch_bounds__(256, 2) reduce_cols_kernel(Load load, ColShape sh, float* y, double* part,
                                                          int64_t out0, double scale, bool accumulate) {
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
    const int64_t step = int64_t{kColGroups} * kColTile;
    // A lane without columns (past inner) skips the loads; full tiles load unpredicated,
    // so the 16 loads issue back to back.
    for (int64_t r0 = (int64_t{b} * kColWarps + w) * kColTile; r0 < sh.len && ok[0]; r0 += step) {
      float4 v[kColTile];
      if (r0 + kColTile <= sh.len)
        load_col_tile<kVec, true>(load, base, r0, sh.len, sh.inner, col, ok, v);
      else
        load_col_tile<kVec, false>(load, base, r0, sh.len, sh.inner, col, ok, v);
#pragma unroll
      for (int j = 0; j < kColTile; ++j) add4(acc, v[j]);
    }
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
    }
    __syncthreads();
  }
  if (!kSplit && w == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (ok[i]) {
        float* dst = y + o * sh.inner + col[i];
        *dst = static_cast<float>(total[i] * scale) + (accumulate ? *dst : 0.0f);
      }
  }
}

// y[o, i] (+)= scale * sum over the axis. `vec`: inner % 4 == 0 and every pointer the
// load reads is 16-byte aligned. With scratch (8 bytes per output and block partial)
// and few column tiles, the block partials run as separate blocks and finish_kernel adds
// them; otherwise each block loops over its partials. Same bits either way.
template <typename Load>
void launch_reduce_cols(const Load& load, bool vec, float* y, int64_t outer, int64_t len, int64_t inner, double scale,
                        bool accumulate, void* scratch, size_t scratch_bytes, cudaStream_t s) {
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
      auto k = vec ? reduce_cols_kernel<true, false, Load> : reduce_cols_kernel<false, false, Load>;
      launch(TG_LAUNCH_SITE, k, dim3(static_cast<unsigned>(n)), kBlock, s, load, sh, y, nullptr, int64_t{0}, scale,
             accumulate);
      continue;
    }
    // The outputs of tiles [t0, t0 + n) are contiguous: from the first tile's first
    // column to the last tile's last one.
    const int64_t out0 = (t0 / sh.n_ct) * inner + (t0 % sh.n_ct) * kColWidth;
    const int64_t last = t0 + n - 1;
    const int64_t end_col = ((last % sh.n_ct) + 1) * kColWidth;
    const int64_t out1 = (last / sh.n_ct) * inner + (end_col < inner ? end_col : inner);
    double* part = static_cast<double*>(scratch);
    auto k = vec ? reduce_cols_kernel<true, true, Load> : reduce_cols_kernel<false, true, Load>;
    launch(TG_LAUNCH_SITE, k, dim3(static_cast<unsigned>(n), static_cast<unsigned>(sh.nb)), kBlock, s, load, sh, y,
           part, out0, scale, accumulate);
    launch_finish(part, sh.nb, out1 - out0, y + out0, out1 - out0, nullptr, scale, accumulate, s);
  }
}

// ---- rows (inner == 1) ------------------------------------------------------------------
// y[o] = scale * sum of x[o * len ...]; scratch, when given, lets a few long rows spread
// over many warps. `vec`: every row starts 16-byte aligned.
void launch_reduce_rows(const float* x, bool vec, float* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s);

}  // namespace tg::kernels::cuda::detail
