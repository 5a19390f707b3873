// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_): global_norm and
// clip_by_norm.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/optimizer_math.h"

namespace tg::kernels {

void cpu_global_norm(const OpCall& c, float* out) {
  double total = 0.0;
  for (int i = 0; i < c.num_inputs; ++i) {
    const TensorView& t = c.input(i);
    const int64_t n = t.shape.numel();
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) sum += static_cast<double>(t.data[k]) * t.data[k];
    total += sum;
  }
  out[0] = static_cast<float>(std::sqrt(total));
}

void cpu_clip_by_norm(const float* g, const float* norm, float max_norm, float* y, int64_t n) {
  const float coef = clip_coefficient(max_norm, norm[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] * coef;
}

}  // namespace tg::kernels
