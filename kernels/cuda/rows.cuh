#pragma once
// The row-wise kernel frame (internal to kernels/cuda): a group of G threads owns one
// row of `cols` values; thread t handles columns t, t+G, t+2G, ... (coalesced). G is
// 32 (a warp per row, several rows per block, no barriers) or the block size (a block
// per row). With VPT > 0 each thread keeps its VPT values in registers, so the row is
// read from memory once; VPT == 0 is the fallback for very long rows that re-reads it.
// All reductions are fixed-order trees: the same inputs give the same bits.
#include "kernels/cuda/common.cuh"

namespace tg::kernels::cuda::detail {

// Loops over this thread's columns j = t + G*k; fully unrolled when VPT > 0, so
// register arrays indexed by k stay in registers.
#define TG_ROW_LOOP(k, j)                                                                   \
  _Pragma("unroll") for (int k = 0; k < (VPT > 0 ? VPT : static_cast<int>((cols + G - 1) / G)); ++k) \
    if (const int64_t j = t + static_cast<int64_t>(G) * k; j < cols)

template <int G>
__device__ __forceinline__ float group_sum(float v, float* smem) {
  if constexpr (G == 32) {
    return warp_sum(v);
  } else {
    return block_reduce<float, false>(v, smem);
  }
}
template <int G>
__device__ __forceinline__ float group_max(float v, float* smem) {
  if constexpr (G == 32) {
    return warp_max(v);
  } else {
    return block_reduce<float, true>(v, smem);
  }
}

// The register cache of one input row: cache(k, x[j]) on the first pass,
// get(k, src, j) afterwards (from registers, or from memory when VPT == 0).
template <int VPT>
struct RowCache {
  float v[VPT > 0 ? VPT : 1];
  __device__ __forceinline__ void put(int k, float x) {
    if constexpr (VPT > 0) v[k] = x;
  }
  __device__ __forceinline__ float get(int k, const float* src, int64_t j) const {
    if constexpr (VPT > 0) {
      return v[k];
    } else {
      return src[j];
    }
  }
};

// Row ops implement: template <int G, int VPT> __device__ void run(int64_t row, int t, float* smem) const;
template <int G, int VPT, typename Op>
__global__ void __launch_bounds__(G == 32 ? 256 : G) rows_kernel(Op op, int64_t rows) {
  __shared__ float smem[32];
  if constexpr (G == 32) {
    const int64_t per_block = blockDim.x / 32;
    const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
    for (int64_t r = blockIdx.x * per_block + threadIdx.x / 32; r < rows; r += step)
      op.template run<G, VPT>(r, static_cast<int>(threadIdx.x & 31), smem);
  } else {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) op.template run<G, VPT>(r, threadIdx.x, smem);
  }
}

template <int G, int VPT, typename Op>
void launch_rows_as(const Op& op, int64_t rows, cudaStream_t s) {
  if constexpr (G == 32) {
    rows_kernel<32, VPT><<<grid_for(rows * 32, 256), 256, 0, s>>>(op, rows);
  } else {
    const int64_t cap = static_cast<int64_t>(sm_count()) * (2048 / G);
    rows_kernel<G, VPT><<<static_cast<int>(rows < cap ? rows : cap), G, 0, s>>>(op, rows);
  }
  TG_LAUNCH_CHECK();
}

// Picks the group size and the register count from the row length.
template <typename Op>
void launch_rows(const Op& op, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= 32) return launch_rows_as<32, 1>(op, rows, s);
  if (cols <= 64) return launch_rows_as<32, 2>(op, rows, s);
  if (cols <= 128) return launch_rows_as<32, 4>(op, rows, s);
  if (cols <= 256) return launch_rows_as<32, 8>(op, rows, s);
  if (cols <= 512) return launch_rows_as<32, 16>(op, rows, s);
  if (cols <= 1024) return launch_rows_as<32, 32>(op, rows, s);
  if (cols <= 2048) return launch_rows_as<256, 8>(op, rows, s);
  if (cols <= 4096) return launch_rows_as<512, 8>(op, rows, s);
  if (cols <= 8192) return launch_rows_as<1024, 8>(op, rows, s);
  return launch_rows_as<1024, 0>(op, rows, s);
}

}  // namespace tg::kernels::cuda::detail
