// Row softmax and its gradient. Sums in double; every pass reads a row in full
// before the pass that writes it, so y (dx) may be x (dy or y).
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/row_stats.h"

namespace tg::kernels {

// alpha: softmax(alpha x), with alpha * x rounded to float first as scale(x) then softmax
// would; 1 multiplies exactly, so plain softmax has the same bits.
void cpu_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, float alpha) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const detail::RowExpSum st = detail::row_exp_sum(xr, cols, alpha);
    const double inv = 1.0 / st.sum;
    // exp again rather than a scratch row: kernels never allocate.
    for (int64_t j = 0; j < cols; ++j)
      yr[j] = static_cast<float>(std::exp(static_cast<double>(alpha * xr[j]) - st.max) * inv);
  }
}

// alpha: scale(softmax_grad(dy, y), alpha), each float rounded as the two ops round it.
void cpu_softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, float alpha) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const float* yr = y + r * cols;
    float* dxr = dx + r * cols;
    double dot = 0.0;
    for (int64_t j = 0; j < cols; ++j) dot += static_cast<double>(dyr[j]) * yr[j];
    for (int64_t j = 0; j < cols; ++j) {
      const float g = static_cast<float>(yr[j] * (static_cast<double>(dyr[j]) - dot));
      dxr[j] = alpha * g;
    }
  }
}

}  // namespace tg::kernels
