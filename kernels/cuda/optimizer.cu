// The optimizer updates sgd and sgd_momentum (kernels/cpu/optimizer.cpp), in place.
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

struct SgdF {
  float lr;
  __device__ float operator()(float p, float g) const { return __fsub_rn(p, __fmul_rn(lr, g)); }
};

__global__ void sgd_momentum_kernel(float* p, const float* g, float* v, float lr, float momentum, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto step = [&](float& pp, float gg, float& vv) {
    vv = __fadd_rn(__fmul_rn(momentum, vv), gg);
    pp = __fsub_rn(pp, __fmul_rn(lr, vv));
  };
  if (aligned16(p) && aligned16(g) && aligned16(v)) {
    const int64_t n4 = n / 4;
    float4* p4 = reinterpret_cast<float4*>(p);
    const float4* g4 = reinterpret_cast<const float4*>(g);
    float4* v4 = reinterpret_cast<float4*>(v);
    for (int64_t j = i; j < n4; j += stride) {
      float4 pp = p4[j], vv = v4[j];
      const float4 gg = g4[j];
      step(pp.x, gg.x, vv.x);
      step(pp.y, gg.y, vv.y);
      step(pp.z, gg.z, vv.z);
      step(pp.w, gg.w, vv.w);
      p4[j] = pp;
      v4[j] = vv;
    }
    if (4 * n4 + i < n) step(p[4 * n4 + i], g[4 * n4 + i], v[4 * n4 + i]);
  } else {
    for (; i < n; i += stride) step(p[i], g[i], v[i]);
  }
}

}  // namespace

void sgd(float* p, const float* g, float lr, int64_t n, cudaStream_t s) { launch_ew<true>(SgdF{lr}, p, g, p, n, s); }

void sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, sgd_momentum_kernel, grid_for(n / 4 + 4), kBlock, s, p, g, v, lr, momentum, n);
}

}  // namespace tg::kernels::cuda
