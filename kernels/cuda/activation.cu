// relu, gelu and their gradients (kernels/cpu/activation.cpp), on the frame of
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
}  // namespace tg::kernels::cuda
