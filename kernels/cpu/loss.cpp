// Losses and their gradients. Reductions and exp/log in double; labels are class
// indices (i32, i64, or whole numbers in f32) and are checked, since a bad label would
// otherwise read outside the row. A bad label or count is the caller's data, not a bug:
// tg::InputError (graph/errors.h), which the executors rethrow naming the node.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "graph/errors.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/indices.h"
#include "kernels/cpu/row_stats.h"

namespace tg::kernels {

namespace {

constexpr int64_t kIgnored = -1;

// The label of row r as a column, or kIgnored when it equals ignore_index.
int64_t label_at(const TensorView& labels, int64_t r, int64_t cols, int64_t ignore_index, const char* op) {
  int64_t l = 0;
  const bool whole = read_index(labels, r, l);
  if (whole && l == ignore_index) return kIgnored;
  if (!whole || l < 0 || l >= cols) {
    const std::string shown = labels.dtype == DType::F32 ? fmt::format("{}", labels.data[r]) : std::to_string(l);
    input_error("labels[{}] is {}; {} needs integer class indices in [0, {}) (i32, i64, or whole numbers in f32), "
                "one per row of the logits, or ignore_index ({}) for a row that counts nowhere: feed class numbers "
                "(not one-hot rows or scores)", r, shown, op, cols, ignore_index);
  }
  return l;
}

// The rows whose label is not ignore_index (all labels checked).
int64_t kept_rows(const TensorView& labels, int64_t rows, int64_t cols, int64_t ignore_index, const char* op) {
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) kept += label_at(labels, r, cols, ignore_index, op) != kIgnored;
  return kept;
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

void cpu_cross_entropy(const float* logits, const TensorView& labels, float* loss, int64_t rows, int64_t cols,
                       int64_t classes, int64_t ignore_index) {
  double total = 0.0;
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    const int64_t label = label_at(labels, r, classes, ignore_index, "cross_entropy");
    if (label == kIgnored) continue;
    const detail::RowExpSum st = detail::row_exp_sum(xr, classes);
    total += (st.max + std::log(st.sum)) - xr[label];
    ++kept;
  }
  // Every row ignored: 0 / 0, NaN, as torch gives.
  loss[0] = static_cast<float>(total / static_cast<double>(kept));
}

void cpu_cross_entropy_grad(const float* logits, const TensorView& labels, const float* dloss, float* dx,
                            int64_t rows, int64_t cols, int64_t classes, int64_t ignore_index) {
  const int64_t kept = kept_rows(labels, rows, classes, ignore_index, "cross_entropy_grad");
  const double s = static_cast<double>(dloss[0]) / static_cast<double>(kept);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    float* dxr = dx + r * cols;
    const int64_t label = label_at(labels, r, classes, ignore_index, "cross_entropy_grad");
    if (label == kIgnored) {
      for (int64_t j = 0; j < cols; ++j) dxr[j] = 0.0f;
      continue;
    }
    const detail::RowExpSum st = detail::row_exp_sum(xr, classes);
    const double inv = 1.0 / st.sum;
    for (int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(static_cast<double>(xr[j]) - st.max) * inv;
      dxr[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * s);
    }
    for (int64_t j = classes; j < cols; ++j) dxr[j] = 0.0f;  // padding columns: no class, no gradient
  }
}

}  // namespace tg::kernels
