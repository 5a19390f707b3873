// conv2d, its backward ops and the pools: direct kernels, one thread per output element
// (grid-stride), each running the element function of graph/conv.h that the CPU reference
// runs: the same double sums in the same order, so the results match the CPU's, and no
// atomics. Correct and deterministic first; the convolutions that matter for time run
// through cuDNN (conv_cudnn.h) when the backend has it. Every float dtype: T is the element type (storage.h); an element sums
// as in f32 and is rounded once to T.
#include <cuda_runtime.h>

#include "graph/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

// bias, residual, act: the fused convolutions' epilogue (conv_has_epilogue); else unused.
template <typename T>
__global__ void conv_family_kernel(OpKind op, const T* a, const T* b, const T* bias, const T* residual, Act act, T* y,
                                   ConvGeometry g, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = 0.0f;
    switch (op) {
      case OpKind::conv2d: v = conv2d_element(a, b, g, i); break;
      case OpKind::conv2d_bias_act:
      case OpKind::conv2d_bias_add_act: v = conv_epilogue_element(conv2d_element(a, b, g, i), bias, residual, g, act, i); break;
      case OpKind::conv2d_grad_input:
      case OpKind::conv_transpose2d: v = conv2d_grad_input_element(a, b, g, i); break;
      case OpKind::conv2d_grad_weight: v = conv2d_grad_weight_element(a, b, g, i); break;
      case OpKind::max_pool2d: v = max_pool2d_element(a, g, i); break;
      case OpKind::avg_pool2d: v = avg_pool2d_element(a, g, i); break;
      case OpKind::max_pool2d_grad: v = pool2d_grad_element(a, b, g, i); break;
      case OpKind::avg_pool2d_grad: v = pool2d_grad_element(a, nullptr, g, i); break;
      default: break;
    }
    y[i] = narrow<T>(v);
  }
}

// The epilogue alone, over a convolution already stored in y (cuDNN's, in T).
template <typename T>
__global__ void conv_epilogue_kernel(const T* bias, const T* residual, Act act, T* y, ConvGeometry g, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = narrow<T>(conv_epilogue_element(static_cast<float>(y[i]), bias, residual, g, act, i));
}

}  // namespace

void conv_epilogue(const OpCall& c, const ConvGeometry& g, cudaStream_t s) {
  const int64_t n = c.out.shape.numel();
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    const T* residual = c.op == OpKind::conv2d_bias_add_act ? elements<const T>(c.in[3].data) : nullptr;
    detail::launch(TG_LAUNCH_SITE, conv_epilogue_kernel<T>, detail::grid_for(n), detail::kBlock, s,
                   elements<const T>(c.in[2].data), residual, c.attrs->act, elements<T>(c.out.data), g, n);
  });
}

void conv_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s) {
  if (max_pool_op(c, g, s)) return;
  const int64_t n = c.out.shape.numel();
  using detail::grid_for;
  using detail::kBlock;
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    const bool fused = conv_has_epilogue(c.op);
    const T* bias = fused ? elements<const T>(c.in[2].data) : nullptr;
    const T* residual = c.op == OpKind::conv2d_bias_add_act ? elements<const T>(c.in[3].data) : nullptr;
    const Act act = fused ? c.attrs->act : Act::none;
    detail::launch(TG_LAUNCH_SITE, conv_family_kernel<T>, grid_for(n), kBlock, s, c.op, elements<const T>(c.in[0].data),
                   elements<const T>(c.in[1].data), bias, residual, act, elements<T>(c.out.data), g, n);
  });
}

}  // namespace tg::kernels::cuda
