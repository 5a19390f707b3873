// The activations and their gradients (kernels/cpu/activation.cpp), on the frame of
// elementwise.cuh, with the functors of activation.cuh, in every dtype of storage.h.
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

void relu(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(ReluF{}, x, nullptr, y, n, dt, s);
}
void relu_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(ReluGradF{}, dy, y, dx, n, dt, s);
}
void gelu(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(GeluF{}, x, nullptr, y, n, dt, s);
}
void gelu_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(GeluGradF{}, dy, x, dx, n, dt, s);
}
void tanh_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(detail::TanhF{}, x, nullptr, y, n, dt, s);
}
void tanh_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(detail::TanhGradF{}, dy, y, dx, n, dt, s);
}
void sigmoid(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(detail::SigmoidF{}, x, nullptr, y, n, dt, s);
}
void sigmoid_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(detail::SigmoidGradF{}, dy, y, dx, n, dt, s);
}
void exp_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(detail::ExpF{}, x, nullptr, y, n, dt, s);
}
void log_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(detail::LogF{}, x, nullptr, y, n, dt, s);
}
void log_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(detail::LogGradF{}, dy, x, dx, n, dt, s);
}
void gelu_erf(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(detail::GeluErfF{}, x, nullptr, y, n, dt, s);
}
void gelu_erf_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(detail::GeluErfGradF{}, dy, x, dx, n, dt, s);
}
}  // namespace tg::kernels::cuda
