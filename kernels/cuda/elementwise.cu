// add, sub, mul, scale, fill and copy (kernels/cpu/elementwise.cpp), on the frame of
// elementwise.cuh.
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
using detail::launch_ew;

struct AddF { __device__ float operator()(float a, float b) const { return __fadd_rn(a, b); } };
struct SubF { __device__ float operator()(float a, float b) const { return __fsub_rn(a, b); } };
struct MulF { __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); } };
struct ScaleF {
  float alpha;
  __device__ float operator()(float a, float) const { return __fmul_rn(alpha, a); }
};
__global__ void fill_kernel(float* y, float value, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (aligned16(y)) {
    const int64_t n4 = n / 4;
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t j = i; j < n4; j += stride) y4[j] = make_float4(value, value, value, value);
    if (4 * n4 + i < n) y[4 * n4 + i] = value;
  } else {
    for (; i < n; i += stride) y[i] = value;
  }
}

}  // namespace

void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(AddF{}, a, b, y, n, s); }
void sub(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(SubF{}, a, b, y, n, s); }
void mul(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(MulF{}, a, b, y, n, s); }
void scale(const float* x, float alpha, float* y, int64_t n, cudaStream_t s) {
  launch_ew<false>(ScaleF{alpha}, x, nullptr, y, n, s);
}
void copy(const float* x, float* y, int64_t n, cudaStream_t s) {
  if (x == y || n <= 0) return;
  TG_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, s));
}
void fill(float* y, float value, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, fill_kernel, grid_for(aligned16(y) ? n / 4 + 4 : n), kBlock, s, y, value, n);
}

}  // namespace tg::kernels::cuda
