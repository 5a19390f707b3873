// The activations and their gradients (kernels/cpu/activation.cpp), on the frame of
// elementwise.cuh, with the functors of activation.cuh.
#include <cuda_runtime.h>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::GeluF;
using detail::GeluGradF;
using detail::launch_ew;
using detail::ReluF;
using detail::ReluGradF;

}  // namespace

void relu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(ReluF{}, x, nullptr, y, n, s); }
void relu_grad(const float* dy, const float* y, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(ReluGradF{}, dy, y, dx, n, s);
}
void gelu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(GeluF{}, x, nullptr, y, n, s); }
void gelu_grad(const float* dy, const float* x, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(GeluGradF{}, dy, x, dx, n, s);
}

void tanh_op(const float* x, float* y, int64_t n, cudaStream_t s) {
  launch_ew<false>(detail::TanhF{}, x, nullptr, y, n, s);
}
void tanh_grad(const float* dy, const float* y, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(detail::TanhGradF{}, dy, y, dx, n, s);
}
void sigmoid(const float* x, float* y, int64_t n, cudaStream_t s) {
  launch_ew<false>(detail::SigmoidF{}, x, nullptr, y, n, s);
}
void sigmoid_grad(const float* dy, const float* y, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(detail::SigmoidGradF{}, dy, y, dx, n, s);
}
void exp_op(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(detail::ExpF{}, x, nullptr, y, n, s); }
void log_op(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(detail::LogF{}, x, nullptr, y, n, s); }
void log_grad(const float* dy, const float* x, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(detail::LogGradF{}, dy, x, dx, n, s);
}
void gelu_erf(const float* x, float* y, int64_t n, cudaStream_t s) {
  launch_ew<false>(detail::GeluErfF{}, x, nullptr, y, n, s);
}
void gelu_erf_grad(const float* dy, const float* x, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(detail::GeluErfGradF{}, dy, x, dx, n, s);
}
}  // namespace tg::kernels::cuda
