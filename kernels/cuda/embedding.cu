// embedding and embedding_grad (kernels/cpu/embedding.cpp), in every float dtype of the
// table, with i32 or i64 ids.
// An id outside [0, vocabulary) cannot throw from a kernel; its behaviour is defined: the
// forward writes a row of zeros, and the gradient drops that dy row (no table row matches
// it). The CPU reference refuses such an id instead (tg::InputError).
// embedding_grad sums without atomics, so that it is deterministic (the static and dynamic
// executors, and replays, give the same bits): a block owns a few vocabulary rows at a time,
// finds the ids that are theirs in position order and adds those dy rows, in f32, in
// ascending position, the order the CPU reference adds in. Every row group reads all the ids
// (vocabulary / kGradRows x ids reads, from L2); a sort by id with a segmented sum would read
// them once.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

using detail::grid_for;
using detail::kBlock;

template <typename T, typename I>
__global__ void embedding_kernel(const T* table, const I* ids, T* out, int64_t vocab, int64_t dim, int64_t total) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t t = e / dim, j = e - t * dim;
    const int64_t id = static_cast<int64_t>(ids[t]);
    out[e] = id >= 0 && id < vocab ? table[id * dim + j] : narrow<T>(0.0f);
  }
}

constexpr int kGradThreads = 256;
constexpr int kGradCols = 4;                           // columns a thread keeps in registers per scan
constexpr int kGradRows = 4;                           // vocabulary rows a block sums in one scan
constexpr int kIdTile = 1024;                          // ids a block looks at per round
constexpr int kIdsPerThread = kIdTile / kGradThreads;  // consecutive ids, so thread order is position order
constexpr int kWarpsPerBlock = kGradThreads / 32;
constexpr int64_t kScanCols = int64_t{kGradThreads} * kGradCols;
static_assert((kGradRows & (kGradRows - 1)) == 0, "a hit packs its row in the low bits");

// One block sums kGradRows vocabulary rows at a time. Per round of kIdTile ids, each thread
// tests its kIdsPerThread consecutive ids against the block's rows, a block-wide prefix sum
// of the hits places them in shared memory in position order, and every thread then adds
// the hit dy rows into its columns of the matching row's accumulators. Each id is tested once
// per block row group, not once per thread: the test is no longer vocabulary x ids x threads.
template <typename T, typename I>
__global__ void __launch_bounds__(kGradThreads) embedding_grad_kernel(const T* dy, const I* ids, T* dtable,
                                                                      int64_t vocab, int64_t dim, int64_t n) {
  pdl::prologue();
  __shared__ int32_t hits[kIdTile];  // (position in the round) * kGradRows + row, ascending
  __shared__ int32_t warp_hits[kWarpsPerBlock];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kGradRows;
  for (int64_t v0 = static_cast<int64_t>(blockIdx.x) * kGradRows; v0 < vocab; v0 += step) {
    for (int64_t c0 = 0; c0 < dim; c0 += kScanCols) {
      float acc[kGradRows][kGradCols];
#pragma unroll
      for (int r = 0; r < kGradRows; ++r)
#pragma unroll
        for (int k = 0; k < kGradCols; ++k) acc[r][k] = 0.0f;
      for (int64_t t0 = 0; t0 < n; t0 += kIdTile) {
        const int64_t m = n - t0 < kIdTile ? n - t0 : kIdTile;
        int row_of[kIdsPerThread];
        int mine = 0;
#pragma unroll
        for (int q = 0; q < kIdsPerThread; ++q) {
          const int64_t p = static_cast<int64_t>(threadIdx.x) * kIdsPerThread + q;
          int r = -1;
          if (p < m) {
            const int64_t d = static_cast<int64_t>(ids[t0 + p]) - v0;
            if (d >= 0 && d < kGradRows) r = static_cast<int>(d);
          }
          row_of[q] = r;
          mine += r >= 0 ? 1 : 0;
        }
        int upto = mine;  // inclusive prefix of the hits over the warp
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const int y = __shfl_up_sync(0xffffffffu, upto, o);
          if (lane >= o) upto += y;
        }
        __syncthreads();  // every thread is done with the last round's hits and warp counts
        if (lane == 31) warp_hits[warp] = upto;
        __syncthreads();
        int before = 0, total = 0;
#pragma unroll
        for (int w = 0; w < kWarpsPerBlock; ++w) {
          const int c = warp_hits[w];
          before += w < warp ? c : 0;
          total += c;
        }
        int at = before + upto - mine;
#pragma unroll
        for (int q = 0; q < kIdsPerThread; ++q)
          if (row_of[q] >= 0) hits[at++] = (static_cast<int>(threadIdx.x) * kIdsPerThread + q) * kGradRows + row_of[q];
        __syncthreads();
        for (int h = 0; h < total; ++h) {
          const int e = hits[h];
          const int r = e & (kGradRows - 1);
          const T* src = dy + (t0 + e / kGradRows) * dim;
#pragma unroll
          for (int k = 0; k < kGradCols; ++k) {
            const int64_t j = c0 + threadIdx.x + static_cast<int64_t>(k) * kGradThreads;
            if (j >= dim) continue;
            const float x = static_cast<float>(src[j]);
#pragma unroll
            for (int rr = 0; rr < kGradRows; ++rr)  // a register index known at compile time
              if (rr == r) acc[rr][k] = __fadd_rn(acc[rr][k], x);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kGradRows; ++r) {
        if (v0 + r >= vocab) break;
#pragma unroll
        for (int k = 0; k < kGradCols; ++k) {
          const int64_t j = c0 + threadIdx.x + static_cast<int64_t>(k) * kGradThreads;
          if (j < dim) dtable[(v0 + r) * dim + j] = narrow<T>(acc[r][k]);
        }
      }
    }
  }
}

// fn(I{}) with I the element type of the integer dtype dt (the dtype rules give the ids
// no other: graph/dtype_rules.h).
template <typename Fn>
void with_index_type(DType dt, Fn&& fn) {
  if (dt == DType::I32) return fn(int32_t{});
  if (dt == DType::I64) return fn(int64_t{});
  throw std::invalid_argument(std::string("run_cuda embedding: the ids are ") + dtype_name(dt) +
                              "; they must be i32 or i64");
}

}  // namespace

void embedding(const TensorView& table, const TensorView& ids, const TensorView& out, const CallGeometry& g,
               cudaStream_t s) {
  const int64_t total = g.rows * g.cols;
  if (total <= 0) return;
  with_element_type(table.dtype, [&](auto te) {
    using T = decltype(te);
    with_index_type(ids.dtype, [&](auto ie) {
      using I = decltype(ie);
      detail::launch(TG_LAUNCH_SITE, embedding_kernel<T, I>, grid_for(total), kBlock, s, elements<const T>(table.data),
                     elements<const I>(ids.data), elements<T>(out.data), g.len, g.cols, total);
    });
  });
}

void embedding_grad(const TensorView& dy, const TensorView& ids, const TensorView& dtable, const CallGeometry& g,
                    cudaStream_t s) {
  if (g.len <= 0 || g.cols <= 0) return;
  const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
  const int64_t groups = (g.len + kGradRows - 1) / kGradRows;
  const int grid = static_cast<int>(groups < cap ? groups : cap);
  with_element_type(dy.dtype, [&](auto te) {
    using T = decltype(te);
    with_index_type(ids.dtype, [&](auto ie) {
      using I = decltype(ie);
      detail::launch(TG_LAUNCH_SITE, embedding_grad_kernel<T, I>, grid, kGradThreads, s, elements<const T>(dy.data),
                     elements<const I>(ids.data), elements<T>(dtable.data), g.len, g.cols, g.rows);
    });
  });
}

}  // namespace tg::kernels::cuda
