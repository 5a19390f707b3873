// Batch normalization per channel of [N, C, ...] and its gradients: one block per channel,
// which reduces the channel's statistics in double in a fixed order (block_reduce) and then
// writes the channel. Deterministic, no atomics and no scratch. Every float dtype: T is the
// element type of every tensor of the call (storage.h); the arithmetic is f32's (in
// double), each output rounds to float as f32 stores it, then once to T.
//
// A block has few blocks beside it (one per channel: 16 on a CIFAR ResNet's first stage), so
// each block must keep many loads in flight on its own: 1024 threads, each unrolling its loop
// so that kUnroll loads are issued before the first is used, and the element's position
// found with a 32-bit division where the tensor's elements fit in 32 bits (an int64 division
// costs dozens of instructions per element).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kBnBlock = 1024;
constexpr int kUnroll = 8;

// The flat index of element e of channel ch (BatchNormGeometry::index), with I the type of
// the division: uint32_t when every flat index fits in it, else int64_t.
template <typename I>
__device__ __forceinline__ int64_t bn_index(const BatchNormGeometry& g, int64_t ch, int64_t e) {
  if (g.channels_last) return e * g.c + ch;
  const I inner = static_cast<I>(g.inner);
  const I n = static_cast<I>(e) / inner;
  const I r = static_cast<I>(e) - n * inner;
  return (static_cast<int64_t>(n) * g.c + ch) * g.inner + static_cast<int64_t>(r);
}

// The sum over channel ch of d = (x - shift) * scale: of d itself, of d * d (square), or of
// d * w (w given; a flag rather than a pointer test, since dy and x may be one buffer).
template <typename T, typename I>
__device__ double channel_sum(const T* x, const T* w, bool square, double shift, double scale,
                              const BatchNormGeometry& g, int64_t ch, double* smem) {
  double s = 0.0;
  const int64_t count = g.count();
#pragma unroll kUnroll
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const int64_t i = bn_index<I>(g, ch, e);
    const double d = (static_cast<double>(x[i]) - shift) * scale;
    s += square ? d * d : w ? d * static_cast<double>(w[i]) : d;
  }
  return detail::block_reduce<double, false>(s, smem);
}

// a: x (forward) or dy (gradients); b: gamma (forward) or x (gradients).
template <typename T, typename I>
__global__ void __launch_bounds__(kBnBlock) batch_norm_kernel(OpKind op, const T* a, const T* b, const T* c3,
                                                              const T* stats, T* y, BatchNormGeometry g, double eps) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t ch = blockIdx.x;
  const T* x = op == OpKind::batch_norm || op == OpKind::batch_norm_inference ? a : b;
  const double inv = 1.0 / static_cast<double>(g.count());
  double mean, rstd;
  if (op == OpKind::batch_norm_inference) {
    mean = static_cast<float>(stats[ch]);
    rstd = 1.0 / sqrt(static_cast<double>(static_cast<float>(stats[g.c + ch])) + eps);
  } else {
    mean = channel_sum<T, I>(x, nullptr, false, 0.0, 1.0, g, ch, smem) * inv;
    rstd = 1.0 / sqrt(channel_sum<T, I>(x, nullptr, true, mean, 1.0, g, ch, smem) * inv + eps);
  }
  if (op == OpKind::batch_norm || op == OpKind::batch_norm_inference) {
    const double gamma = static_cast<float>(b[ch]), beta = static_cast<float>(c3[ch]);
#pragma unroll kUnroll
    for (int64_t e = threadIdx.x; e < g.count(); e += blockDim.x) {
      const int64_t i = bn_index<I>(g, ch, e);
      y[i] = narrow<T>(static_cast<float>((static_cast<double>(static_cast<float>(x[i])) - mean) * rstd * gamma + beta));
    }
    return;
  }
  const double sum_dy = channel_sum<T, I>(a, nullptr, false, 0.0, 1.0, g, ch, smem);
  const double sum_dy_xhat = channel_sum<T, I>(x, a, false, mean, rstd, g, ch, smem);
  if (op == OpKind::batch_norm_grad_gamma) {
    if (threadIdx.x == 0) y[ch] = narrow<T>(static_cast<float>(sum_dy_xhat));
    return;
  }
  const double gamma = static_cast<float>(c3[ch]);
#pragma unroll kUnroll
  for (int64_t e = threadIdx.x; e < g.count(); e += blockDim.x) {
    const int64_t i = bn_index<I>(g, ch, e);
    const double xhat = (static_cast<double>(static_cast<float>(x[i])) - mean) * rstd;
    y[i] = narrow<T>(static_cast<float>(gamma * rstd *
                                        (static_cast<double>(static_cast<float>(a[i])) - sum_dy * inv -
                                         xhat * sum_dy_xhat * inv)));
  }
}

// batch_norm_stats_update, f32 only (the running statistics are master state): stats[2, C] in
// place from the channel's mean and unbiased variance, summed as batch_norm_kernel sums them.
template <typename I>
__global__ void __launch_bounds__(kBnBlock) batch_norm_stats_update_kernel(float* stats, const float* x,
                                                                           BatchNormGeometry g, double momentum) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t ch = blockIdx.x;
  const double mean = channel_sum<float, I>(x, nullptr, false, 0.0, 1.0, g, ch, smem) / static_cast<double>(g.count());
  const double var =
      channel_sum<float, I>(x, nullptr, true, mean, 1.0, g, ch, smem) / static_cast<double>(g.count() - 1);
  if (threadIdx.x != 0) return;
  stats[ch] = static_cast<float>((1.0 - momentum) * stats[ch] + momentum * mean);
  stats[g.c + ch] = static_cast<float>((1.0 - momentum) * stats[g.c + ch] + momentum * var);
}

// Whether every flat index of the call's tensors fits the 32-bit division.
bool small_index(const BatchNormGeometry& g) { return g.n * g.c * g.inner <= int64_t{UINT32_MAX}; }
// batch_norm_fold: block ch scales output channel ch of the conv weight w [K, inner] and
// writes its folded bias; the values are graph/batch_norm.h's, as the CPU reference's.
template <typename T>
__global__ void __launch_bounds__(kBnBlock) batch_norm_fold_kernel(const T* w, const T* gamma, const T* beta,
                                                                   const T* stats, T* w_out, T* b_out,
                                                                   BatchNormGeometry g, float eps) {
  pdl::prologue();
  const int64_t ch = blockIdx.x;
  const double sc = bn_fold_scale(static_cast<float>(gamma[ch]), static_cast<float>(stats[g.c + ch]), eps);
  for (int64_t e = threadIdx.x; e < g.inner; e += blockDim.x)
    w_out[ch * g.inner + e] = narrow<T>(bn_fold_weight(static_cast<float>(w[ch * g.inner + e]), sc));
  if (threadIdx.x == 0) b_out[ch] = narrow<T>(bn_fold_bias(static_cast<float>(beta[ch]), static_cast<float>(stats[ch]), sc));
}

}  // namespace

void batch_norm_op(const OpCall& c, const BatchNormGeometry& g, cudaStream_t s) {
  const bool small = small_index(g);
  if (c.op == OpKind::batch_norm_stats_update) {
    auto kernel = small ? batch_norm_stats_update_kernel<uint32_t> : batch_norm_stats_update_kernel<int64_t>;
    detail::launch(TG_LAUNCH_SITE, kernel, static_cast<unsigned>(g.c), kBnBlock, s, c.in[0].data,
                   static_cast<const float*>(c.in[1].data), g, static_cast<double>(c.attrs->momentum));
    return;
  }
  if (c.op == OpKind::batch_norm_fold) {
    with_element_type(c.out.dtype, [&](auto e) {
      using T = decltype(e);
      detail::launch(TG_LAUNCH_SITE, batch_norm_fold_kernel<T>, static_cast<unsigned>(g.c), kBnBlock, s,
                     elements<const T>(c.in[0].data), elements<const T>(c.in[1].data), elements<const T>(c.in[2].data),
                     elements<const T>(c.in[3].data), elements<T>(c.out.data), elements<T>(c.out2.data), g,
                     c.attrs->eps);
    });
    return;
  }
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    const T* c3 = c.num_inputs > 2 ? elements<const T>(c.in[2].data) : nullptr;
    const T* stats = c.num_inputs > 3 ? elements<const T>(c.in[3].data) : nullptr;
    auto kernel = small ? batch_norm_kernel<T, uint32_t> : batch_norm_kernel<T, int64_t>;
    detail::launch(TG_LAUNCH_SITE, kernel, static_cast<unsigned>(g.c), kBnBlock, s, c.op,
                   elements<const T>(c.in[0].data), elements<const T>(c.in[1].data), c3, stats, elements<T>(c.out.data),
                   g, static_cast<double>(c.attrs->eps));
  });
}

}  // namespace tg::kernels::cuda
