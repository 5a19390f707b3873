#pragma once
// Which weight gradients matmul_sgd_momentum's tiled CUDA kernel (kernels/cuda/gemm/gemm_update.cu)
// takes: the weight [m, n] a^T dz of a [rows, m] and dz [rows, n] in whole 128 x 128 tiles,
// the rows (the product's k) in whole steps of 16. Other shapes run, correctly and slowly,
// on a plain kernel; the optimizer pass (static/passes/optimizer.cpp) fuses only these.
// Plain C++: the pass reads it in a build without CUDA too.
#include <cstdint>

namespace tg::kernels {

inline constexpr int64_t kGemmUpdateTile = 128, kGemmUpdateStep = 16;

inline bool gemm_update_fast_shape(int64_t rows, int64_t m, int64_t n) {
  return rows > 0 && rows % kGemmUpdateStep == 0 && rows <= (int64_t{1} << 30) && m > 0 && m % kGemmUpdateTile == 0 &&
         m / kGemmUpdateTile <= 65535 && n > 0 && n % kGemmUpdateTile == 0 && n <= (int64_t{1} << 30);
}

}  // namespace tg::kernels
