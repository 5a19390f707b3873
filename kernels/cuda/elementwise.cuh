#pragma once
// The elementwise kernel frame (internal to kernels/cuda), for every op that maps
// element i of its inputs to element i of its output: a grid-stride kernel with
// float4 loads/stores when every pointer is 16-byte aligned (two vectors in flight
// per thread) and the n % 4 tail by the first threads, a scalar kernel otherwise,
// and one thread per element without a loop for tiny tensors. The op is a functor
// (float operator()(float a, float b) const), defined in the family's .cu file.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda::detail {

// F: float operator()(float a, float b) const; unary ops ignore b (passed as a).
template <bool kBinary, typename F>
__global__ void ew_vec_kernel(F f, const float* a, const float* b, float* y, int64_t n4, int64_t n) {
  pdl::prologue();
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(kBinary ? b : a);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto op4 = [&](float4 u, float4 v) { return make_float4(f(u.x, v.x), f(u.y, v.y), f(u.z, v.z), f(u.w, v.w)); };
  int64_t i = tid;
  for (; i + stride < n4; i += 2 * stride) {
    const float4 u0 = a4[i], u1 = a4[i + stride];
    const float4 v0 = kBinary ? b4[i] : u0, v1 = kBinary ? b4[i + stride] : u1;
    y4[i] = op4(u0, v0);
    y4[i + stride] = op4(u1, v1);
  }
  if (i < n4) y4[i] = op4(a4[i], kBinary ? b4[i] : a4[i]);
  const int64_t t = 4 * n4 + tid;
  if (t < n) y[t] = f(a[t], kBinary ? b[t] : a[t]);
}

template <bool kBinary, typename F>
__global__ void ew_scalar_kernel(F f, const float* a, const float* b, float* y, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = f(a[i], kBinary ? b[i] : a[i]);
}

// Small tensors: one element per thread, 32-bit indices, no loop. A chain of tiny ops
// is bound by how fast one kernel follows another, and the fewer instructions
// between the PDL wait and the grid's end, the sooner the next one may run.
template <bool kBinary, typename F>
__global__ void ew_small_kernel(F f, const float* a, const float* b, float* y, int n) {
  pdl::prologue();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = f(a[i], kBinary ? b[i] : a[i]);
}
constexpr int64_t kSmallElements = 1024;  // at most 4 blocks of 256: beyond, float4 loads pay

template <bool kBinary, typename F>
void launch_ew(F f, const float* a, const float* b, float* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  if (n <= kSmallElements) {
    const int block = block_for(n);
    launch(TG_LAUNCH_SITE, ew_small_kernel<kBinary, F>, static_cast<int>((n + block - 1) / block), block, s,
                   f, a, b, y, static_cast<int>(n));
  } else if (aligned16(a) && (!kBinary || aligned16(b)) && aligned16(y)) {
    const int64_t n4 = n / 4;
    const int64_t work = n4 > (n - 4 * n4) ? n4 : (n - 4 * n4);
    const int block = block_for(work);
    launch(TG_LAUNCH_SITE, ew_vec_kernel<kBinary, F>, grid_for(work, block), block, s, f, a, b, y, n4, n);
  } else {
    const int block = block_for(n);
    launch(TG_LAUNCH_SITE, ew_scalar_kernel<kBinary, F>, grid_for(n, block), block, s, f, a, b, y, n);
  }
}

}  // namespace tg::kernels::cuda::detail
