// The losses and their gradients (kernels/cpu/loss.cpp): mse_loss and
// padded_mse_loss (a fixed-order chunked sum), their gradients (the elementwise
// frame), cross_entropy and its gradient (the row frame with the softmax blocks).
// cross_entropy's logits and its gradient's logits and dx are of any float dtype (T, the
// element type of storage.h): widened on load, f32 arithmetic, dx rounded once on store, so
// the bits are those of the f32 kernels on the widened logits (dx then rounded).
// A label that is not an integer class (nor ignore_index), or a count that is not an
// integer in [1, n], cannot throw from a kernel: the loss or gradient becomes NaN.
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/softmax.cuh"

namespace tg::kernels::cuda {

namespace {

// The row frame (rows.cuh) and its building blocks.
using namespace detail;

// mse_loss_grad's scale s = 2*dloss/n is read from device memory by each thread.
struct MseGradF {
  const float* dloss;
  float n;
  __device__ float operator()(float p, float t) const {
    const float s = __fdiv_rn(__fmul_rn(2.0f, *dloss), n);
    return __fmul_rn(s, __fsub_rn(p, t));
  }
};
__global__ void padded_mse_grad_kernel(const float* p, const float* t, const float* count, const float* dloss,
                                       float* dp, int64_t n) {
  pdl::prologue();
  const float c = *count;
  const bool ok = c >= 1.0f && static_cast<double>(c) <= static_cast<double>(n) && c == floorf(c);  // as mse_real_count
  const int64_t real = ok ? static_cast<int64_t>(c) : 0;
  const float s = __fdiv_rn(__fmul_rn(2.0f, *dloss), c);  // MseGradF's scale with n = c
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dp[i] = !ok ? NAN : (i < real ? __fmul_rn(s, __fsub_rn(p[i], t[i])) : 0.0f);
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

// The label of a row as a column; kIgnoredRow when it is ignore_index, -1 when it is
// not an integer class in [0, cols). Labels are i32, i64, or whole numbers in f32.
constexpr int64_t kIgnoredRow = -2;
template <typename L>
__device__ __forceinline__ int64_t label_col(const L* labels, int64_t row, int64_t cols, int64_t ignore) {
  if constexpr (std::is_integral_v<L>) {
    const int64_t l = labels[row];
    if (l == ignore) return kIgnoredRow;
    return l >= 0 && l < cols ? l : -1;
  } else {
    const float l = labels[row];
    if (l == floorf(l) && fabsf(l) < 9.2e18f && static_cast<int64_t>(l) == ignore) return kIgnoredRow;
    // In double: float(cols) rounds down for some cols > 2^24, which would refuse the last class.
    return (l >= 0.0f && static_cast<double>(l) < static_cast<double>(cols) && l == floorf(l)) ? static_cast<int64_t>(l)
                                                                                                : -1;
  }
}

// The rows not ignored, counted over every label by the G threads of a row group (an exact
// integer count in a float below 2^24 rows). Each row's group counts again: the gradient
// has no scratch to keep one count in.
template <int G, typename L>
__device__ __forceinline__ float kept_rows(const L* labels, int64_t rows, int64_t cols, int64_t ignore, int t,
                                           float* smem) {
  float kept = 0.0f;
  for (int64_t r = t; r < rows; r += G) kept += label_col(labels, r, cols, ignore) != kIgnoredRow;
  return group_sum<G>(kept, smem);
}

// A row's gradient scale: NaN for a bad label, 0 for an ignored row, dloss / kept otherwise.
__device__ __forceinline__ float row_scale(int64_t label, float dloss, float kept) {
  if (label == kIgnoredRow) return 0.0f;
  return label < 0 ? NAN : dloss / kept;
}

// cols: the classes, the first cols of a row's ld values; dx is 0 in the columns past them.
template <typename T, typename L>
struct CrossEntropyGradOp {
  const T* logits;
  const L* labels;
  const float* dloss;
  T* dx;
  int64_t rows, cols, ld, ignore;
  template <int G, int VPT>
  __device__ void run(int64_t row, int t, float* smem) const {
    const T* xr = logits + row * ld;
    T* dxr = dx + row * ld;
    const int64_t label = label_col(labels, row, cols, ignore);
    if (label == kIgnoredRow) {  // the whole group alike: exact zeros, as on the CPU, whatever the logits hold
      for (int64_t j = t; j < ld; j += G) dxr[j] = narrow<T>(0.0f);
      return;
    }
    const float kept = kept_rows<G>(labels, rows, cols, ignore, t, smem);
    RowCache<VPT> c;
    float m, s;
    exp_sum<G, VPT>(xr, cols, t, smem, c, m, s);
    const float inv = 1.0f / s;
    const float scale = row_scale(label, dloss[0], kept);
    auto grad = [&](int64_t j, float e) { return (e * inv - (j == label ? 1.0f : 0.0f)) * scale; };
    if constexpr (VPT == 0) {  // a thread's chunk loaded before its stores: dx may be the logits (in place)
      row_chunks_map<G>(xr, dxr, cols, t, [&](int64_t j, float raw) { return grad(j, expf(raw - m)); });
    } else {
      TG_ROW_LOOP(k, j) { dxr[j] = narrow<T>(grad(j, cached_exp(c, k))); }
    }
    for (int64_t j = cols + t; j < ld; j += G) dxr[j] = narrow<T>(0.0f);
  }
  template <int NV>
  __device__ void run4(int64_t row, int t, int nq) const {
    const int64_t label = label_col(labels, row, cols, ignore);
    float v[NV][4];
    if (label == kIgnoredRow) {
      TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] = 0.0f;
      store_row4<NV>(dx + row * cols, t, nq, v);
      return;
    }
    const float kept = kept_rows<32>(labels, rows, cols, ignore, t, nullptr);
    load_row4<NV>(logits + row * cols, t, nq, v);
    float m, s;
    exp_sum4<NV>(v, t, nq, m, s);
    const float inv = 1.0f / s;
    const float scale = row_scale(label, dloss[0], kept);
    TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) v[k][i] = (v[k][i] * inv - (chunk_col(t, k) + i == label ? 1.0f : 0.0f)) * scale;
    store_row4<NV>(dx + row * cols, t, nq, v);
  }
};

// cross_entropy: the loss of row r is m + log(s) - x[label], computed by one warp (a
// group of 32: exp_sum's order) in double; the rows are then summed in a fixed grouping:
// lane w of one warp adds rows w, w + 32, ... in row order, and a warp sum adds the 32
// totals. Ignored rows add nothing, to the sum or to the count it is divided by.
// Two ways give those bits: cross_entropy_rows_kernel spreads the rows over the whole
// device (8 warps a block) and writes each row's loss to scratch, then
// cross_entropy_sum_kernel sums them; without scratch enough for a double a row,
// cross_entropy_kernel does both in one block of 32 warps, warp w taking rows w, w + 32,
// ... (one SM: fine for a small loss, far too slow for a language model's logits).
template <int VPT, typename T>
__device__ __forceinline__ double row_loss(const T* logits, int64_t label, int64_t r, int64_t cols, int64_t ld, int t) {
  const T* xr = logits + r * ld;
  RowCache<VPT> c;
  float m, s;
  exp_sum<32, VPT>(xr, cols, t, nullptr, c, m, s);
  return label < 0 ? static_cast<double>(NAN)
                   : static_cast<double>(m) + log(static_cast<double>(s)) - static_cast<float>(xr[label]);
}

template <int VPT, typename T, typename L>
__global__ void __launch_bounds__(1024) cross_entropy_kernel(const T* logits, const L* labels, float* loss,
                                                             int64_t rows, int64_t cols, int64_t ld,
                                                             int64_t ignore) {
  pdl::prologue();
  __shared__ double totals[32];
  __shared__ double counts[32];
  const int t = threadIdx.x & 31, w = threadIdx.x >> 5;
  double acc = 0.0, kept = 0.0;
  for (int64_t r = w; r < rows; r += 32) {
    const int64_t label = label_col(labels, r, cols, ignore);
    if (label == kIgnoredRow) continue;  // the same branch for the whole warp
    acc += row_loss<VPT>(logits, label, r, cols, ld, t);
    kept += 1.0;
  }
  if (t == 0) {
    totals[w] = acc;
    counts[w] = kept;
  }
  __syncthreads();
  if (w == 0) {
    const double v = detail::warp_sum(totals[t]);
    const double k = detail::warp_sum(counts[t]);
    if (t == 0) loss[0] = static_cast<float>(v / k);  // every row ignored: 0 / 0, NaN, as torch gives
  }
}

constexpr int kCeRowsPerBlock = 8;
template <int VPT, typename T, typename L>
__global__ void __launch_bounds__(32 * kCeRowsPerBlock) cross_entropy_rows_kernel(const T* logits, const L* labels,
                                                                                  double* row_losses, int64_t rows,
                                                                                  int64_t cols, int64_t ld,
                                                                                  int64_t ignore) {
  pdl::prologue();
  const int t = threadIdx.x & 31;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kCeRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kCeRowsPerBlock + (threadIdx.x >> 5); r < rows; r += step) {
    const int64_t label = label_col(labels, r, cols, ignore);
    if (label == kIgnoredRow) continue;  // the sum skips the row by its label
    const double lr = row_loss<VPT>(logits, label, r, cols, ld, t);
    if (t == 0) row_losses[r] = lr;
  }
}

// One warp. The loads of a lane's rows do not depend on its running sum: unrolled, many
// are in flight while the adds go in order.
template <typename L>
__global__ void __launch_bounds__(32) cross_entropy_sum_kernel(const double* row_losses, const L* labels, float* loss,
                                                               int64_t rows, int64_t cols, int64_t ignore) {
  pdl::prologue();
  const int w = threadIdx.x;
  double acc = 0.0, kept = 0.0;
#pragma unroll 8
  for (int64_t r = w; r < rows; r += 32) {
    if (label_col(labels, r, cols, ignore) == kIgnoredRow) continue;
    acc += row_losses[r];
    kept += 1.0;
  }
  const double v = detail::warp_sum(acc);
  const double k = detail::warp_sum(kept);
  if (w == 0) loss[0] = static_cast<float>(v / k);
}

template <int VPT, typename T, typename L>
void launch_cross_entropy(const T* logits, const L* labels, float* loss, int64_t rows, int64_t cols, int64_t ld,
                          int64_t ignore, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  // Below this many logits one SM reads them about as fast as the second launch costs.
  constexpr int64_t kSpreadFrom = int64_t{1} << 18;
  if (!scratch || scratch_bytes / sizeof(double) < static_cast<size_t>(rows) || rows * cols < kSpreadFrom) {
    detail::launch(TG_LAUNCH_SITE, cross_entropy_kernel<VPT, T, L>, 1, 1024, s, logits, labels, loss, rows, cols, ld,
                   ignore);
    return;
  }
  double* row_losses = static_cast<double*>(scratch);
  const int64_t blocks = (rows + kCeRowsPerBlock - 1) / kCeRowsPerBlock;
  const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
  detail::launch(TG_LAUNCH_SITE, cross_entropy_rows_kernel<VPT, T, L>, static_cast<int>(blocks < cap ? blocks : cap),
                 32 * kCeRowsPerBlock, s, logits, labels, row_losses, rows, cols, ld, ignore);
  detail::launch(TG_LAUNCH_SITE, cross_entropy_sum_kernel<L>, 1, 32, s, row_losses, labels, loss, rows, cols, ignore);
}

// fn(L{}) with L the element type of the labels' dtype.
template <typename Fn>
void with_label_type(DType dt, Fn&& fn) {
  if (dt == DType::I32) return fn(int32_t{});
  if (dt == DType::I64) return fn(int64_t{});
  return fn(float{});
}

}  // namespace

void mse_loss_grad(const float* p, const float* t, const float* dloss, float* dp, int64_t n, cudaStream_t s) {
  launch_ew<true>(MseGradF{dloss, static_cast<float>(n)}, p, t, dp, n, s);
}
void padded_mse_loss_grad(const float* p, const float* t, const float* count, const float* dloss, float* dp, int64_t n,
                          cudaStream_t s) {
  if (n <= 0) return;
  const int block = detail::block_for(n);
  detail::launch(TG_LAUNCH_SITE, padded_mse_grad_kernel, grid_for(n, block), block, s, p, t, count, dloss, dp, n);
}
void mse_loss(const float* p, const float* t, float* loss, int64_t n, void* scratch, size_t scratch_bytes,
              cudaStream_t s) {
  launch_mse(p, t, nullptr, loss, n, scratch, scratch_bytes, s);
}
void padded_mse_loss(const float* p, const float* t, const float* count, float* loss, int64_t n, void* scratch,
                     size_t scratch_bytes, cudaStream_t s) {
  launch_mse(p, t, count, loss, n, scratch, scratch_bytes, s);
}

void cross_entropy_grad(const void* logits, const TensorView& labels, const float* dloss, void* dx, int64_t rows,
                        int64_t cols, int64_t classes, int64_t ignore_index, cudaStream_t s, DType dt) {
  with_element_type(dt, [&](auto e) {
    using T = decltype(e);
    with_label_type(labels.dtype, [&](auto le) {
      using L = decltype(le);
      const T* x = elements<const T>(logits);
      T* d = elements<T>(dx);
      // The 4-wide path reads whole rows: padded rows take the scalar one.
      launch_rows(
          CrossEntropyGradOp<T, L>{x, elements<const L>(labels.data), dloss, d, rows, classes, cols, ignore_index},
          rows, classes, classes == cols && aligned4(x) && aligned4(d), s);
    });
  });
}

void cross_entropy(const void* x, const TensorView& labels, float* loss, int64_t rows, int64_t cols,
                   int64_t classes, int64_t ignore_index, void* scratch, size_t scratch_bytes, cudaStream_t s,
                   DType dt) {
  if (rows <= 0 || cols <= 0) return;
  with_element_type(dt, [&](auto e) {
    using T = decltype(e);
    const T* logits = elements<const T>(x);
    with_label_type(labels.dtype, [&](auto le) {
      using L = decltype(le);
      const L* l = elements<const L>(labels.data);
      if (classes <= 32)
        launch_cross_entropy<1>(logits, l, loss, rows, classes, cols, ignore_index, scratch, scratch_bytes, s);
      else if (classes <= 128)
        launch_cross_entropy<4>(logits, l, loss, rows, classes, cols, ignore_index, scratch, scratch_bytes, s);
      else if (classes <= 512)
        launch_cross_entropy<16>(logits, l, loss, rows, classes, cols, ignore_index, scratch, scratch_bytes, s);
      else
        launch_cross_entropy<0>(logits, l, loss, rows, classes, cols, ignore_index, scratch, scratch_bytes, s);
    });
  });
}

}  // namespace tg::kernels::cuda
