#pragma once
// The device arrays of matrix addresses that matmul_heads' pointer-array GEMM reads
// (LtKey::pointer_arrays, kernels/cuda/gemm/gemm_router.cpp). Matrix i of a head view starts at
// (i / H) * rows * ld + (i % H) * cols (graph/heads.h): not evenly spaced, so no strided
// batch walks it, and cuBLASLt is given one address per matrix instead.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/heads.h"

namespace tg::kernels::cuda {

// arrays[i] = a + ga.offset(i), arrays[n + i] = b + gb.offset(i), arrays[2n + i] =
// d + gd.offset(i) for i < n = batch (3n pointers, device memory), on stream s; the offsets
// are in elements of elem_bytes bytes (4 for f32, 2 for bf16 and f16).
// Stream-ordered after the kernel before it, like every kernel of the backend, so a
// GEMM still reading the previous arrays in the same buffer is done first.
void heads_pointers(const void* a, const HeadsMatrix& ga, const void* b, const HeadsMatrix& gb, void* d,
                    const HeadsMatrix& gd, int64_t heads, int64_t batch, int elem_bytes, void** arrays,
                    cudaStream_t s);

}  // namespace tg::kernels::cuda
