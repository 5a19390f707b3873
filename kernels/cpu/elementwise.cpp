// Plain float elementwise ops. Each loop reads element i before it writes
// element i, so out may be exactly one of the inputs (in-place execution).
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void cpu_sub(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}

void cpu_mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void cpu_scale(const float* x, float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

void cpu_fill(float* y, float value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

void cpu_copy(const float* x, float* y, int64_t n) {
  if (x != y && n > 0) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace tg::kernels
