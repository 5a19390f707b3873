// The unary transcendentals and their gradients: relu, gelu (the tanh approximation, as
// in GPT-2 and PyTorch's approximate="tanh"), gelu_erf (the exact form, PyTorch's
// default), tanh, sigmoid, exp, log. The transcendentals and their gradients are
// evaluated in double and rounded once.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;

inline float gelu_value(float xf) {
  const double x = xf;
  const double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return static_cast<float>(0.5 * x * (1.0 + std::tanh(u)));
}

inline double gelu_derivative(float xf) {
  const double x = xf;
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * x * x);
}

constexpr double kInvSqrt2 = 0.70710678118654752440;   // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794; // 1/sqrt(2 pi)

// One result per element, f computed in double and rounded once.
template <typename F>
inline void unary(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(f(static_cast<double>(x[i])));
}
template <typename F>
inline void binary(const float* a, const float* b, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(f(static_cast<double>(a[i]), static_cast<double>(b[i])));
}

}  // namespace

void cpu_relu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void cpu_relu_grad(const float* dy, const float* y, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void cpu_gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_value(x[i]);
}

void cpu_gelu_grad(const float* dy, const float* x, float* dx, int64_t n) {
  // The product in double too, so that the result is rounded once.
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(static_cast<double>(dy[i]) * gelu_derivative(x[i]));
}

void cpu_tanh(const float* x, float* y, int64_t n) {
  unary(x, y, n, [](double v) { return std::tanh(v); });
}

void cpu_tanh_grad(const float* dy, const float* y, float* dx, int64_t n) {
  binary(dy, y, dx, n, [](double d, double t) { return d * (1.0 - t * t); });
}

void cpu_sigmoid(const float* x, float* y, int64_t n) {
  unary(x, y, n, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}

void cpu_sigmoid_grad(const float* dy, const float* y, float* dx, int64_t n) {
  binary(dy, y, dx, n, [](double d, double s) { return d * s * (1.0 - s); });
}

void cpu_exp(const float* x, float* y, int64_t n) {
  unary(x, y, n, [](double v) { return std::exp(v); });
}

void cpu_log(const float* x, float* y, int64_t n) {
  unary(x, y, n, [](double v) { return std::log(v); });
}

void cpu_log_grad(const float* dy, const float* x, float* dx, int64_t n) {
  binary(dy, x, dx, n, [](double d, double v) { return d / v; });
}

void cpu_gelu_erf(const float* x, float* y, int64_t n) {
  unary(x, y, n, [](double v) { return 0.5 * v * (1.0 + std::erf(v * kInvSqrt2)); });
}

void cpu_gelu_erf_grad(const float* dy, const float* x, float* dx, int64_t n) {
  binary(dy, x, dx, n, [](double d, double v) {
    return d * (0.5 * (1.0 + std::erf(v * kInvSqrt2)) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v));
  });
}

}  // namespace tg::kernels
