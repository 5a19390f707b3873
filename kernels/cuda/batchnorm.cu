// Batch normalization per channel of [N, C, ...] and its gradients: one block per channel,
// which reduces the channel's statistics in double in a fixed order (block_reduce) and then
// writes the channel. Deterministic, no atomics and no scratch.
#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kBnBlock = 256;

// The sum over channel ch of d = (x - shift) * scale: of d itself, of d * d (square), or of
// d * w (w given; a flag rather than a pointer test, since dy and x may be one buffer).
__device__ double channel_sum(const float* x, const float* w, bool square, double shift, double scale,
                              const BatchNormGeometry& g, int64_t ch, double* smem) {
  double s = 0.0;
  for (int64_t e = threadIdx.x; e < g.count(); e += blockDim.x) {
    const int64_t i = g.index(ch, e);
    const double d = (static_cast<double>(x[i]) - shift) * scale;
    s += square ? d * d : w ? d * static_cast<double>(w[i]) : d;
  }
  return detail::block_reduce<double, false>(s, smem);
}

// a: x (forward) or dy (gradients); b: gamma (forward) or x (gradients).
__global__ void __launch_bounds__(kBnBlock) batch_norm_kernel(OpKind op, const float* a, const float* b, const float* c3,
                                                              const float* stats, float* y, BatchNormGeometry g,
                                                              double eps) {
  pdl::prologue();
  __shared__ double smem[32];
  const int64_t ch = blockIdx.x;
  const float* x = op == OpKind::batch_norm || op == OpKind::batch_norm_inference ? a : b;
  const double inv = 1.0 / static_cast<double>(g.count());
  double mean, rstd;
  if (op == OpKind::batch_norm_inference) {
    mean = stats[ch];
    rstd = 1.0 / sqrt(static_cast<double>(stats[g.c + ch]) + eps);
  } else {
    mean = channel_sum(x, nullptr, false, 0.0, 1.0, g, ch, smem) * inv;
    rstd = 1.0 / sqrt(channel_sum(x, nullptr, true, mean, 1.0, g, ch, smem) * inv + eps);
  }
  if (op == OpKind::batch_norm || op == OpKind::batch_norm_inference) {
    const double gamma = b[ch], beta = c3[ch];
    for (int64_t e = threadIdx.x; e < g.count(); e += blockDim.x) {
      const int64_t i = g.index(ch, e);
      y[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd * gamma + beta);
    }
    return;
  }
  const double sum_dy = channel_sum(a, nullptr, false, 0.0, 1.0, g, ch, smem);
  const double sum_dy_xhat = channel_sum(x, a, false, mean, rstd, g, ch, smem);
  if (op == OpKind::batch_norm_grad_gamma) {
    if (threadIdx.x == 0) y[ch] = static_cast<float>(sum_dy_xhat);
    return;
  }
  const double gamma = c3[ch];
  for (int64_t e = threadIdx.x; e < g.count(); e += blockDim.x) {
    const int64_t i = g.index(ch, e);
    const double xhat = (static_cast<double>(x[i]) - mean) * rstd;
    y[i] = static_cast<float>(gamma * rstd * (static_cast<double>(a[i]) - sum_dy * inv - xhat * sum_dy_xhat * inv));
  }
}

}  // namespace

void batch_norm_op(const OpCall& c, const BatchNormGeometry& g, cudaStream_t s) {
  const float* c3 = c.num_inputs > 2 ? c.in[2].data : nullptr;
  const float* stats = c.num_inputs > 3 ? c.in[3].data : nullptr;
  detail::launch(TG_LAUNCH_SITE, batch_norm_kernel, static_cast<unsigned>(g.c), kBnBlock, s, c.op,
                 static_cast<const float*>(c.in[0].data), static_cast<const float*>(c.in[1].data), c3, stats,
                 c.out.data, g, static_cast<double>(c.attrs->eps));
}

}  // namespace tg::kernels::cuda
