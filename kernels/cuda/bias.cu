// bias_add (kernels/cpu/bias.cpp).
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

// bias_add: each thread walks whole float4s of a row-major [rows, cols] tensor; the
// vector path needs cols % 4 == 0 so that a float4 never straddles two rows.
__global__ void bias_vec_kernel(const float* x, const float* bias, float* y, int64_t n4, int64_t cols4) {
  pdl::prologue();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* b4 = reinterpret_cast<const float4*>(bias);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 u = x4[i], v = b4[i % cols4];
    y4[i] = make_float4(__fadd_rn(u.x, v.x), __fadd_rn(u.y, v.y), __fadd_rn(u.z, v.z), __fadd_rn(u.w, v.w));
  }
}
__global__ void bias_scalar_kernel(const float* x, const float* bias, float* y, int64_t n, int64_t cols) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = __fadd_rn(x[i], bias[i % cols]);
}

}  // namespace

void bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  if (cols % 4 == 0 && aligned16(x) && aligned16(bias) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, bias_vec_kernel, grid_for(n / 4), kBlock, s, x, bias, y, n / 4, cols / 4);
  else
    detail::launch(TG_LAUNCH_SITE, bias_scalar_kernel, grid_for(n), kBlock, s, x, bias, y, n, cols);
}

}  // namespace tg::kernels::cuda
