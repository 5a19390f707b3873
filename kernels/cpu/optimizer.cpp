// In-place parameter updates, plain float arithmetic as written in cpu_kernels.h.
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_sgd(float* p, const float* g, float lr, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] - lr * g[i];
}

void cpu_sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float vi = momentum * v[i] + g[i];
    v[i] = vi;
    p[i] = p[i] - lr * vi;
  }
}

}  // namespace tg::kernels
