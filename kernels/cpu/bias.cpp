// bias_add: the bias is read along the last axis; alias-safe for y == x.
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j] + bias[j];
  }
}

}  // namespace tg::kernels
