// The column-reduction loops that kernels/cuda/reduce.cuh and layernorm_params.cu replaced,
// timed against the library's kernels on tg-kernels' cases ([rows, 1024] fp32, 64 and 256
// MiB) and checked against their bits. The library keeps one loop per kernel; this probe
// keeps the others, so that a new idea is measured against both before it goes in.
//
// reduce_sum over axis 0 (the bias gradient), split launches (few column tiles, 8 MiB of
// scratch), 128 columns per warp (4 per lane):
//  - v0: each warp loads a tile of 16 rows, waits for all of it, adds it, then loads the
//    next: nothing in flight while it adds. finish_kernel adds the block partials.
//  - v1: the tile in two halves of 8 rows, the next half's loads issued before the current
//    half is added. finish_kernel adds the block partials.
//  - v2: v1, and the last block partial of a column tile to finish adds the tile's
//    partials itself (finish_col_tile): no second launch.
//  - v3: another order: a block per (column tile, group, slice of 4 tiles of the group),
//    the slice sums added by a second launch (slice_finish_kernel). Padding-exact, but its
//    bits differ from the frame's past 4096 rows, so it is compared within a tolerance.
//  - v4, the library's split launch (a column per lane, 32 columns per warp, the tile's last
//    block finishing), sums in the frame's order: v0-v2 must give its bits exactly.
// layernorm_grad_gamma_beta at 1024 columns:
//  - v0: every thread adds its slot's row sums from shared memory; a slot's 8 rows of a
//    tile loaded at once, then computed; partials column-major, finish_kernel.
//  - v2: v0 with the tile in two steps, the next step's loads issued first.
//  - v4, the library's kernel (row sums shuffled, partials group-major, its own finish),
//    must give the bits of both.
//
// Each is launched 20 times back to back between two events after a warm-up (the best
// of 3 rounds), and compared with a device-to-device copy of the same bytes timed the
// same way: pct = (bytes read / t) / (2 x bytes / t_copy), as tg-kernels' pct_of_copy.
// Prints one line per (case, kernel): microseconds, % of copy, and the largest
// difference from the library's outputs (0 where the bits must match).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/reduce.cuh"
#include "probe_common.cuh"

namespace tg::kernels::cuda::lab {

using namespace detail;

// ---- reduce_sum's columns, v0-v2 ---------------------------------------------------------

// acc += one group's rows in increasing order, a tile of 16 rows loaded whole, then added.
template <bool kVec>
__device__ __forceinline__ void group_sum_unpipelined(const PlainLoad& load, const ColShape& sh, int64_t base,
                                                      int64_t first, const int64_t (&col)[4], const bool (&ok)[4],
                                                      double (&acc)[4]) {
  if (!ok[0]) return;
  for (int64_t r0 = first; r0 < sh.len; r0 += int64_t{kColGroups} * kColTile) {
    float4 v[kColTile];
    load_col_rows<kVec>(load, base, r0, sh.len, sh.inner, col, ok, v);
    add_rows(acc, v);
  }
}

// Block (128-column tile blockIdx.x, block partial blockIdx.y) of 8 warps: warp w sums
// group 8b + w, the block adds its warps in order into part[(out - out0) * nb + b].
template <int kV, bool kVec>
__global__ void __launch_bounds__(256, 2) split_cols_kernel(PlainLoad load, ColShape sh, float* y, double* part,
                                                         int64_t out0, unsigned* done) {
  pdl::prologue();
  __shared__ double wsum[kColWarps][4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int64_t o = 0, c0 = 0, col[4];
  bool ok[4];
  tile_columns<kVec>(sh, sh.tile0 + blockIdx.x, lane, o, c0, col, ok);
  const int b = static_cast<int>(blockIdx.y);
  const int64_t first = (int64_t{b} * kColWarps + w) * kColTile;
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  if constexpr (kV == 0)
    group_sum_unpipelined<kVec>(load, sh, o * sh.len * sh.inner, first, col, ok, acc);
  else
    col_group_sum<kVec>(load, sh, o * sh.len * sh.inner, first, col, ok, acc);
#pragma unroll
  for (int i = 0; i < 4; ++i) wsum[w][i][lane] = acc[i];
  __syncthreads();
  if (w == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      double p = 0.0;
#pragma unroll
      for (int k = 0; k < kColWarps; ++k) p += wsum[k][i][lane];
      if (ok[i]) part[(o * sh.inner + col[i] - out0) * sh.nb + b] = p;
    }
    if constexpr (kV == 2) __threadfence();  // the partials before the count (finish_col_tile)
  }
  __syncthreads();
  if constexpr (kV == 2) finish_col_tile<kColWidth>(sh, o, c0, y, part, out0, done, 1.0, false);
}

template <int kV>
void split_cols(const float* x, float* y, int64_t len, int64_t inner, void* scratch, size_t scratch_bytes,
                cudaStream_t s) {
  const bool vec = inner % 4 == 0 && aligned16(x);
  const int64_t n_ct = (inner + kColWidth - 1) / kColWidth;
  const int64_t nb = std::min<int64_t>(kColParts, std::max<int64_t>(1, (len + kColWarps * kColTile - 1) / (kColWarps * kColTile)));
  ColShape sh{1, len, inner, n_ct, 0, static_cast<int>(nb)};
  const int64_t per_launch =
      std::min<int64_t>(65536, static_cast<int64_t>(scratch_bytes / (kColWidth * nb * sizeof(double))));
  auto* part = static_cast<double*>(scratch);
  for (int64_t t0 = 0; t0 < n_ct; t0 += per_launch) {
    const int64_t n = std::min(per_launch, n_ct - t0);
    sh.tile0 = t0;
    int64_t out0 = 0, out1 = 0;
    col_tile_outputs(n_ct, inner, t0, n, kColWidth, out0, out1);
    unsigned* done = kV == 2 ? col_done_slots(n) : nullptr;
    launch(TG_LAUNCH_SITE, vec ? split_cols_kernel<kV, true> : split_cols_kernel<kV, false>,
           dim3(static_cast<unsigned>(n), static_cast<unsigned>(nb)), kBlock, s, PlainLoad{x}, sh, y, part, out0, done);
    if (kV != 2) launch_finish(part, nb, out1 - out0, y + out0, out1 - out0, nullptr, 1.0, false, s);
  }
}

// ---- reduce_sum's columns, v3: slices of groups in separate blocks ----------------------
// Block (column tile, group g, slice s) of kSliceTiles warps: warp w sums tile
// k = kSliceTiles s + w of group g (rows (256 k + g) * 16 .. + 15, in increasing order),
// the block adds its warps' tile sums in warp order into the slice sum at
// part[(column - out0) * ng * nsl + g * nsl + s]. slice_finish_kernel adds, per column,
// each group's slices in order, groups 8b..8b+7 in order (lane b), and the 32 lane sums
// in order.
constexpr int kSliceTiles = 4;

template <bool kVec>
__global__ void __launch_bounds__(kSliceTiles * 32, 4) slices_kernel(PlainLoad load, ColShape sh, int ng, int64_t nsl,
                                                                    double* part, int64_t out0) {
  pdl::prologue();
  __shared__ double wsum[kSliceTiles][4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t g = blockIdx.y, sl = blockIdx.z;
  int64_t o = 0, c0 = 0, col[4];
  bool ok[4];
  tile_columns<kVec>(sh, sh.tile0 + blockIdx.x, lane, o, c0, col, ok);
  const int64_t r0 = ((sl * kSliceTiles + w) * kColGroups + g) * kColTile;
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
    if (ok[i]) part[(o * sh.inner + col[i] - out0) * (ng * nsl) + g * nsl + sl] = p;
  }
}

__global__ void __launch_bounds__(256) slice_finish_kernel(const double* part, int ng, int64_t nsl, int64_t n,
                                                           float* y) {
  pdl::prologue();
  const int lane = threadIdx.x & 31;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (k >= n) return;
  const double* p = part + k * ng * nsl;
  double run = 0.0;
  for (int j = 0; j < kColWarps; ++j) {
    const int g = kColWarps * lane + j;
    if (g >= ng) break;
    double group = 0.0;
    for (int64_t sl = 0; sl < nsl; ++sl) group += p[g * nsl + sl];
    run += group;
  }
  double total = 0.0;
#pragma unroll
  for (int j = 0; j < 32; ++j) total += __shfl_sync(0xffffffffu, run, j);
  if (lane == 0) y[k] = static_cast<float>(total);
}

// Returns false, launching nothing, when one column tile's slice sums exceed the scratch.
bool slices(const float* x, float* y, int64_t len, int64_t inner, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  const bool vec = inner % 4 == 0 && aligned16(x);
  const int64_t n_ct = (inner + kColWidth - 1) / kColWidth;
  const int64_t ntiles = (len + kColTile - 1) / kColTile;
  const int ng = static_cast<int>(std::min<int64_t>(ntiles, kColGroups));
  const int64_t nsl = ((ntiles + kColGroups - 1) / kColGroups + kSliceTiles - 1) / kSliceTiles;
  const int64_t per_tile = int64_t{kColWidth} * ng * nsl * static_cast<int64_t>(sizeof(double));
  const int64_t fit = static_cast<int64_t>(scratch_bytes) / per_tile;
  if (fit < 1 || nsl > 65535) return false;
  ColShape sh{1, len, inner, n_ct, 0, 1};
  auto* part = static_cast<double*>(scratch);
  for (int64_t t0 = 0; t0 < n_ct; t0 += fit) {
    const int64_t n = std::min(fit, n_ct - t0);
    sh.tile0 = t0;
    int64_t out0 = 0, out1 = 0;
    col_tile_outputs(n_ct, inner, t0, n, kColWidth, out0, out1);
    launch(TG_LAUNCH_SITE, vec ? slices_kernel<true> : slices_kernel<false>,
           dim3(static_cast<unsigned>(n), static_cast<unsigned>(ng), static_cast<unsigned>(nsl)), kSliceTiles * 32, s,
           PlainLoad{x}, sh, ng, nsl, part, out0);
    launch(TG_LAUNCH_SITE, slice_finish_kernel, static_cast<int>((out1 - out0 + 7) / 8), kBlock, s,
           static_cast<const double*>(part), ng, nsl, out1 - out0, y + out0);
  }
  return true;
}

// ---- layernorm_grad_gamma_beta, v0 and v2 -----------------------------------------------

struct LnArgs {
  const float* dy;
  const float* x;
  float* dgamma;
  float* dbeta;   // null: dgamma only
  double* part;   // null: one group, the block writes the outputs
  int64_t rows, cols;
  float eps, inv_cols;
  int nq;  // chunks of 4 columns: ceil(cols / 4)
  int G;   // threads per row, a power of two from 32 to the block size
  int tl;  // rows per tile: (threads / G) * RT
  int ng;  // groups in use: min(groups, tiles)
};

// Warp sums of N values per lane at once (N a power of two up to 32): each exchange step
// halves the values a lane carries, N - 1 + 5 - log2(N) shuffles in all instead of 5 N.
// Returns, on lane l, the warp total of value l / (32 / N), by a fixed tree.
template <int N>
__device__ __forceinline__ float multi_warp_sum(float (&v)[N], int lane) {
  int n = N;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    if (n > 1) {
      const bool upper = (lane & o) != 0;
#pragma unroll
      for (int i = 0; i < n / 2; ++i) {
        const float send = upper ? v[i] : v[i + n / 2];
        const float keep = upper ? v[i + n / 2] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
      }
      n /= 2;
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
    }
  }
  return v[0];
}

// The kernel before the shuffled row sums and the group-major partials: every thread
// adds its slot's row sums from shared memory itself, and the group sums go to part
// column-major (part[k * ng + g]) for finish_kernel. kPipe false (variant 0): a slot's
// rows of a tile loaded at once, then computed; true (variant 2): in two steps, the next
// step's loads issued before the current one is computed.
template <int T, int NV, bool kVec, bool kPipe>
__global__ void __launch_bounds__(T, 512 / T) ln_params_old_kernel(LnArgs a) {
  pdl::prologue();
  constexpr int RT = 8 / NV;
  constexpr int RS = kPipe ? RT / 2 : RT;  // rows per step
  constexpr int kGroups = T == 256 ? 256 : 128;
  __shared__ float red[2][RS][T / 32];             // per-warp row sums: of x, then of (x - mean)^2
  __shared__ double comb[2][NV == 1 ? 2 * T : 1];  // slot sums when slots share a block (G <= T / 2)
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int h = t / a.G, tr = t % a.G;  // row slot, thread within the row
  const int wps = a.G / 32, w0 = h * wps;
  const bool beta = a.dbeta != nullptr;
  int64_t c0[NV];
  bool cv[NV][4];
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int q = tr + a.G * m;
    c0[m] = 4 * static_cast<int64_t>(q);
#pragma unroll
    for (int i = 0; i < 4; ++i) cv[m][i] = q < a.nq && c0[m] + i < a.cols;
  }
  // The step's rows: the lanes l with l % (32 / RS) == 0 of each warp publish row l / (32 / RS).
  const bool publisher = lane % (32 / RS) == 0;
  const int prow = lane / (32 / RS);
  auto slot_sum = [&](const float (&w)[T / 32]) {  // a fixed trip count: no loop branches
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < T / 32; ++k)
      if (k < wps) s += w[w0 + k];
    return s;
  };
  double ag[NV][4] = {}, ab[NV][4] = {};
  // Rows rb .. rb + RS - 1 of the slot's columns; rows past the end are 0.
  auto load_rows = [&](int64_t rb, float (&xv)[RS][NV][4], float (&gv)[RS][NV][4]) {
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      const bool rok = rb + ri < a.rows;
      const float* xr = a.x + (rb + ri) * a.cols;
      const float* gr = a.dy + (rb + ri) * a.cols;
#pragma unroll
      for (int m = 0; m < NV; ++m) {
        if constexpr (kVec) {
          float4 u = make_float4(0.0f, 0.0f, 0.0f, 0.0f), v = u;
          if (rok && cv[m][0]) {
            u = *reinterpret_cast<const float4*>(xr + c0[m]);
            v = *reinterpret_cast<const float4*>(gr + c0[m]);
          }
          xv[ri][m][0] = u.x, xv[ri][m][1] = u.y, xv[ri][m][2] = u.z, xv[ri][m][3] = u.w;
          gv[ri][m][0] = v.x, gv[ri][m][1] = v.y, gv[ri][m][2] = v.z, gv[ri][m][3] = v.w;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const bool ok = rok && cv[m][i];
            xv[ri][m][i] = ok ? xr[c0[m] + i] : 0.0f;
            gv[ri][m][i] = ok ? gr[c0[m] + i] : 0.0f;
          }
        }
      }
    }
  };
  // The statistics of rows rb .. rb + RS - 1 and their terms added to ag and ab; two
  // barriers, so every thread of the block calls it equally often.
  auto add_rows = [&](int64_t rb, float (&xv)[RS][NV][4], const float (&gv)[RS][NV][4]) {
    // Mean: per thread (c0 + c1) + (c2 + c3) per chunk, the warp tree, the slot's warps in
    // order. multi_warp_sum's tree (xor 16, 8, ..., 1) does not depend on RS.
    float s[RS], mean[RS], rstd[RS];
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      s[ri] = 0.0f;
#pragma unroll
      for (int m = 0; m < NV; ++m) s[ri] += (xv[ri][m][0] + xv[ri][m][1]) + (xv[ri][m][2] + xv[ri][m][3]);
    }
    const float ws = multi_warp_sum<RS>(s, lane);
    if (publisher) red[0][prow][warp] = ws;
    __syncthreads();
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) mean[ri] = slot_sum(red[0][ri]) * a.inv_cols;
    // Variance of the deviations (columns past the row count as 0), kept in xv.
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      s[ri] = 0.0f;
#pragma unroll
      for (int m = 0; m < NV; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float d = cv[m][i] ? xv[ri][m][i] - mean[ri] : 0.0f;
          xv[ri][m][i] = d;
          s[ri] += d * d;
        }
    }
    const float wq = multi_warp_sum<RS>(s, lane);
    if (publisher) red[1][prow][warp] = wq;
    // red[0] and red[1] alternate, so one barrier per reduction: the next step writes
    // red[0] only after every thread has passed this barrier, i.e. read its means.
    __syncthreads();
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) rstd[ri] = rsqrtf(slot_sum(red[1][ri]) * a.inv_cols + a.eps);
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      if (rb + ri >= a.rows) continue;
#pragma unroll
      for (int m = 0; m < NV; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          ag[m][i] += static_cast<double>(gv[ri][m][i] * (xv[ri][m][i] * rstd[ri]));
          if (beta) ab[m][i] += static_cast<double>(gv[ri][m][i]);
        }
    }
  };
  // The loops run over tiles, the same count for every thread: the barriers need it.
  const int64_t stride = int64_t{kGroups} * a.tl;
  if constexpr (!kPipe) {
    for (int64_t t0 = static_cast<int64_t>(blockIdx.x) * a.tl; t0 < a.rows; t0 += stride) {
      const int64_t rb = t0 + static_cast<int64_t>(h) * RT;
      float xv[RS][NV][4], gv[RS][NV][4];
      load_rows(rb, xv, gv);
      add_rows(rb, xv, gv);
    }
  } else {
    int64_t rb = static_cast<int64_t>(blockIdx.x) * a.tl + static_cast<int64_t>(h) * RT;
    float xa[RS][NV][4], ga[RS][NV][4], xb[RS][NV][4], gb[RS][NV][4];
    if (static_cast<int64_t>(blockIdx.x) * a.tl < a.rows) {
      load_rows(rb, xa, ga);
      for (int64_t t0 = static_cast<int64_t>(blockIdx.x) * a.tl;; t0 += stride, rb += stride) {
        load_rows(rb + RS, xb, gb);
        add_rows(rb, xa, ga);
        const bool next = t0 + stride < a.rows;
        if (next) load_rows(rb + stride, xa, ga);
        add_rows(rb + RS, xb, gb);
        if (!next) break;
      }
    }
  }
  // Slots in order (several only with NV == 1: G <= T / 2).
  if constexpr (NV == 1) {
    const int slots = T / a.G;
    if (slots > 1) {
      for (int k = 0; k < slots; ++k) {
        if (h == k) {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (cv[0][i]) {
              double* cg = &comb[0][c0[0] + i];
              double* cb = &comb[1][c0[0] + i];
              *cg = k == 0 ? ag[0][i] : *cg + ag[0][i];
              *cb = k == 0 ? ab[0][i] : *cb + ab[0][i];
            }
        }
        __syncthreads();
      }
      if (h == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (cv[0][i]) {
            ag[0][i] = comb[0][c0[0] + i];
            ab[0][i] = comb[1][c0[0] + i];
          }
      }
    }
  }
  if (h != 0) return;
#pragma unroll
  for (int m = 0; m < NV; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (!cv[m][i]) continue;
      const int64_t c = c0[m] + i;
      if (a.part) {
        a.part[c * a.ng + blockIdx.x] = ag[m][i];
        if (beta) a.part[(a.cols + c) * a.ng + blockIdx.x] = ab[m][i];
      } else {
        a.dgamma[c] = static_cast<float>(ag[m][i]);
        if (beta) a.dbeta[c] = static_cast<float>(ab[m][i]);
      }
    }
}


template <bool kPipe>
void ln_params_old(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows, int64_t cols, float eps,
                   void* scratch, size_t scratch_bytes, cudaStream_t s) {
  const int64_t nq = (cols + 3) / 4;
  const int threads = nq <= 512 ? 256 : 512;
  const int nv = nq <= 256 ? 1 : 2;
  const int groups = threads == 256 ? 256 : 128;
  LnArgs a{dy, x, dgamma, dbeta, nullptr, rows, cols, eps, 1.0f / static_cast<float>(cols), static_cast<int>(nq), 0,
           0, 0};
  a.G = threads;
  if (nv == 1) {
    a.G = 32;
    while (a.G < nq) a.G *= 2;
  }
  a.tl = (threads / a.G) * (8 / nv);
  const int64_t tiles = (rows + a.tl - 1) / a.tl;
  a.ng = static_cast<int>(std::min<int64_t>(tiles, groups));
  const int64_t outputs = cols * (dbeta ? 2 : 1);
  if (a.ng > 1) {
    if (static_cast<int64_t>(scratch_bytes) < outputs * a.ng * static_cast<int64_t>(sizeof(double))) {
      std::printf("ln_params_old: the scratch is too small for [%ld, %ld]\n", static_cast<long>(rows),
                  static_cast<long>(cols));
      std::exit(1);
    }
    a.part = static_cast<double*>(scratch);
  }
  const bool vec = cols % 4 == 0 && aligned16(dy) && aligned16(x);
  auto k = threads == 512 ? (vec ? ln_params_old_kernel<512, 2, true, kPipe> : ln_params_old_kernel<512, 2, false, kPipe>)
           : nv == 1      ? (vec ? ln_params_old_kernel<256, 1, true, kPipe> : ln_params_old_kernel<256, 1, false, kPipe>)
                          : (vec ? ln_params_old_kernel<256, 2, true, kPipe> : ln_params_old_kernel<256, 2, false, kPipe>);
  launch(TG_LAUNCH_SITE, k, a.ng, threads, s, a);
  if (a.part) launch_finish(a.part, a.ng, outputs, dgamma, cols, dbeta, 1.0, false, s);
}

}  // namespace tg::kernels::cuda::lab

namespace {

namespace kc = tg::kernels::cuda;
namespace lab = tg::kernels::cuda::lab;

// 0 when two device vectors hold the same bits; otherwise the largest |a - b|, at least
// 1e-300 (so a zero of the other sign counts), or -1 when a NaN or infinity differs.
double max_diff(const float* a, const float* b, long n) {
  const std::vector<float> x = probe::download(a, n), y = probe::download(b, n);
  if (std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0) return 0.0;
  double worst = 1e-300;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(static_cast<double>(x[i]) - y[i]);
    if (!(d <= 1e30)) return -1;
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace

int main() {
  const probe::Stream s;
  const size_t scratch_bytes = size_t{8} << 20;  // the backend's
  void* scratch;
  CK(cudaMalloc(&scratch, scratch_bytes));
  constexpr long kCols = 1024;
  int bad = 0;
  std::printf("%-14s %-28s %10s %8s %12s\n", "case", "kernel", "us", "% copy", "max |diff|");
  for (long rows : {16384L, 65536L}) {
    const long n = rows * kCols;
    float* x = probe::upload(probe::pseudo_random(n, 7, 1.0f));
    float* dy = probe::upload(probe::pseudo_random(n, 11, 0.02f));
    float *copy_src, *copy_dst;
    CK(cudaMalloc(&copy_src, 2 * n * sizeof(float)));
    CK(cudaMalloc(&copy_dst, 2 * n * sizeof(float)));
    float *want, *got, *want_b, *got_b;
    for (float** p : {&want, &got, &want_b, &got_b}) CK(cudaMalloc(p, kCols * sizeof(float)));
    auto per_launch_us = [&](auto&& body) {
      body();
      CK(cudaStreamSynchronize(s));
      float best = 1e30f;
      for (int round = 0; round < 3; ++round) best = std::min(best, probe::mean_us(s, 0, 20, body));
      return best;
    };
    auto copy_us = [&](long floats) {
      return per_launch_us([&] {
        CK(cudaMemcpyAsync(copy_dst, copy_src, floats * sizeof(float), cudaMemcpyDeviceToDevice, s));
      });
    };
    char name[32];
    std::snprintf(name, sizeof name, "[%ld, %ld]", rows, kCols);
    // What must match: the same bits (exact), or within 1e-3 (v3's other order; the
    // column sums are ~40 in size, their float rounding ~4e-6).
    auto row = [&](const char* kernel, float t, float t_copy, double bytes, double diff, bool exact) {
      const bool mismatch = exact ? diff != 0 : diff < 0 || diff > 1e-3;
      std::printf("%-14s %-28s %10.1f %8.1f %12.3g%s\n", name, kernel, t, 100.0 * (bytes / t) / (2 * bytes / t_copy),
                  diff, mismatch ? "  MISMATCH" : "");
      if (mismatch) ++bad;
    };
    const float t_copy = copy_us(n);
    auto lib_sum = [&] { kc::reduce_sum(x, want, 1, rows, kCols, scratch, scratch_bytes, s); };
    row("reduce_sum v4 (library)", per_launch_us(lib_sum), t_copy, n * 4.0, 0, true);
    auto compare_sum = [&](const char* kernel, auto&& body, bool exact) {
      const float t = per_launch_us(body);
      CK(cudaStreamSynchronize(s));
      row(kernel, t, t_copy, n * 4.0, max_diff(want, got, kCols), exact);
    };
    compare_sum("reduce_sum v0", [&] { lab::split_cols<0>(x, got, rows, kCols, scratch, scratch_bytes, s); }, true);
    compare_sum("reduce_sum v1", [&] { lab::split_cols<1>(x, got, rows, kCols, scratch, scratch_bytes, s); }, true);
    compare_sum("reduce_sum v2", [&] { lab::split_cols<2>(x, got, rows, kCols, scratch, scratch_bytes, s); }, true);
    compare_sum("reduce_sum v3 (other order)", [&] {
      if (!lab::slices(x, got, rows, kCols, scratch, scratch_bytes, s)) {
        std::printf("v3: the slice sums of one column tile do not fit the scratch\n");
        std::exit(1);
      }
    }, false);
    const float t_copy2 = copy_us(2 * n);  // layernorm reads dy and x
    auto lib_ln = [&] { kc::layernorm_grad_gamma_beta(dy, x, want, want_b, rows, kCols, 1e-5f,
                                                      static_cast<float*>(scratch), scratch_bytes, s); };
    row("layernorm_params v4 (library)", per_launch_us(lib_ln), t_copy2, n * 8.0, 0, true);
    auto compare_ln = [&](const char* kernel, auto&& body) {
      const float t = per_launch_us(body);
      CK(cudaStreamSynchronize(s));
      row(kernel, t, t_copy2, n * 8.0,
          std::max(max_diff(want, got, kCols), max_diff(want_b, got_b, kCols)), true);
    };
    compare_ln("layernorm_params v0", [&] {
      lab::ln_params_old<false>(dy, x, got, got_b, rows, kCols, 1e-5f, scratch, scratch_bytes, s);
    });
    compare_ln("layernorm_params v2", [&] {
      lab::ln_params_old<true>(dy, x, got, got_b, rows, kCols, 1e-5f, scratch, scratch_bytes, s);
    });
  }
  if (bad) std::printf("%d kernel(s) did not give the outputs they must\n", bad);
  return bad ? 1 : 0;
}
