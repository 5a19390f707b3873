// relu and gelu with their gradients. gelu is the tanh approximation (as in GPT-2
// and PyTorch's approximate="tanh"), evaluated in double and rounded once.
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

}  // namespace tg::kernels
