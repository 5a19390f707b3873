#pragma once
// The arithmetic of adamw and clip_by_norm, shared by the CPU reference (kernels/cpu/adamw.cpp,
// clip.cpp) and the CUDA kernels (kernels/cuda/adamw.cu, clip.cu), so that both round alike.
// AdamW:
//   t = step + 1 (step: the updates made so far, held in the step count [1])
//   p = p * (1 - lr * weight_decay)                     decoupled weight decay
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + ((1 - beta2) * g) * g
//   p = p - (lr / (1 - beta1^t)) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))
// which is torch.optim.AdamW's update (its single-tensor form) with its bias corrections.
// The per-step scalars are computed in double, once per tensor, then rounded to float;
// the per-element steps are float operations, each rounded (the CUDA kernels use
// __fmul_rn & co. so that nothing is contracted into an FMA).
#include <math.h>

#include "graph/float_formats.h"  // TG_HOST_DEVICE

namespace tg::kernels {

struct AdamWScalars {
  float decay;      // 1 - lr * weight_decay
  float step_size;  // lr / (1 - beta1^t)
  float bc2_sqrt;   // sqrt(1 - beta2^t)
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
};

TG_HOST_DEVICE inline AdamWScalars adamw_scalars(float lr, float beta1, float beta2, float eps, float weight_decay,
                                                 float step) {
  const double t = static_cast<double>(step) + 1.0;
  AdamWScalars s;
  s.decay = static_cast<float>(1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay));
  s.step_size = static_cast<float>(static_cast<double>(lr) / (1.0 - ::pow(static_cast<double>(beta1), t)));
  s.bc2_sqrt = static_cast<float>(::sqrt(1.0 - ::pow(static_cast<double>(beta2), t)));
  s.beta1 = beta1;
  s.one_minus_beta1 = static_cast<float>(1.0 - static_cast<double>(beta1));
  s.beta2 = beta2;
  s.one_minus_beta2 = static_cast<float>(1.0 - static_cast<double>(beta2));
  s.eps = eps;
  return s;
}

// clip_by_norm's factor, as torch.nn.utils.clip_grad_norm_ computes it in f32:
// max_norm / (norm + 1e-6), at most 1. A NaN norm gives NaN, as torch's clamp keeps it.
TG_HOST_DEVICE inline float clip_coefficient(float max_norm, float norm) {
  const float coef = max_norm / (norm + 1e-6f);
  return coef > 1.0f ? 1.0f : coef;
}

}  // namespace tg::kernels
