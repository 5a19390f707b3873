#pragma once
// The epilogue of the GEMM kernels of our own that take a GemmArgs (gemm_small.cu,
// gemm_skinny.cu), in the unfused ops' order with their functors: bias_add, the
// activation, the accumulated term added last, then an activation's gradient of the result
// (matmul_act_grad). A fused GEMM thus gives the bits of the kernel's plain product followed
// by the unfused ops. The caller loads bias_v, c_v and act_v before its store (c may be d).
#include <cuda_runtime.h>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/gemm/gemm_args.h"

namespace tg::kernels::cuda {

__device__ __forceinline__ float small_gemm_epilogue(const GemmArgs& g, float v, float bias_v, float c_v,
                                                     float act_v) {
  if (g.bias) v = v + bias_v;
  if (g.act == Act::relu) v = detail::ReluF()(v, 0.0f);
  if (g.act == Act::gelu) v = detail::GeluF()(v, 0.0f);
  if (g.c) v = c_v + v;  // c may be d: the caller read it before any store of this element
  if (g.act_grad == Act::relu) v = detail::ReluGradF()(v, act_v);
  if (g.act_grad == Act::gelu) v = detail::GeluGradF()(v, act_v);
  return v;
}

// Element (i, j) of a batch-1 GemmArgs's result from its product v: the epilogue's operands
// loaded, then the one store.
__device__ __forceinline__ void small_gemm_store(const GemmArgs& g, int64_t i, int64_t j, float v) {
  const int64_t at = i * g.ldd + j;
  const float bias_v = g.bias ? g.bias[j] : 0.0f;
  const float c_v = g.c ? g.c[at] : 0.0f;
  const float act_v = g.act_in ? g.act_in[at] : 0.0f;
  g.d[at] = small_gemm_epilogue(g, v, bias_v, c_v, act_v);
}

}  // namespace tg::kernels::cuda
