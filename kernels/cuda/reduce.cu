// reduce_sum, reduce_mean and broadcast (kernels/cpu/reduce.cpp): a sum over one axis
// on the frame of reduce.cuh, and its inverse.
//
// Floors at ~4 TB/s of reads (tg-kernels' cases, [rows, 1024] floats, read once):
//  - reduce_sum_rows (axis 1, contiguous): a warp per row, its 8 float4 per lane all in
//    flight, then the warp tree; 8 warps per block and no grid cap, so the scheduler
//    keeps refilling SMs. 64 MB: 16 us, 256 MB: 64 us; expected ~85-95% of copy (reads
//    only, so the copy's read + write GB/s is within reach).
//  - reduce_sum_cols (axis 0, the bias gradient): 8 column tiles x 32 block partials =
//    256 blocks of 16 rows x 512 B per warp in flight, then finish_kernel over 32 parts
//    per column (1024 warps, one latency, ~1-2 us). 64 MB: 16 + 2 us, 256 MB: 64 + 2 us;
//    expected ~80-90% of copy at 64 MB, ~90% at 256 MB. Measured on one H200 in one
//    session (docs/results/h200-logs/colreduce-variants-eb9a2fe.txt), % of copy at 64 /
//    256 MB: variant 0 66.7 / 89.8, 1 (pipelined loads) 69.1 / 90.9, 2 (1 without
//    finish_kernel) 71.2 / 92.8; layernorm_grad_gamma(_beta) gain as much at 256 MB from
//    1 and 2. Variant 2 was the default until variant 4 (below) beat it.
//  - reduce_sum_cols, variant 3: many more blocks than groups. Measured on an H200 (held
//    timing, docs/results/h200-logs/colreduce-variants-b5ba010.txt): 67.6% of copy at 64 MB
//    and 60.1% at 256 MB, against variant 2's 72.5 and 93.2%: the short blocks did not
//    remove the fixed cost, and at 256 MB the slice sums cost more than they saved.
//    Nsight Compute at 64 MB (docs/results/h200-logs/ncu-colreduce-variant3-c246025.txt,
//    base clocks) splits the 64 MB figure: reduce_cols_slices_kernel takes 20.5 us at 71% of
//    DRAM peak with the SMs active 85% of its cycles (3.9 waves), as good as
//    reduce_rows_kernel's 19.9 us; slice_finish_kernel then takes 4.6 us at 12% occupancy.
//    The main kernel fixed what variant 2 lacks; the second launch gives it back. Finishing
//    inside the kernel instead (tried at 1b236a3: the last block of each octet of groups
//    adds their slice sums, the last octet of a column tile the octet sums, both behind a
//    __threadfence and an atomic counter) was worse, 54.3% of copy at 64 MB and 64.6% at
//    256 MB (held, one H200 session): every short block then waits for its fence and its
//    atomic before it ends, which costs more than the one finishing launch. The
//    design, as it was reasoned before the measurement:
//    Variants 0-2 run a fixed grid of 256 blocks (8 column tiles x 32 block partials,
//    ~2 per SM) whose warps each walk a serial chain of tiles, 4 at 64 MB: the blocks
//    start together, ramp up and end together, and ~13 us of the 26 us at 64 MB is fixed
//    cost. Variant 3 gives each (column tile, group, slice of 4 tiles of the group) its
//    own block of 4 warps, a tile of 16 rows x 512 B (8 KB, all 16 loads issued at once)
//    per warp; the block writes the slice sum (a double per column), and a second launch,
//    slice_finish_kernel (a warp per column: each group's slices in order, groups
//    8b..8b+7 on lane b, lanes in order), adds them. Slices are cut by tile index, not
//    by len: padding-exact; the bits differ from 0-2 past 4096 rows (association).
//    At [16384, 1024]: 8 x 256 x 1 = 2048 blocks of 128 threads (8192 at 256 MB), at
//    least 4 per SM (launch bounds 128 x 4: <= 128 registers), so 16 warps x 8 KB =
//    128 KB per SM in flight at a block's start, like reduce_sum_rows' 32 warps x 4 KB,
//    and as there the scheduler refills an SM as soon as one short block ends, so the
//    SMs drift apart instead of moving in 4 synchronized waves. Slice sums: 2 MB
//    written and read back at 64 MB (8 MB at 256 MB: 3%), mostly in L2; the finish is a
//    second launch of 1024 warps, 8 loads per lane, one L2 round trip (~2 us, its
//    launch hidden by PDL). A second launch rather than a last-block-finishes counter:
//    a column tile's finish reads 128 x 256 x nsl doubles (256 KB+), too much for the one
//    block that arrives last (8 such blocks at the tail, on 8 SMs), and it needs no
//    counters. Expected: ~15 us of bytes + ~2 us finish + ~1-2 us ramp, ~18-19 us at
//    64 MB, >= 80% of copy (variant 2: 26 us, 71%); ~92-94% at 256 MB. Scratch: 8 B x
//    128 columns x groups x slices per column tile (1 MiB per tile at 65536 rows); column
//    tiles go in runs that fit it, and when one tile does not fit (over 524288 rows in
//    8 MiB) or there is no scratch, that call runs variant 2 (launch_reduce_cols_slices,
//    reduce.cuh). layernorm_params.cu's kernel runs variant 2 for 3; its wide-row path
//    (> 4096 columns) sums dbeta with reduce_sum's column frame, so variant 3's there.
//  - reduce_sum_cols, variant 4 (reduce.cuh): variant 2's order and split finish with a
//    warp per 32 columns (a column per lane) instead of 128, so 4x the blocks (1024 at
//    [16384, 1024]) at 64 registers and 4 blocks per SM, ~1.9 waves of short blocks, each
//    warp's group in two round trips of 32 rows. Variant 3 showed that blocks this short
//    reach reduce_rows_kernel's bandwidth (its first kernel: 20.5 us at 64 MB) and lost it
//    to its second launch; 4 keeps variant 2's in-kernel finish (32 partials per column,
//    read by the tile's last block) and 2's bits. Expected: ~19-21 us at 64 MB, >= 80% of
//    copy. Measured on one H200 in one session (held timing): 22.5 us, 77.4% of copy at
//    64 MB (variant 2 there: 24.3-25.4 us, 68.5-71.8%) and 94.6% at 256 MB (variant 2
//    93.6%); a second session: 22.6 against 23.9 us at 64 MB, 68.9 against 68.5 us at 256
//    MB. Short of 80% (reduce.cuh), but faster than 2 at 64 MB and the same at 256 MB, with
//    the same bits: variant 4 is the default.
//
// TG_COLREDUCE (0 to 4; read at first use; 4 when unset) picks the variant of the column frame and
// of layernorm_params.cu's kernel, set_col_reduce_variant overrides it: for measuring
// them in one process; variants 0, 1, 2 and 4 give the same bits, 3 its own.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace tg::kernels::cuda {

namespace {
std::atomic<int> g_col_variant{-1};  // -1: TG_COLREDUCE not read yet

int checked_variant(int v, const char* from) {
  if (v < 0 || v >= kColReduceVariants)
    throw std::invalid_argument(
        fmt::format("{}: column-reduction variant {} does not exist; use 0 to {}", from, v, kColReduceVariants - 1));
  return v;
}
}  // namespace

int col_reduce_variant() {
  int v = g_col_variant.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("TG_COLREDUCE");
    v = 4;
    if (e && *e) {
      const std::string text(e);
      if (text.size() != 1 || text[0] < '0' || text[0] > '9')
        throw std::invalid_argument(
            fmt::format("TG_COLREDUCE={}: expected one digit, 0 to {}", text, kColReduceVariants - 1));
      v = checked_variant(text[0] - '0', "TG_COLREDUCE");
    }
    g_col_variant.store(v, std::memory_order_relaxed);
  }
  return v;
}
void set_col_reduce_variant(int v) {
  g_col_variant.store(checked_variant(v, "set_col_reduce_variant"), std::memory_order_relaxed);
}

namespace detail {

namespace {

constexpr unsigned kDoneSlots = 1u << 16;
__device__ unsigned g_col_done[kDoneSlots];  // zero-initialized; each launch leaves its counters at 0
std::atomic<unsigned> g_done_next{0};

// A warp per output: lane s sums run s of the current 32 runs (its 32 loads in flight at
// once), then every lane adds the 32 run sums in lane order.
__global__ void __launch_bounds__(256) finish_kernel(const double* part, int64_t nparts, int64_t n, float* y0,
                                                     int64_t n0, float* y1, double scale, bool accumulate) {
  pdl::prologue();
  const int lane = threadIdx.x & 31;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (k >= n) return;
  const double* p = part + k * nparts;
  double total = 0.0;
  for (int64_t r0 = 0; r0 < nparts; r0 += int64_t{kRun} * kRun) {
    const int64_t first = r0 + int64_t{kRun} * lane;
    double v[kRun];
#pragma unroll
    for (int j = 0; j < kRun; ++j) v[j] = first + j < nparts ? p[first + j] : 0.0;
    double run = 0.0;
#pragma unroll
    for (int j = 0; j < kRun; ++j) run += v[j];
#pragma unroll
    for (int j = 0; j < 32; ++j) total += __shfl_sync(0xffffffffu, run, j);
  }
  if (lane == 0) {
    float* dst = k < n0 ? y0 + k : y1 + (k - n0);
    *dst = static_cast<float>(total * scale) + (accumulate ? *dst : 0.0f);
  }
}

// Variant 3's finish (reduce.cuh): a warp per output; lane b adds groups 8b..8b+7, each
// the sum of its nsl slices in order, then every lane adds the 32 lane sums in order.
__global__ void __launch_bounds__(256) slice_finish_kernel(const double* part, int ng, int64_t nsl, int64_t n,
                                                           float* y, double scale, bool accumulate) {
  pdl::prologue();
  const int lane = threadIdx.x & 31;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (k >= n) return;
  const double* p = part + k * ng * nsl;
  double run = 0.0;
  if (nsl == 1) {  // the common case: the lane's 8 loads in flight at once
    double v[kColWarps];
#pragma unroll
    for (int j = 0; j < kColWarps; ++j) {
      const int g = kColWarps * lane + j;
      v[j] = g < ng ? p[g] : 0.0;
    }
#pragma unroll
    for (int j = 0; j < kColWarps; ++j) run += v[j];
  } else {
    for (int j = 0; j < kColWarps; ++j) {
      const int g = kColWarps * lane + j;
      if (g >= ng) break;
      double group = 0.0;
      for (int64_t sl = 0; sl < nsl; ++sl) group += p[g * nsl + sl];
      run += group;
    }
  }
  double total = 0.0;
#pragma unroll
  for (int j = 0; j < 32; ++j) total += __shfl_sync(0xffffffffu, run, j);
  if (lane == 0) y[k] = static_cast<float>(total * scale) + (accumulate ? y[k] : 0.0f);
}

// Values k0 + 128u + 4 lane + i (u < 8, i < 4) of a row; kFull: all before `end`,
// loaded without predicates so the 8 loads issue back to back. Absent values are 0.
template <bool kVec, bool kFull>
__device__ __forceinline__ void load_row_block(const float* xr, int64_t k0, int64_t end, int lane, float4 (&v)[8]) {
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int64_t e = k0 + 128 * u + 4 * lane;
    if (kVec && (kFull || e + 3 < end)) {
      v[u] = *reinterpret_cast<const float4*>(xr + e);
    } else {
      const bool ok[4] = {kFull || e < end, kFull || e + 1 < end, kFull || e + 2 < end, kFull || e + 3 < end};
      v[u] = gather4(ok, [&](int i) { return xr[e + i]; });
    }
  }
}

// The sum of chunk c of one row (reduce.cuh: lane t, component i over 128k + 4t + i).
// kVec: the row starts 16-byte aligned; a float4 that runs past the end (len % 4 != 0,
// possible for a single row) is read element by element.
template <bool kVec>
__device__ __forceinline__ double chunk_sum(const float* xr, int64_t len, int64_t c, int lane) {
  const int64_t start = c * kRowChunk;
  const int64_t end = len - start < kRowChunk ? len : start + kRowChunk;
  double a[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t k0 = start; k0 < end; k0 += 128 * 8) {
    float4 v[8];
    if (k0 + 128 * 8 <= end)
      load_row_block<kVec, true>(xr, k0, end, lane, v);
    else
      load_row_block<kVec, false>(xr, k0, end, lane, v);
#pragma unroll
    for (int u = 0; u < 8; ++u) add4(a, v[u]);
  }
  return warp_sum((a[0] + a[1]) + (a[2] + a[3]));
}

// Direct (part == nullptr): warp per row, chunks added in runs of 32 as finish_kernel
// does. Split: warp per (row, chunk), the chunk sum to part[row * nc + chunk].
template <bool kVec>
__global__ void __launch_bounds__(256, 4) reduce_rows_kernel(const float* x, float* y, double* part, int64_t outer,
                                                          int64_t len, int64_t nc, double scale) {
  pdl::prologue();
  const int lane = threadIdx.x & 31;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (part) {
    if (item >= outer * nc) return;
    const int64_t o = item / nc;
    const double p = chunk_sum<kVec>(x + o * len, len, item - o * nc, lane);
    if (lane == 0) part[item] = p;
    return;
  }
  if (item >= outer) return;
  const float* xr = x + item * len;
  double total = 0.0, run = 0.0;
  for (int64_t c = 0; c < nc; ++c) {
    run += chunk_sum<kVec>(xr, len, c, lane);
    if ((c + 1) % kRun == 0 || c + 1 == nc) {
      total += run;
      run = 0.0;
    }
  }
  if (lane == 0) y[item] = static_cast<float>(total * scale);
}

int blocks_of_8_warps(int64_t warps) { return static_cast<int>((warps + 7) / 8); }

}  // namespace

ColPlan col_plan(int variant, bool plain_load, int64_t outer, int64_t len, int64_t inner, size_t scratch_bytes,
                 int sms) {
  ColPlan p{variant == 3 || variant == 4 ? 2 : variant, false, kColWidth, (inner + kColWidth - 1) / kColWidth, 1,
            int64_t{0x7fffffff}};
  const int64_t nb = (len + kColWarps * kColTile - 1) / (kColWarps * kColTile);
  p.nb = static_cast<int>(nb < 1 ? 1 : nb > kColParts ? kColParts : nb);
  auto fit = [&](int width) {
    return static_cast<int64_t>(scratch_bytes / (static_cast<size_t>(width) * static_cast<size_t>(p.nb) * sizeof(double)));
  };
  // Split only when looping would leave SMs idle: 4 blocks per SM is enough without. The
  // choice is variant 2's in every variant (in 128-column tiles), so that it does not
  // depend on the variant; variant 4's 32-column tiles need a quarter of the scratch each.
  const bool few_tiles = outer * p.n_ct < 4 * static_cast<int64_t>(sms);
  p.split = p.nb > 1 && few_tiles && fit(kColWidth) >= 1;
  if (!p.split) return p;
  if (variant == 4 && plain_load) {
    p.variant = 4;
    p.width = kNarrowWidth;
    p.n_ct = (inner + kNarrowWidth - 1) / kNarrowWidth;
  }
  const int64_t f = fit(p.width);
  p.per_launch = f < int64_t{kDoneSlots} ? f : int64_t{kDoneSlots};  // col_done_slots' limit
  return p;
}

unsigned* col_done_slots(int64_t n) {
  if (n < 1 || n > int64_t{kDoneSlots})
    throw std::invalid_argument(fmt::format("col_done_slots: {} counters, at most {}", n, kDoneSlots));
  const auto want = static_cast<unsigned>(n);
  unsigned first = g_done_next.fetch_add(want, std::memory_order_relaxed) % kDoneSlots;
  if (first > kDoneSlots - want) first = 0;  // a range does not wrap
  // The counters' address, per device (the module has one copy on each), looked up once.
  static std::atomic<uintptr_t> addr[64];
  int dev = 0;
  TG_CUDA_CHECK(cudaGetDevice(&dev));
  std::atomic<uintptr_t>& a = addr[dev >= 0 && dev < 64 ? dev : 0];
  uintptr_t base = a.load(std::memory_order_relaxed);
  if (base == 0 || dev < 0 || dev >= 64) {
    void* p = nullptr;
    TG_CUDA_CHECK(cudaGetSymbolAddress(&p, g_col_done));
    base = reinterpret_cast<uintptr_t>(p);
    if (dev >= 0 && dev < 64) a.store(base, std::memory_order_relaxed);
  }
  return reinterpret_cast<unsigned*>(base) + first;
}

void launch_finish(const double* part, int64_t nparts, int64_t n, float* y0, int64_t n0, float* y1, double scale,
                   bool accumulate, cudaStream_t s) {
  if (n <= 0) return;
  launch(TG_LAUNCH_SITE, finish_kernel, blocks_of_8_warps(n), kBlock, s, part, nparts, n, y0, n0, y1, scale,
         accumulate);
}

void launch_slice_finish(const double* part, int ng, int64_t nsl, int64_t n, float* y, double scale, bool accumulate,
                         cudaStream_t s) {
  if (n <= 0) return;
  launch(TG_LAUNCH_SITE, slice_finish_kernel, blocks_of_8_warps(n), kBlock, s, part, ng, nsl, n, y, scale,
         accumulate);
}

void launch_reduce_rows(const float* x, bool vec, float* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s) {
  const int64_t nc = len <= kRowChunk ? 1 : (len + kRowChunk - 1) / kRowChunk;
  auto k = vec ? reduce_rows_kernel<true> : reduce_rows_kernel<false>;
  // Rows in slices whose chunk sums fit the scratch; a warp per chunk only when there are
  // too few rows (2 blocks per SM) to fill the GPU with a warp per row.
  const int64_t fit = scratch ? static_cast<int64_t>(scratch_bytes / sizeof(double)) / nc : 0;
  const bool split = nc > 1 && outer < 16 * static_cast<int64_t>(sm_count()) && fit >= 1;
  if (!split) {
    // A grid of more than 2^31 - 1 blocks would be 2^34 rows: slice anyway.
    for (int64_t o0 = 0; o0 < outer; o0 += int64_t{8} * 0x7fffffff) {
      const int64_t n = outer - o0 < int64_t{8} * 0x7fffffff ? outer - o0 : int64_t{8} * 0x7fffffff;
      launch(TG_LAUNCH_SITE, k, blocks_of_8_warps(n), kBlock, s, x + o0 * len, y + o0, nullptr, n, len, nc, scale);
    }
    return;
  }
  double* part = static_cast<double*>(scratch);
  for (int64_t o0 = 0; o0 < outer; o0 += fit) {
    const int64_t n = outer - o0 < fit ? outer - o0 : fit;
    launch(TG_LAUNCH_SITE, k, blocks_of_8_warps(n * nc), kBlock, s, x + o0 * len, y + o0, part, n, len, nc, scale);
    launch_finish(part, nc, n, y + o0, n, nullptr, scale, false, s);
  }
}

}  // namespace detail

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

void reduce(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, double scale, void* scratch,
            size_t scratch_bytes, cudaStream_t s) {
  if (outer <= 0 || inner <= 0) return;
  if (inner == 1) {
    // Every row starts aligned when x does and rows are whole float4s (or there is one row).
    const bool vec = aligned16(x) && (len % 4 == 0 || outer == 1);
    return detail::launch_reduce_rows(x, vec, y, outer, len, scale, scratch, scratch_bytes, s);
  }
  detail::launch_reduce_cols(detail::PlainLoad{x}, inner % 4 == 0 && aligned16(x), y, outer, len, inner, scale, false,
                             scratch, scratch_bytes, s);
}

__global__ void broadcast_kernel(const float* x, float* y, int64_t total, int64_t size, int64_t inner) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t o = idx / (size * inner), i = idx % inner;
    y[idx] = x[o * inner + i];
  }
}
__global__ void broadcast_vec_kernel(const float4* x, float4* y, int64_t total4, int64_t size, int64_t inner4) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total4; idx += stride) {
    const int64_t o = idx / (size * inner4), i = idx % inner4;
    y[idx] = x[o * inner4 + i];
  }
}

}  // namespace

void reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, void* scratch,
                size_t scratch_bytes, cudaStream_t s) {
  reduce(x, y, outer, len, inner, 1.0, scratch, scratch_bytes, s);
}
void reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, void* scratch,
                 size_t scratch_bytes, cudaStream_t s) {
  reduce(x, y, outer, len, inner, 1.0 / static_cast<double>(len), scratch, scratch_bytes, s);
}

void broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * size * inner;
  if (total <= 0) return;
  if (inner % 4 == 0 && aligned16(x) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, broadcast_vec_kernel, grid_for(total / 4), kBlock, s, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), total / 4, size, inner / 4);
  else
    detail::launch(TG_LAUNCH_SITE, broadcast_kernel, grid_for(total), kBlock, s, x, y, total, size, inner);
}

}  // namespace tg::kernels::cuda
