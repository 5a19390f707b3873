// Losses and their gradients. Reductions and exp/log in double; labels are class
// indices stored as floats and are checked, since a bad label would otherwise
// read outside the row. A bad label or count is the caller's data, not a bug:
// tg::InputError (graph/errors.h), which the executors rethrow naming the node.
#include <fmt/format.h>

#include <cmath>

#include "graph/errors.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/row_stats.h"

namespace tg::kernels {

namespace {

int64_t label_at(const float* labels, int64_t r, int64_t cols, const char* op) {
  const float l = labels[r];
  // In double: float(cols) rounds down for some cols > 2^24, which would refuse the last class.
  if (!(l >= 0.0f && static_cast<double>(l) < static_cast<double>(cols) && l == std::floor(l)))
    input_error("labels[{}] is {}; {} needs integer class indices in [0, {}) stored as floats, one per row "
                "of the logits: feed class numbers (not one-hot rows or scores)", r, l, op, cols);
  return static_cast<int64_t>(l);
}

}  // namespace

void cpu_mse_loss(const float* p, const float* t, float* loss, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(p[i]) - t[i];
    s += d * d;
  }
  loss[0] = static_cast<float>(s / static_cast<double>(n));
}

void cpu_mse_loss_grad(const float* p, const float* t, const float* dloss, float* dp, int64_t n) {
  const float s = 2.0f * dloss[0] / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) dp[i] = s * (p[i] - t[i]);
}

namespace {
int64_t real_count(const float* count, int64_t n, const char* op) {
  const float c = count[0];
  // In double: float(n) rounds up for some n > 2^24, and a count of float(n) > n
  // would read past the end.
  if (!(c >= 1.0f && static_cast<double>(c) <= static_cast<double>(n) && c == std::floor(c)))
    input_error("count is {}; {} needs the number of real (unpadded) elements, a whole number in [1, {}] "
                "stored as a float", c, op, n);
  return static_cast<int64_t>(c);
}
}  // namespace

void cpu_padded_mse_loss(const float* p, const float* t, const float* count, float* loss, int64_t n) {
  cpu_mse_loss(p, t, loss, real_count(count, n, "padded_mse_loss"));
}

void cpu_padded_mse_loss_grad(const float* p, const float* t, const float* count, const float* dloss, float* dp,
                              int64_t n) {
  const int64_t c = real_count(count, n, "padded_mse_loss_grad");
  cpu_mse_loss_grad(p, t, dloss, dp, c);
  for (int64_t i = c; i < n; ++i) dp[i] = 0.0f;
}

void cpu_cross_entropy(const float* logits, const float* labels, float* loss, int64_t rows, int64_t cols) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    const int64_t label = label_at(labels, r, cols, "cross_entropy");
    const detail::RowExpSum st = detail::row_exp_sum(xr, cols);
    total += (st.max + std::log(st.sum)) - xr[label];
  }
  loss[0] = static_cast<float>(total / static_cast<double>(rows));
}

void cpu_cross_entropy_grad(const float* logits, const float* labels, const float* dloss, float* dx,
                            int64_t rows, int64_t cols) {
  const double s = static_cast<double>(dloss[0]) / static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    float* dxr = dx + r * cols;
    const int64_t label = label_at(labels, r, cols, "cross_entropy_grad");
    const detail::RowExpSum st = detail::row_exp_sum(xr, cols);
    const double inv = 1.0 / st.sum;
    for (int64_t j = 0; j < cols; ++j) {
      const double p = std::exp(static_cast<double>(xr[j]) - st.max) * inv;
      dxr[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * s);
    }
  }
}

}  // namespace tg::kernels
