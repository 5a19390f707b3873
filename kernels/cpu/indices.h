#pragma once
// The ids and labels of a call (graph/dtype_rules.h, op_index_inputs), read on the CPU in
// their own dtype: i32, i64, or whole numbers held in f32 (the reference interpreter holds
// every value as f32, and cross_entropy's labels were f32 class indices before integers).
#include <cmath>
#include <cstdint>

#include "kernels/op_call.h"

namespace tg::kernels {

// Element i as an integer; false for an f32 element that is no whole number (or NaN, or
// past int64).
inline bool read_index(const TensorView& t, int64_t i, int64_t& out) {
  switch (t.dtype) {
    case DType::I32: out = reinterpret_cast<const int32_t*>(t.data)[i]; return true;
    case DType::I64: out = reinterpret_cast<const int64_t*>(t.data)[i]; return true;
    default: break;
  }
  const float f = t.data[i];
  if (!(f == std::floor(f)) || !(std::fabs(f) < 9.2e18f)) return false;
  out = static_cast<int64_t>(f);
  return true;
}

// Element i of where's condition as a truth value: nonzero is true (an f32 NaN too).
inline bool condition_at(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::I32: return reinterpret_cast<const int32_t*>(t.data)[i] != 0;
    case DType::I64: return reinterpret_cast<const int64_t*>(t.data)[i] != 0;
    default: return t.data[i] != 0.0f;
  }
}

}  // namespace tg::kernels
