#pragma once
// The activation functors (internal to kernels/cuda): relu, gelu, gelu_erf, tanh,
// sigmoid, exp, log and their gradients, one element each, for the frame of elementwise.cuh. activation.cu launches them as
// ops and the fused_elementwise kernel (elementwise.cu) calls the same code, so a fused
// chain rounds exactly as the unfused ops do. gelu is the tanh approximation; tanhf
// differs from the CPU reference (double) by a few ulp, hence the tests' tolerance;
// so do tanhf, expf, logf and erff in the others, and their gradients, which the CPU
// rounds once from double and these round at each float step.
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

// The arithmetic around the math library calls is written with the _rn intrinsics, which
// the compiler never contracts into an fma with the functor before or after: a fused
// chain (elementwise.cu) then rounds exactly as these ops run one by one.
struct TanhF { __device__ float operator()(float x, float) const { return tanhf(x); } };
struct TanhGradF {
  __device__ float operator()(float dy, float y) const { return __fmul_rn(dy, __fsub_rn(1.0f, __fmul_rn(y, y))); }
};
struct SigmoidF {
  __device__ float operator()(float x, float) const { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }
};
struct SigmoidGradF {
  __device__ float operator()(float dy, float y) const { return __fmul_rn(__fmul_rn(dy, y), __fsub_rn(1.0f, y)); }
};
struct ExpF { __device__ float operator()(float x, float) const { return expf(x); } };
struct LogF { __device__ float operator()(float x, float) const { return logf(x); } };
struct LogGradF { __device__ float operator()(float dy, float x) const { return __fdiv_rn(dy, x); } };

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
struct GeluErfF {
  __device__ float operator()(float x, float) const {
    return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, erff(__fmul_rn(x, kInvSqrt2))));
  }
};
struct GeluErfGradF {
  __device__ float operator()(float dy, float x) const {
    const float cdf = __fmul_rn(0.5f, __fadd_rn(1.0f, erff(__fmul_rn(x, kInvSqrt2))));
    const float pdf = __fmul_rn(kInvSqrt2Pi, expf(__fmul_rn(__fmul_rn(-0.5f, x), x)));
    return __fmul_rn(dy, __fadd_rn(cdf, __fmul_rn(x, pdf)));
  }
};

}  // namespace tg::kernels::cuda::detail
