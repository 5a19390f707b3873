// Layer normalization over the last axis and its two gradients. Row statistics
// are two-pass in double (mean, then the mean of squared deviations), so rows
// with a large mean do not lose the variance to cancellation.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

struct RowStats {
  double mean;
  double rstd;
};

RowStats row_stats(const float* x, int64_t cols, float eps) {
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += x[j];
  const double mean = s / static_cast<double>(cols);
  double v = 0.0;
  for (int64_t j = 0; j < cols; ++j) {
    const double d = x[j] - mean;
    v += d * d;
  }
  const double var = v / static_cast<double>(cols);
  return {mean, 1.0 / std::sqrt(var + static_cast<double>(eps))};
}

}  // namespace

void cpu_layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                        int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const RowStats st = row_stats(xr, cols, eps);
    for (int64_t j = 0; j < cols; ++j)
      yr[j] = static_cast<float>((xr[j] - st.mean) * st.rstd * gamma[j] + beta[j]);
  }
}

void cpu_layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                               int64_t cols, float eps, const float* acc) {
  const double inv_cols = 1.0 / static_cast<double>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const float* xr = x + r * cols;
    float* dxr = dx + r * cols;
    const RowStats st = row_stats(xr, cols, eps);
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      const double g = static_cast<double>(dyr[j]) * gamma[j];
      sum_g += g;
      sum_gx += g * ((xr[j] - st.mean) * st.rstd);
    }
    const double mean_g = sum_g * inv_cols, mean_gx = sum_gx * inv_cols;
    for (int64_t j = 0; j < cols; ++j) {
      const double g = static_cast<double>(dyr[j]) * gamma[j];
      const double xhat = (xr[j] - st.mean) * st.rstd;
      const auto d = static_cast<float>(st.rstd * (g - mean_g - xhat * mean_gx));
      dxr[j] = acc ? acc[r * cols + j] + d : d;
    }
  }
}

void cpu_layernorm_grad_gamma_beta(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                                   int64_t cols, float eps) {
  // Each column is summed over the rows in double. The accumulators live on the
  // stack (kernels never allocate), a block of columns at a time: one block for
  // any width up to kBlock, so the row statistics are computed once per row.
  constexpr int64_t kBlock = 2048;
  double acc_g[kBlock], acc_b[kBlock];
  for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
    const int64_t w = cols - j0 < kBlock ? cols - j0 : kBlock;
    for (int64_t j = 0; j < w; ++j) acc_g[j] = acc_b[j] = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      const RowStats st = row_stats(xr, cols, eps);
      for (int64_t j = 0; j < w; ++j) acc_g[j] += static_cast<double>(dyr[j0 + j]) * ((xr[j0 + j] - st.mean) * st.rstd);
      if (dbeta)
        for (int64_t j = 0; j < w; ++j) acc_b[j] += dyr[j0 + j];
    }
    for (int64_t j = 0; j < w; ++j) dgamma[j0 + j] = static_cast<float>(acc_g[j]);
    if (dbeta)
      for (int64_t j = 0; j < w; ++j) dbeta[j0 + j] = static_cast<float>(acc_b[j]);
  }
}

void cpu_layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols,
                              float eps) {
  cpu_layernorm_grad_gamma_beta(dy, x, dgamma, nullptr, rows, cols, eps);
}

void cpu_layernorm_grad_params(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                               int64_t cols, float eps) {
  cpu_layernorm_grad_gamma(dy, x, dgamma, rows, cols, eps);
  cpu_reduce_sum(dy, dbeta, 1, rows, cols);
}

}  // namespace tg::kernels
