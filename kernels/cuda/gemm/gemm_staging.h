#pragma once
// The copy a staged GEMM runs before and after its product (kernels/gemm/gemm_staging.h).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tg::kernels::cuda {

// dst (dst_rows x dst_cols, leading dim dst_ld) = src (src_rows x src_cols, leading dim
// src_ld) where both have the element, zeros where only dst has it; esize-byte elements (2 or
// 4), bits unchanged, on s. Into a staged operand dst is the larger; out of one, src is.
void copy_padded(const void* src, int64_t src_ld, int64_t src_rows, int64_t src_cols, void* dst, int64_t dst_ld,
                 int64_t dst_rows, int64_t dst_cols, int esize, cudaStream_t s);

}  // namespace tg::kernels::cuda
