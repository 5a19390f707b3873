#pragma once
// The activation functors (internal to kernels/cuda): relu, gelu and their gradients,
// one element each, for the frame of elementwise.cuh. activation.cu launches them as
// ops and the fused_elementwise kernel (elementwise.cu) calls the same code, so a fused
// chain rounds exactly as the unfused ops do. gelu is the tanh approximation; tanhf
// differs from the CPU reference (double) by a few ulp, hence the tests' tolerance.
#include <cuda_runtime.h>

namespace tg::kernels::cuda::detail {

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

}  // namespace tg::kernels::cuda::detail
