// Reductions over one axis (and layernorm_grad_gamma, a reduction over the rows),
// broadcast, and mse_loss / padded_mse_loss. Sums run in double in a fixed order: each thread walks
// its share of the axis in order, then a fixed tree combines the shares.
#include <cuda_runtime.h>

#include <cmath>

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

struct PlainLoad {
  const float* x;
  __device__ float operator()(int64_t idx, int64_t) const { return x[idx]; }
};
// layernorm_grad_gamma: dy * xhat, with the row's (mean, rstd) from the stats pass.
struct DyXhatLoad {
  const float* dy;
  const float* x;
  const float* stats;  // indexed by the reduced (row) index
  __device__ float operator()(int64_t idx, int64_t a) const {
    return dy[idx] * ((x[idx] - stats[2 * a]) * stats[2 * a + 1]);
  }
};

// inner == 1: the axis is contiguous. A block of 256 threads per output row.
template <typename Load>
__global__ void reduce_rows_kernel(Load load, float* y, int64_t outer, int64_t len, double post_scale) {
  pdl::prologue();
  __shared__ double smem[32];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    double acc = 0.0;
    for (int64_t a = threadIdx.x; a < len; a += blockDim.x) acc += load(o * len + a, a);
    acc = detail::block_reduce<double, false>(acc, smem);
    if (threadIdx.x == 0) y[o] = static_cast<float>(acc * post_scale);
  }
}

// inner > 1: threadIdx.x walks 32 consecutive inner positions (coalesced), threadIdx.y
// splits the axis BY ways; the BY partial sums are added in order of y.
template <int BY, typename Load>
__global__ void __launch_bounds__(32 * BY) reduce_inner_kernel(Load load, float* y, int64_t outer, int64_t len,
                                                               int64_t inner, double post_scale, bool accumulate) {
  pdl::prologue();
  __shared__ double part[BY][33];
  const int64_t tiles = (inner + 31) / 32;
  for (int64_t tile = blockIdx.x; tile < outer * tiles; tile += gridDim.x) {
    const int64_t o = tile / tiles;
    const int64_t i = (tile % tiles) * 32 + threadIdx.x;
    double acc = 0.0;
    if (i < inner)
      for (int64_t a = threadIdx.y; a < len; a += BY) acc += load((o * len + a) * inner + i, a);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
      double s = 0.0;
#pragma unroll
      for (int r = 0; r < BY; ++r) s += part[r][threadIdx.x];
      const float prev = accumulate ? y[o * inner + i] : 0.0f;
      y[o * inner + i] = static_cast<float>(s * post_scale) + prev;
    }
    __syncthreads();
  }
}

template <typename Load>
void launch_reduce(const Load& load, float* y, int64_t outer, int64_t len, int64_t inner, double post_scale,
                   bool accumulate, cudaStream_t s) {
  if (outer <= 0 || inner <= 0) return;
  if (inner == 1 && !accumulate) {
    const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
    detail::launch(TG_LAUNCH_SITE, reduce_rows_kernel<Load>, static_cast<int>(outer < cap ? outer : cap), kBlock, s, load, y, outer, len, post_scale);
  } else {
    const int64_t tiles = outer * ((inner + 31) / 32);
    // Few output tiles: split the axis 32 ways so that a long axis still has threads.
    if (tiles < 2 * detail::sm_count()) {
      detail::launch(TG_LAUNCH_SITE, reduce_inner_kernel<32, Load>, static_cast<int>(tiles), dim3(32, 32), s, load, y, outer, len, inner, post_scale, accumulate);
    } else {
      const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
      detail::launch(TG_LAUNCH_SITE, reduce_inner_kernel<8, Load>, static_cast<int>(tiles < cap ? tiles : cap), dim3(32, 8), s, load, y, outer, len, inner, post_scale, accumulate);
    }
  }
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

// mse_loss and padded_mse_loss. The sum's grouping depends only on the element
// positions, never on n, the grid or the pointers' alignment, so the first c elements
// of a padded tensor sum to the same bits as those c elements alone: what makes the
// bucket shape strategy exact (static/shape_strategy.h). The elements are cut into
// chunks of kMseChunk; in a chunk, thread j adds its quads j, j + 1024, j + 2048,
// j + 3072 in that order (in double; positions past the real count add 0) and a
// fixed block tree sums the threads. The chunk sums are then combined as the final
// stage does: thread t adds chunks t, t + 1024, ... in order, then the same tree.
constexpr int kMseThreads = 1024;
constexpr int kMseQuads = 4;  // per thread and chunk
constexpr int64_t kMseChunk = int64_t{kMseThreads} * 4 * kMseQuads;

// The number of real elements: n, or count[0] when that is an integer in [1, n];
// -1 otherwise, which makes the loss NaN (a kernel cannot throw).
__device__ int64_t mse_real_count(const float* count, int64_t n) {
  if (!count) return n;
  const float c = *count;
  // In double: float(n) rounds up for some n > 2^24 (a count of float(n) > n would
  // read past the end).
  if (!(c >= 1.0f && static_cast<double>(c) <= static_cast<double>(n) && c == floorf(c))) return -1;
  return static_cast<int64_t>(c);
}

// This thread's share of one chunk. __dmul_rn/__dadd_rn: the vector and the scalar
// path must not be contracted into FMAs differently.
__device__ double mse_chunk_share(const float* p, const float* t, int64_t chunk, int64_t real, bool vec) {
  double acc = 0.0;
#pragma unroll
  for (int q = 0; q < kMseQuads; ++q) {
    const int64_t i = chunk * kMseChunk + (static_cast<int64_t>(q) * kMseThreads + threadIdx.x) * 4;
    double d[4];
    if (vec && i + 3 < real) {
      const float4 a = *reinterpret_cast<const float4*>(p + i), b = *reinterpret_cast<const float4*>(t + i);
      d[0] = static_cast<double>(a.x) - b.x;
      d[1] = static_cast<double>(a.y) - b.y;
      d[2] = static_cast<double>(a.z) - b.z;
      d[3] = static_cast<double>(a.w) - b.w;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) d[k] = i + k < real ? static_cast<double>(p[i + k]) - t[i + k] : 0.0;
    }
    const double sq = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(d[0], d[0]), __dmul_rn(d[1], d[1])),
                                          __dmul_rn(d[2], d[2])), __dmul_rn(d[3], d[3]));
    acc = __dadd_rn(acc, sq);
  }
  return acc;
}

__device__ void mse_finish(double share, int64_t real, float* loss, double* smem) {
  const double total = detail::block_reduce<double, false>(share, smem);
  if (threadIdx.x == 0) loss[0] = real < 0 ? NAN : static_cast<float>(total / static_cast<double>(real));
}

// partial != null: each chunk's sum goes to partial[chunk]. partial == null: a single
// block runs both stages itself (same grouping) and writes the loss.
__global__ void __launch_bounds__(kMseThreads) mse_chunks_kernel(const float* p, const float* t, const float* count,
                                                                 double* partial, float* loss, int64_t n,
                                                                 int64_t chunks) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t real = mse_real_count(count, n);
  const bool vec = aligned16(p) && aligned16(t);
  double share = 0.0;  // single-block mode: this thread's part of the final stage
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const double sum = detail::block_reduce<double, false>(real < 0 ? 0.0 : mse_chunk_share(p, t, c, real, vec), smem);
    if (partial) {
      if (threadIdx.x == 0) partial[c] = sum;
    } else if (threadIdx.x == c % kMseThreads) {
      share = __dadd_rn(share, sum);
    }
  }
  if (!partial) mse_finish(share, real, loss, smem);
}

__global__ void __launch_bounds__(kMseThreads) mse_final_kernel(const double* partial, int64_t chunks,
                                                                const float* count, float* loss, int64_t n) {
  pdl::prologue();
  __shared__ double smem[32];
  double share = 0.0;
  for (int64_t c = threadIdx.x; c < chunks; c += kMseThreads) share = __dadd_rn(share, partial[c]);
  mse_finish(share, mse_real_count(count, n), loss, smem);
}

void launch_mse(const float* p, const float* t, const float* count, float* loss, int64_t n, void* scratch,
                size_t scratch_bytes, cudaStream_t s) {
  if (n <= 0) return;
  const int64_t chunks = (n + kMseChunk - 1) / kMseChunk;
  if (chunks == 1 || !scratch || static_cast<int64_t>(scratch_bytes / sizeof(double)) < chunks) {
    detail::launch(TG_LAUNCH_SITE, mse_chunks_kernel, 1, kMseThreads, s, p, t, count, nullptr, loss, n, chunks);
    return;
  }
  const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 2;
  double* partial = static_cast<double*>(scratch);
  detail::launch(TG_LAUNCH_SITE, mse_chunks_kernel, static_cast<int>(chunks < cap ? chunks : cap), kMseThreads, s, p,
                 t, count, partial, loss, n, chunks);
  detail::launch(TG_LAUNCH_SITE, mse_final_kernel, 1, kMseThreads, s, partial, chunks, count, loss, n);
}

}  // namespace

void reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0, false, s);
}
void reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0 / static_cast<double>(len), false, s);
}

void broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * size * inner;
  if (total <= 0) return;
  if (inner % 4 == 0 && aligned16(x) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, broadcast_vec_kernel, grid_for(total / 4), kBlock, s, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), total / 4, size, inner / 4);
  else
    detail::launch(TG_LAUNCH_SITE, broadcast_kernel, grid_for(total), kBlock, s, x, y, total, size, inner);
}

void layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols, float eps,
                          float* scratch, size_t scratch_bytes, cudaStream_t s) {
  if (cols <= 0) return;
  const int64_t chunk = static_cast<int64_t>(scratch_bytes / (2 * sizeof(float)));
  if (!scratch || chunk < 1)
    throw std::invalid_argument(fmt::format(
        "run_cuda layernorm_grad_gamma: needs a scratch buffer of at least 8 bytes per row ({} rows); "
        "pass CudaExecContext::scratch (the CUDA backend provides one)", rows));
  if (rows <= 0) return fill(dgamma, 0.0f, cols, s);
  // Rows in chunks that fit the scratch; later chunks add onto dgamma (one rounding
  // per chunk; a single chunk for any realistic size: 1M rows per 8 MiB).
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
    layernorm_row_stats(x + r0 * cols, scratch, n, cols, eps, s);
    launch_reduce(DyXhatLoad{dy + r0 * cols, x + r0 * cols, scratch}, dgamma, 1, n, cols, 1.0, r0 > 0, s);
  }
}

void mse_loss(const float* p, const float* t, float* loss, int64_t n, void* scratch, size_t scratch_bytes,
              cudaStream_t s) {
  launch_mse(p, t, nullptr, loss, n, scratch, scratch_bytes, s);
}
void padded_mse_loss(const float* p, const float* t, const float* count, float* loss, int64_t n, void* scratch,
                     size_t scratch_bytes, cudaStream_t s) {
  launch_mse(p, t, count, loss, n, scratch, scratch_bytes, s);
}

}  // namespace tg::kernels::cuda
