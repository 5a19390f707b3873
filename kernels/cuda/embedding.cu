// embedding and embedding_grad (kernels/cpu/embedding.cpp), in every float dtype of the
// table, with i32 or i64 ids.
// An id outside [0, vocabulary) cannot throw from a kernel; its behaviour is defined: the
// forward writes a row of zeros, and the gradient drops that dy row (no table row matches
// it). The CPU reference refuses such an id instead (tg::InputError).
// embedding_grad sums without atomics, so that it is deterministic (the static and dynamic
// executors, and replays, give the same bits): one block per vocabulary row scans every id
// in order and adds the dy rows whose id is its own, in f32, in ascending position, the
// order the CPU reference adds in. The scan costs vocabulary x ids comparisons, read from
// shared memory; a sort by id with a segmented sum would cost less on large vocabularies.
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
constexpr int kIdTile = 1024;                          // ids staged in shared memory at a time
constexpr int64_t kScanCols = int64_t{kGradThreads} * kGradCols;

template <typename T, typename I>
__global__ void __launch_bounds__(kGradThreads) embedding_grad_kernel(const T* dy, const I* ids, T* dtable,
                                                                      int64_t vocab, int64_t dim, int64_t n) {
  pdl::prologue();
  __shared__ int64_t tile[kIdTile];
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    for (int64_t c0 = 0; c0 < dim; c0 += kScanCols) {
      float acc[kGradCols];
#pragma unroll
      for (int k = 0; k < kGradCols; ++k) acc[k] = 0.0f;
      for (int64_t t0 = 0; t0 < n; t0 += kIdTile) {
        const int64_t m = n - t0 < kIdTile ? n - t0 : kIdTile;
        __syncthreads();  // the previous tile is read by every thread before it is replaced
        for (int64_t i = threadIdx.x; i < m; i += blockDim.x) tile[i] = static_cast<int64_t>(ids[t0 + i]);
        __syncthreads();
        for (int64_t i = 0; i < m; ++i) {
          if (tile[i] != v) continue;  // the same branch for every thread of the block
          const T* row = dy + (t0 + i) * dim;
#pragma unroll
          for (int k = 0; k < kGradCols; ++k) {
            const int64_t j = c0 + threadIdx.x + static_cast<int64_t>(k) * kGradThreads;
            if (j < dim) acc[k] = __fadd_rn(acc[k], static_cast<float>(row[j]));
          }
        }
      }
#pragma unroll
      for (int k = 0; k < kGradCols; ++k) {
        const int64_t j = c0 + threadIdx.x + static_cast<int64_t>(k) * kGradThreads;
        if (j < dim) dtable[v * dim + j] = narrow<T>(acc[k]);
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
  const int grid = static_cast<int>(g.len < cap ? g.len : cap);
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
