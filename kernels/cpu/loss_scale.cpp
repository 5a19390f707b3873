// Dynamic loss scaling's kernels (graph/loss_scale.h), plain float arithmetic: the CUDA
// kernels (kernels/cuda/loss_scale.cu) round each step alike.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_unscale(const float* g, const float* scale, float* out, int64_t n) {
  // One reciprocal, then a product per element, as GradScaler's unscale does: for the
  // power-of-two scales the policy keeps, both are exact.
  const float inv = 1.0f / scale[0];
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * inv;
}

void cpu_found_inf(const float* x, const float* found, float* out, int64_t n) {
  bool any = found[0] != 0.0f;
  for (int64_t i = 0; i < n && !any; ++i) any = !std::isfinite(x[i]);
  out[0] = any ? 1.0f : 0.0f;
}

void cpu_update_scale(float* scaler, const float* found, const Attrs& at) {
  float& scale = scaler[0];
  float& tracker = scaler[1];
  float& skipped = scaler[2];
  if (found[0] != 0.0f) {
    scale = scale * at.backoff_factor;
    tracker = 0.0f;
    skipped = skipped + 1.0f;
    return;
  }
  tracker = tracker + 1.0f;
  if (tracker < static_cast<float>(at.growth_interval)) return;
  const float grown = scale * at.growth_factor;
  if (std::isfinite(grown)) scale = grown;
  tracker = 0.0f;
}

}  // namespace tg::kernels
