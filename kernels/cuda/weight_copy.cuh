#pragma once
// The *_multi_cast updates' last store (graph/op.h kWeightCopy): a parameter's new value
// rounded into its persistent low-precision copy by the conversion `cast` uses
// (graph/float_formats.h, round to nearest even), so the copy holds the bits the cast the
// low_copies pass removed would make of the same value in the next step.
#include <cstdint>

#include "graph/float_formats.h"

namespace tg::kernels::cuda {

__device__ __forceinline__ void store_weight_copy(uint16_t* low, bool bf16, int64_t i, float p) {
  low[i] = bf16 ? bf16_from_f32(p) : f16_from_f32(p);
}

__device__ __forceinline__ void store_weight_copy4(uint16_t* low, bool bf16, int64_t j, float4 p) {
  store_weight_copy(low, bf16, 4 * j, p.x);
  store_weight_copy(low, bf16, 4 * j + 1, p.y);
  store_weight_copy(low, bf16, 4 * j + 2, p.z);
  store_weight_copy(low, bf16, 4 * j + 3, p.w);
}

}  // namespace tg::kernels::cuda
