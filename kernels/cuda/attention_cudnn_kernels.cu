// The kernels of attention_cudnn_kernels.h.
#include "kernels/cuda/attention_cudnn_kernels.h"

#include "graph/attention.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void seq_lens_kernel(const void* lengths, DType dt, int64_t batch, int64_t seq, int32_t* q, int32_t* kv) {
  pdl::prologue();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  int64_t n = seq;
  if (lengths)
    n = dt == DType::I64   ? static_cast<const int64_t*>(lengths)[b]
        : dt == DType::I32 ? static_cast<const int32_t*>(lengths)[b]
                           : static_cast<int64_t>(static_cast<const float*>(lengths)[b]);  // as attention.cu reads them
  q[b] = static_cast<int32_t>(seq);
  kv[b] = static_cast<int32_t>(n < 0 ? 0 : n > seq ? seq : n);
}

template <typename T>
__global__ void stats_to_pairs_kernel(void* stats, int64_t rows, int64_t rows_per_batch, const int32_t* kv) {
  pdl::prologue();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float lse = kv && kv[r / rows_per_batch] == 0 ? 0.0f : static_cast<const float*>(stats)[r];
  float hi, lo;
  split_lse(lse, dtype_of<T>(), hi, lo);
  T* pair = static_cast<T*>(stats) + 2 * r;  // the same 4 bytes the f32 was read from
  pair[0] = narrow<T>(hi);
  pair[1] = narrow<T>(lo);
}

template <typename T>
__global__ void pairs_to_stats_kernel(const T* pairs, float* stats, int64_t rows) {
  pdl::prologue();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) stats[r] = static_cast<float>(pairs[2 * r]) + static_cast<float>(pairs[2 * r + 1]);
}

template <typename T>
__global__ void zero_masked_kernel(T* out, const int32_t* kv, int tail_from, int64_t batch, int64_t seq, int64_t row,
                                   int64_t n) {
  pdl::prologue();
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const int64_t j = e / row % seq, b = e / (row * seq) % batch, part = e / (row * seq * batch);
  const int32_t len = kv[b];
  if (len == 0 || (part >= tail_from && j >= len)) out[e] = narrow<T>(0.0f);
}

template <typename Fn>
void with_half_type(DType dt, Fn&& fn) {
  if (dt == DType::BF16) return fn(Bf16{});
  return fn(F16{});
}

}  // namespace

void attention_dnn_seq_lens(const void* lengths, DType lengths_dtype, int64_t batch, int64_t seq, int32_t* q,
                            int32_t* kv, cudaStream_t s) {
  launch(TG_LAUNCH_SITE, seq_lens_kernel, dim3(blocks_for(batch)), dim3(kThreads), s, lengths, lengths_dtype, batch,
         seq, q, kv);
}

void attention_dnn_stats_to_pairs(void* stats, DType dt, int64_t rows, int64_t rows_per_batch, const int32_t* kv,
                                  cudaStream_t s) {
  with_half_type(dt, [&](auto e) {
    using T = decltype(e);
    launch(TG_LAUNCH_SITE, stats_to_pairs_kernel<T>, dim3(blocks_for(rows)), dim3(kThreads), s, stats, rows,
           rows_per_batch, kv);
  });
}

void attention_dnn_pairs_to_stats(const void* pairs, DType dt, float* stats, int64_t rows, cudaStream_t s) {
  with_half_type(dt, [&](auto e) {
    using T = decltype(e);
    launch(TG_LAUNCH_SITE, pairs_to_stats_kernel<T>, dim3(blocks_for(rows)), dim3(kThreads), s,
           static_cast<const T*>(pairs), stats, rows);
  });
}

void attention_dnn_zero_masked(void* out, DType dt, const int32_t* kv, int parts, int tail_from, int64_t batch,
                               int64_t seq, int64_t row, cudaStream_t s) {
  const int64_t n = parts * batch * seq * row;
  with_half_type(dt, [&](auto e) {
    using T = decltype(e);
    launch(TG_LAUNCH_SITE, zero_masked_kernel<T>, dim3(blocks_for(n)), dim3(kThreads), s, static_cast<T*>(out), kv,
           tail_from, batch, seq, row, n);
  });
}

}  // namespace tg::kernels::cuda
