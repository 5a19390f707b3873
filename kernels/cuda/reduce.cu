// reduce_sum and reduce_mean (kernels/cpu/reduce.cpp): a sum over one axis on the frame of
// reduce.cuh (broadcast, its inverse, is a move: layout.cu).
//
// Floors at ~4 TB/s of reads (tg-kernels' cases, [rows, 1024] floats, read once):
//  - reduce_sum_rows (axis 1, contiguous): a warp per row, its 8 float4 per lane all in
//    flight, then the warp tree; 8 warps per block and no grid cap, so the scheduler
//    keeps refilling SMs. 64 MB: 16 us, 256 MB: 64 us.
//  - reduce_sum_cols (axis 0, the bias gradient): few column tiles, so the split launch
//    of reduce.cuh: 32 column tiles x 32 block partials = 1024 blocks of 8 warps at
//    [16384, 1024], 4 per SM, each warp one group of 4 tiles of 16 rows, loaded 32 rows
//    at a time; the tile's last block adds its 32 partials. Its fixed cost against a
//    copy of the same bytes is the grid's ramp and drain, not the adds nor the ordered
//    end (dev/cuda/colreduce_floor.cu times kernels without the order on the same data);
//    back to back with programmatic dependent launch, as in a graph replay, the next
//    grid is already resident when this one ends.
// CHANGELOG.md has the measurements behind these choices and the loops that lost.
// reduce_sum and reduce_mean run in every float dtype (reduce_op): 16-bit elements load
// 4 to 8 bytes where f32 loads 16, the sums are f32's, the outputs round once.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/gemm/gemm_epilogue16.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace tg::kernels::cuda {

namespace detail {

namespace {

constexpr unsigned kDoneSlots = 1u << 16;
__device__ unsigned g_col_done[kDoneSlots];  // zero-initialized; each launch leaves its counters at 0
std::atomic<unsigned> g_done_next{0};

// A warp per output: lane s sums run s of the current 32 runs (its 32 loads in flight at
// once), then every lane adds the 32 run sums in lane order.
template <typename Y>
__global__ void __launch_bounds__(256) finish_kernel(const double* part, int64_t nparts, int64_t n, Y* y0,
                                                     int64_t n0, Y* y1, double scale, bool accumulate) {
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
  if (lane == 0) store_sum(k < n0 ? y0 + k : y1 + (k - n0), total, scale, accumulate);
}

// Values k0 + 128u + 4 lane + i (u < 8, i < 4) of a row; kFull: all before `end`,
// loaded without predicates so the 8 loads issue back to back. Absent values are 0.
template <bool kVec, bool kFull, typename T>
__device__ __forceinline__ void load_row_block(const T* xr, int64_t k0, int64_t end, int lane, float4 (&v)[8]) {
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int64_t e = k0 + 128 * u + 4 * lane;
    if (kVec && (kFull || e + 3 < end)) {
      v[u] = load4_wide(xr + e);
    } else {
      const bool ok[4] = {kFull || e < end, kFull || e + 1 < end, kFull || e + 2 < end, kFull || e + 3 < end};
      v[u] = gather4(ok, [&](int i) -> float { return xr[e + i]; });
    }
  }
}

// The sum of chunk c of one row (reduce.cuh: lane t, component i over 128k + 4t + i).
// kVec: the row starts aligned4; a group of 4 that runs past the end (len % 4 != 0,
// possible for a single row) is read element by element.
template <bool kVec, typename T>
__device__ __forceinline__ double chunk_sum(const T* xr, int64_t len, int64_t c, int lane) {
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
template <bool kVec, typename T>
__global__ void __launch_bounds__(256, 4) reduce_rows_kernel(const T* x, T* y, double* part, int64_t outer,
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
  const T* xr = x + item * len;
  double total = 0.0, run = 0.0;
  for (int64_t c = 0; c < nc; ++c) {
    run += chunk_sum<kVec>(xr, len, c, lane);
    if ((c + 1) % kRun == 0 || c + 1 == nc) {
      total += run;
      run = 0.0;
    }
  }
  if (lane == 0) y[item] = narrow<T>(static_cast<float>(total * scale));
}

int blocks_of_8_warps(int64_t warps) { return static_cast<int>((warps + 7) / 8); }

}  // namespace

ColPlan col_plan(int64_t outer, int64_t len, int64_t inner, size_t scratch_bytes, int sms) {
  ColPlan p{false, kColWidth, (inner + kColWidth - 1) / kColWidth, 1, int64_t{0x7fffffff}};
  const int64_t nb = (len + kColWarps * kColTile - 1) / (kColWarps * kColTile);
  p.nb = static_cast<int>(nb < 1 ? 1 : nb > kColParts ? kColParts : nb);
  auto fit = [&](int width) {
    return static_cast<int64_t>(scratch_bytes / (static_cast<size_t>(width) * static_cast<size_t>(p.nb) * sizeof(double)));
  };
  // Split only when the looped launch would leave SMs idle: 4 of its blocks (128-column
  // tiles) per SM are enough without. The scratch must hold one 128-column tile's partials
  // (four 32-column tiles of the split launch): both tests count the looped launch's tiles,
  // so whether a call splits is a property of the looped launch alone.
  const bool few_tiles = outer * p.n_ct < 4 * static_cast<int64_t>(sms);
  p.split = p.nb > 1 && few_tiles && fit(kColWidth) >= 1;
  if (!p.split) return p;
  p.width = kNarrowWidth;
  p.n_ct = (inner + kNarrowWidth - 1) / kNarrowWidth;
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

template <typename Y>
void launch_finish(const double* part, int64_t nparts, int64_t n, Y* y0, int64_t n0,
                   typename std::remove_const<Y>::type* y1, double scale, bool accumulate, cudaStream_t s) {
  if (n <= 0) return;
  launch(TG_LAUNCH_SITE, finish_kernel<Y>, blocks_of_8_warps(n), kBlock, s, part, nparts, n, y0, n0, y1, scale,
         accumulate);
}

template <typename T>
void launch_reduce_rows(const T* x, bool vec, T* y, int64_t outer, int64_t len, double scale, void* scratch,
                        size_t scratch_bytes, cudaStream_t s) {
  const int64_t nc = len <= kRowChunk ? 1 : (len + kRowChunk - 1) / kRowChunk;
  auto k = vec ? reduce_rows_kernel<true, T> : reduce_rows_kernel<false, T>;
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

#define TG_REDUCE_INSTANCES(T)                                                                                   \
  template void launch_finish(const double*, int64_t, int64_t, T*, int64_t, T*, double, bool, cudaStream_t); \
  template void launch_reduce_rows(const T*, bool, T*, int64_t, int64_t, double, void*, size_t, cudaStream_t);
TG_REDUCE_INSTANCES(float)
TG_REDUCE_INSTANCES(Bf16)
TG_REDUCE_INSTANCES(F16)
#undef TG_REDUCE_INSTANCES

}  // namespace detail

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

template <typename T>
void reduce(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, double scale, void* scratch,
            size_t scratch_bytes, cudaStream_t s) {
  if (outer <= 0 || inner <= 0) return;
  if (inner == 1) {
    // Every row starts aligned when x does and rows are whole groups of 4 (or there is one row).
    const bool vec = aligned4(x) && (len % 4 == 0 || outer == 1);
    return detail::launch_reduce_rows(x, vec, y, outer, len, scale, scratch, scratch_bytes, s);
  }
  detail::launch_reduce_cols(detail::PlainLoadOf<T>{x}, inner % 4 == 0 && aligned4(x), y, outer, len, inner, scale,
                             false, scratch, scratch_bytes, s);
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

void column_sums_16bit(DType dt, const void* dz, void* out, int64_t rows, int64_t cols, float* scratch,
                       size_t scratch_bytes, cudaStream_t s) {
  if (dt != DType::BF16 && dt != DType::F16)
    throw std::logic_error(std::string("column_sums_16bit: takes bf16 or f16 tensors, not ") + dtype_name(dt));
  with_element_type(dt, [&](auto e) {
    using T = decltype(e);
    reduce(static_cast<const T*>(dz), static_cast<T*>(out), 1, rows, cols, 1.0, scratch, scratch_bytes, s);
  });
}

void reduce_op(const OpCall& c, const CallGeometry& g, const CudaExecContext& ctx) {
  const double scale = c.op == OpKind::reduce_mean ? 1.0 / static_cast<double>(g.len) : 1.0;
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    reduce(elements<const T>(c.in[0].data), elements<T>(c.out.data), g.outer, g.len, g.inner, scale, ctx.scratch,
           ctx.scratch_bytes, ctx.stream);
  });
}

}  // namespace tg::kernels::cuda
