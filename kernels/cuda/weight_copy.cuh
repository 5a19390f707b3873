#pragma once
// The *_multi_cast updates' last store (graph/op.h kWeightCopy): a parameter's new value
// rounded into its persistent low-precision copy by the conversion `cast` uses
// (graph/float_formats.h, round to nearest even), so the copy holds the bits the cast the
// low_copies pass removed would make of the same value in the next step.
#include <cstdint>

#include "graph/float_formats.h"
#include "graph/shape.h"

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

// A multi-tensor update's gradient (graph/op.h op_input_is_multi_grad): f32 as stored, bf16
// and f16 widened exactly, the value the cast the optimizer pass removed would have made.
enum class GradKind : uint8_t { f32, bf16, f16 };
inline GradKind grad_kind(DType dt) {
  return dt == DType::BF16 ? GradKind::bf16 : dt == DType::F16 ? GradKind::f16 : GradKind::f32;
}
__device__ __forceinline__ float grad_at(const void* g, GradKind k, int64_t i) {
  if (k == GradKind::f32) return static_cast<const float*>(g)[i];
  const uint16_t b = static_cast<const uint16_t*>(g)[i];
  return k == GradKind::bf16 ? f32_from_bf16(b) : f32_from_f16(b);
}
// Whether grad4_at may read g: 4 f32 gradients are 16 bytes, 4 16-bit ones 8.
__device__ __forceinline__ bool grad4_aligned(const void* g, GradKind k) {
  return reinterpret_cast<uintptr_t>(g) % (k == GradKind::f32 ? 16 : 8) == 0;
}
// Gradients 4 j .. 4 j + 3 in one load, each the value grad_at gives.
__device__ __forceinline__ float4 grad4_at(const void* g, GradKind k, int64_t j) {
  if (k == GradKind::f32) return static_cast<const float4*>(g)[j];
  const uint2 raw = static_cast<const uint2*>(g)[j];
  return float4{grad_at(&raw, k, 0), grad_at(&raw, k, 1), grad_at(&raw, k, 2), grad_at(&raw, k, 3)};
}

}  // namespace tg::kernels::cuda
