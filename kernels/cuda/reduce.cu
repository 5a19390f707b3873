// reduce_sum, reduce_mean and broadcast (kernels/cpu/reduce.cpp): a sum over one
// axis on the frame of reduce.cuh, and its inverse.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;
using detail::launch_reduce;

struct PlainLoad {
  const float* x;
  __device__ float operator()(int64_t idx, int64_t) const { return x[idx]; }
};
__global__ void broadcast_kernel(const float* x, float* y, int64_t total, int64_t size, int64_t inner) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t o = idx / (size * inner), i = idx % inner;
    y[idx] = x[o * inner + i];
  }
}
__global__ void broadcast_vec_kernel(const float4* x, float4* y, int64_t total4, int64_t size, int64_t inner4) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total4; idx += stride) {
    const int64_t o = idx / (size * inner4), i = idx % inner4;
    y[idx] = x[o * inner4 + i];
  }
}

}  // namespace

void reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0, false, s);
}
void reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  launch_reduce(PlainLoad{x}, y, outer, len, inner, 1.0 / static_cast<double>(len), false, s);
}

void broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * size * inner;
  if (total <= 0) return;
  if (inner % 4 == 0 && aligned16(x) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, broadcast_vec_kernel, grid_for(total / 4), kBlock, s, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), total / 4, size, inner / 4);
  else
    detail::launch(TG_LAUNCH_SITE, broadcast_kernel, grid_for(total), kBlock, s, x, y, total, size, inner);
}

}  // namespace tg::kernels::cuda
