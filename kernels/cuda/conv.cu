// conv2d, its backward ops and the pools: direct kernels, one thread per output element
// (grid-stride), each running the element function of graph/conv.h that the CPU reference
// runs: the same double sums in the same order, so the results match the CPU's, and no
// atomics. Correct and deterministic first; a cuDNN path is for the convolutions that
// matter for time.
#include <cuda_runtime.h>


#include "graph/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

__global__ void conv_family_kernel(OpKind op, const float* a, const float* b, float* y, ConvGeometry g, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = 0.0f;
    switch (op) {
      case OpKind::conv2d: v = conv2d_element(a, b, g, i); break;
      case OpKind::conv2d_grad_input: v = conv2d_grad_input_element(a, b, g, i); break;
      case OpKind::conv2d_grad_weight: v = conv2d_grad_weight_element(a, b, g, i); break;
      case OpKind::max_pool2d: v = max_pool2d_element(a, g, i); break;
      case OpKind::avg_pool2d: v = avg_pool2d_element(a, g, i); break;
      case OpKind::max_pool2d_grad: v = pool2d_grad_element(a, b, g, i); break;
      case OpKind::avg_pool2d_grad: v = pool2d_grad_element(a, nullptr, g, i); break;
      default: break;
    }
    y[i] = v;
  }
}

}  // namespace

void conv_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s) {
  const int64_t n = c.out.shape.numel();
  using detail::grid_for;
  using detail::kBlock;
  detail::launch(TG_LAUNCH_SITE, conv_family_kernel, grid_for(n), kBlock, s, c.op,
                 static_cast<const float*>(c.in[0].data), static_cast<const float*>(c.in[1].data), c.out.data, g, n);
}

}  // namespace tg::kernels::cuda
