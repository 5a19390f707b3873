// Dynamic loss scaling's kernels (kernels/cpu/loss_scale.cpp is the reference): each reads
// the scale and the found-inf flag on the device, so a step with loss scaling has no host
// read and still captures into one CUDA graph. __fdiv_rn/__fmul_rn round as the CPU's
// plain float arithmetic does, so the bits match.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::grid_for;
using detail::kBlock;

__global__ void unscale_kernel(const float* g, const float* scale, float* out, int64_t n) {
  pdl::prologue();
  const float inv = __fdiv_rn(1.0f, scale[0]);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __fmul_rn(g[i], inv);
}

__global__ void found_init_kernel(const float* found, float* out) {
  pdl::prologue();
  out[0] = found[0] != 0.0f ? 1.0f : 0.0f;
}

// Every thread that sees an inf or a nan writes the same 1, so the result does not depend
// on which one wins; the value written before (found_init_kernel) is complete by wait().
__global__ void found_check_kernel(const float* x, float* out, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  bool any = false;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n && !any; i += stride)
    any = !isfinite(x[i]);
  if (any) out[0] = 1.0f;
}

__global__ void update_scale_kernel(float* scaler, const float* found, float growth, float backoff, float interval) {
  pdl::prologue();
  float& scale = scaler[0];
  float& tracker = scaler[1];
  float& skipped = scaler[2];
  if (found[0] != 0.0f) {
    scale = __fmul_rn(scale, backoff);
    tracker = 0.0f;
    skipped = __fadd_rn(skipped, 1.0f);
    return;
  }
  tracker = __fadd_rn(tracker, 1.0f);
  if (tracker < interval) return;
  const float grown = __fmul_rn(scale, growth);
  if (isfinite(grown)) scale = grown;
  tracker = 0.0f;
}

}  // namespace

void unscale(const float* g, const float* scale, float* out, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, unscale_kernel, grid_for(n), kBlock, s, g, scale, out, n);
}

void found_inf(const float* x, const float* found, float* out, int64_t n, cudaStream_t s) {
  detail::launch(TG_LAUNCH_SITE, found_init_kernel, 1, 1, s, found, out);
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, found_check_kernel, grid_for(n), kBlock, s, x, out, n);
}

void update_scale(float* scaler, const float* found, const Attrs& at, cudaStream_t s) {
  detail::launch(TG_LAUNCH_SITE, update_scale_kernel, 1, 1, s, scaler, found, at.growth_factor, at.backoff_factor,
                 static_cast<float>(at.growth_interval));
}

}  // namespace tg::kernels::cuda
