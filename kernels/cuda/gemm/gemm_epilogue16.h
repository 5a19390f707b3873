#pragma once
// The parts of a bf16/f16 GEMM-family op that cuBLASLt does not compute in its epilogue
// (gemm_router.cpp), as kernels after the product: each loads 16-bit values, computes in
// f32 and rounds once on its store (graph/float_formats.h), as the unfused op does.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/attrs.h"
#include "graph/shape.h"

namespace tg::kernels::cuda {

// matmul_act_grad's gradient in place over the product d (n elements of dt): d = relu_grad(d,
// y) or gelu_grad(d, x) with act_in as y or x, the unfused op's functor. cuBLASLt's
// DRELU/DGELU epilogues need a mask saved by the forward GEMM, which the graph does not have.
void act_grad_16bit(DType dt, Act act, void* d, const void* act_in, int64_t n, cudaStream_t s);

// matmul_bias_grad's bias gradient where cuBLASLt's bias-gradient epilogue is not used (none
// for the key, or option gemm_bias_grad_sums): out[j] = sum over the rows of dz[rows, cols]
// (row-major, dt) by reduce_sum's 16-bit column kernel (reduce.cu), the bits of the unfused
// graph's reduce_sum over axis 0: partial sums over the device in `scratch`, in a fixed order.
void column_sums_16bit(DType dt, const void* dz, void* out, int64_t rows, int64_t cols, float* scratch,
                       size_t scratch_bytes, cudaStream_t s);

}  // namespace tg::kernels::cuda
