// relu, gelu and their gradients (kernels/cpu/activation.cpp), on the frame of
// elementwise.cuh. gelu is the tanh approximation; tanhf differs from the CPU
// reference (double) by a few ulp, hence the tests' tolerance.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::launch_ew;

struct ReluF { __device__ float operator()(float a, float) const { return a > 0.0f ? a : 0.0f; } };
struct ReluGradF { __device__ float operator()(float dy, float y) const { return y > 0.0f ? dy : 0.0f; } };

constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;
struct GeluF {
  __device__ float operator()(float x, float) const {
    const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
};
struct GeluGradF {
  __device__ float operator()(float dy, float x) const {
    const float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * d;
  }
};
}  // namespace

void relu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(ReluF{}, x, nullptr, y, n, s); }
void relu_grad(const float* dy, const float* y, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(ReluGradF{}, dy, y, dx, n, s);
}
void gelu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(GeluF{}, x, nullptr, y, n, s); }
void gelu_grad(const float* dy, const float* x, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(GeluGradF{}, dy, x, dx, n, s);
}
}  // namespace tg::kernels::cuda
