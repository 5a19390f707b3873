// Gradient clipping by global norm (kernels/cpu/clip.cpp): global_norm, a fixed-order sum
// of squares over every input, and clip_by_norm, on the elementwise frame.
//
// global_norm cuts each input into chunks of kNormChunk elements (a tensor's chunks start
// at its first element) and numbers the chunks of all inputs in input order. A block sums
// one chunk: thread j adds the squares of its quads j, j + 256, ... in that order in
// double, then the block tree (common.cuh); the chunk's sum goes to the scratch at its
// number. One block then adds the chunk sums as mse_loss's final stage does: thread t
// adds chunks t, t + 1024, ... in order, then the block tree, and writes the square root.
// The grouping depends only on the inputs' sizes, never on the grid or the pointers'
// alignment, so every run gives the same bits.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/chunk_table.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/optimizer_math.h"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;

constexpr int kNormThreads = 256;
constexpr int kNormQuads = 16;  // per thread and chunk
constexpr int64_t kNormChunk = int64_t{kNormThreads} * 4 * kNormQuads;
constexpr int kNormTensors = 128;
constexpr int kFinalThreads = 1024;

struct NormArgs {
  const float* x[kNormTensors];
  int64_t n[kNormTensors];
  int64_t first_chunk[kNormTensors + 1];  // within this launch
  int count;
  int64_t chunk_base;  // the number of this launch's first chunk among all inputs'
};

__global__ void __launch_bounds__(kNormThreads) norm_chunks_kernel(const __grid_constant__ NormArgs a, double* partial) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t chunks = a.first_chunk[a.count];
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int lo = detail::tensor_of_chunk(a.first_chunk, a.count, c);
    const int64_t begin = (c - a.first_chunk[lo]) * kNormChunk;
    const int64_t len = a.n[lo] - begin < kNormChunk ? a.n[lo] - begin : kNormChunk;
    const float* x = a.x[lo] + begin;
    const bool vec = aligned16(x);
    double share = 0.0;
#pragma unroll 4
    for (int q = 0; q < kNormQuads; ++q) {
      const int64_t i = (static_cast<int64_t>(q) * kNormThreads + threadIdx.x) * 4;
      float e[4];
      if (vec && i + 3 < len) {
        const float4 f = *reinterpret_cast<const float4*>(x + i);
        e[0] = f.x;
        e[1] = f.y;
        e[2] = f.z;
        e[3] = f.w;
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) e[k] = i + k < len ? x[i + k] : 0.0f;
      }
      const double d0 = e[0], d1 = e[1], d2 = e[2], d3 = e[3];
      const double sq = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(d0, d0), __dmul_rn(d1, d1)), __dmul_rn(d2, d2)),
                                  __dmul_rn(d3, d3));
      share = __dadd_rn(share, sq);
    }
    const double sum = detail::block_reduce<double, false>(share, smem);
    if (threadIdx.x == 0) partial[a.chunk_base + c] = sum;
  }
}

__global__ void __launch_bounds__(kFinalThreads) norm_final_kernel(const double* partial, int64_t chunks, float* out) {
  pdl::prologue();
  __shared__ double smem[32];
  double share = 0.0;
  for (int64_t c = threadIdx.x; c < chunks; c += kFinalThreads) share = __dadd_rn(share, partial[c]);
  const double total = detail::block_reduce<double, false>(share, smem);
  if (threadIdx.x == 0) out[0] = static_cast<float>(sqrt(total));
}

struct ClipF {
  const float* norm;
  float max_norm;
  __device__ float operator()(float g, float) const { return __fmul_rn(g, clip_coefficient(max_norm, *norm)); }
};

}  // namespace

void global_norm(const OpCall& c, float* scratch, size_t scratch_bytes, cudaStream_t s) {
  int64_t total_chunks = 0;
  for (int i = 0; i < c.num_inputs; ++i) total_chunks += (c.input(i).shape.numel() + kNormChunk - 1) / kNormChunk;
  if (!scratch || static_cast<int64_t>(scratch_bytes / sizeof(double)) < total_chunks)
    throw std::invalid_argument(fmt::format(
        "run_cuda global_norm: the inputs need {} bytes of the backend's scratch (8 per {} elements) and the call has "
        "{}; run it through the backend, whose scratch holds the partial sums", total_chunks * 8, kNormChunk,
        scratch ? scratch_bytes : 0));
  double* partial = reinterpret_cast<double*>(scratch);
  NormArgs a{};
  auto flush = [&] {
    const int64_t chunks = a.first_chunk[a.count];
    if (chunks > 0) {
      const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 4;
      detail::launch(TG_LAUNCH_SITE, norm_chunks_kernel, static_cast<int>(chunks < cap ? chunks : cap), kNormThreads,
                     s, a, partial);
    }
    a.chunk_base += chunks;
    a.count = 0;
    a.first_chunk[0] = 0;
  };
  for (int i = 0; i < c.num_inputs; ++i) {
    const int t = a.count++;
    a.x[t] = c.input(i).data;
    a.n[t] = c.input(i).shape.numel();
    a.first_chunk[t + 1] = a.first_chunk[t] + (a.n[t] + kNormChunk - 1) / kNormChunk;
    if (a.count == kNormTensors) flush();
  }
  flush();
  detail::launch(TG_LAUNCH_SITE, norm_final_kernel, 1, kFinalThreads, s, static_cast<const double*>(partial),
                 total_chunks, c.out.data);
}

void clip_by_norm(const float* g, const float* norm, float max_norm, float* y, int64_t n, cudaStream_t s) {
  detail::launch_ew<false>(ClipF{norm, max_norm}, g, nullptr, y, n, s);
}

}  // namespace tg::kernels::cuda
