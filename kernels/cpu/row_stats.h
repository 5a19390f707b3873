#pragma once
// Row statistics shared by the softmax and cross-entropy kernels (internal to kernels/cpu).
#include <cmath>
#include <cstdint>

namespace tg::kernels::detail {

struct RowExpSum {
  float max;   // the row maximum, subtracted before exp so that exp never overflows
  double sum;  // sum_j exp(x_j - max), in double
};

// The row of alpha * x (each product rounded to float, as the scale op rounds it).
inline RowExpSum row_exp_sum(const float* x, int64_t cols, float alpha = 1.0f) {
  float mx = alpha * x[0];
  for (int64_t j = 1; j < cols; ++j) {
    const float v = alpha * x[j];
    mx = v > mx ? v : mx;
  }
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(alpha * x[j]) - mx);
  return {mx, s};
}

}  // namespace tg::kernels::detail
