#pragma once
// The element types of the CUDA kernels that run in every float dtype (internal to
// kernels/cuda): float for f32, and Bf16 and F16 for the 16-bit dtypes, each two bytes of
// graph/float_formats.h's bits. A kernel templated on the element type loads a value
// widened to float (the implicit conversion, exact), computes in float exactly as its f32
// form does, and stores through narrow<T>, which rounds once to nearest even, as the CPU
// reference (kernels/cpu/widen.cpp) rounds its f32 result. Host and device.
#include <cstdint>
#include <type_traits>

#include "graph/float_formats.h"
#include "graph/shape.h"

namespace tg::kernels::cuda {

struct Bf16 {
  uint16_t bits;
  TG_HOST_DEVICE operator float() const { return f32_from_bf16(bits); }
};
struct F16 {
  uint16_t bits;
  TG_HOST_DEVICE operator float() const { return f32_from_f16(bits); }
};
static_assert(sizeof(Bf16) == 2 && sizeof(F16) == 2, "16-bit elements are packed");

template <typename T>
TG_HOST_DEVICE inline T narrow(float v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return Bf16{bf16_from_f32(v)};
  } else if constexpr (std::is_same_v<T, F16>) {
    return F16{f16_from_f32(v)};
  } else {
    static_assert(std::is_same_v<T, float>, "an element type is float, Bf16 or F16");
    return v;
  }
}

// The dtype whose elements T holds.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, Bf16>) {
    return DType::BF16;
  } else if constexpr (std::is_same_v<T, F16>) {
    return DType::F16;
  } else {
    return DType::F32;
  }
}

// A tensor's elements as T (the pointer of a TensorView whose dtype is T's).
template <typename T, typename P>
T* elements(P* p) {
  return reinterpret_cast<T*>(const_cast<std::remove_const_t<P>*>(p));
}

// fn(T{}) with T the element type of dtype dt: one launcher body for every dtype.
template <typename Fn>
decltype(auto) with_element_type(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::BF16: return fn(Bf16{});
    case DType::F16: return fn(F16{});
    case DType::F32: break;
  }
  return fn(float{});
}

// Whether p may be read 4 elements at a time (16 bytes of f32, 8 of a 16-bit type).
template <typename T>
TG_HOST_DEVICE inline bool aligned4(const T* p) {
  return (reinterpret_cast<uintptr_t>(p) & (4 * sizeof(T) - 1)) == 0;
}

}  // namespace tg::kernels::cuda

#if defined(__CUDACC__)
#include <cuda_runtime.h>

namespace tg::kernels::cuda::detail {

// Four elements at p (aligned4(p)), widened: one 16-byte load of f32, one 8-byte load of
// a 16-bit type.
__device__ __forceinline__ float4 load4_wide(const float* p) { return *reinterpret_cast<const float4*>(p); }
template <typename T>
__device__ __forceinline__ float4 load4_wide(const T* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  return make_float4(T{static_cast<uint16_t>(u.x)}, T{static_cast<uint16_t>(u.x >> 16)},
                     T{static_cast<uint16_t>(u.y)}, T{static_cast<uint16_t>(u.y >> 16)});
}

// Four values stored at p (aligned4(p)), each rounded once to T, with a streaming store
// (evict-first: written once, not read again by the kernel).
__device__ __forceinline__ void store4_streaming(float* p, float4 v) { __stcs(reinterpret_cast<float4*>(p), v); }
template <typename T>
__device__ __forceinline__ void store4_streaming(T* p, float4 v) {
  const auto pack = [](float lo, float hi) {
    return static_cast<uint32_t>(narrow<T>(lo).bits) | (static_cast<uint32_t>(narrow<T>(hi).bits) << 16);
  };
  __stcs(reinterpret_cast<uint2*>(p), make_uint2(pack(v.x, v.y), pack(v.z, v.w)));
}

}  // namespace tg::kernels::cuda::detail
#endif  // __CUDACC__
