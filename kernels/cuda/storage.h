#pragma once
// How the CUDA kernels that run in every float dtype hold their elements (internal to
// kernels/cuda). An element is stored as its dtype (f32, or the 16 bits of bf16 and f16,
// graph/float_formats.h's bits), widened to f32 on load (exact), computed on in f32 exactly
// as the f32 kernel does, and rounded once, to nearest even, on store: what the CPU
// reference does for 16-bit views (kernels/cpu/widen.cpp), so wherever the f32 kernel
// gives the CPU's bits the 16-bit kernel does too, NaN payloads included.
// Two forms share the dtypes and their dispatch:
// - element types (host and device): float, Bf16 and F16, loaded through their implicit
//   conversion to float and stored through narrow<T> (the row, reduction, convolution and
//   batchnorm kernels);
// - Elem<D> with packs (device): one 16-byte load or store is 4 f32 or 8 16-bit elements
//   (the elementwise and layout kernels).
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

// fn(std::integral_constant<DType, D>{}) for the runtime dtype dt: how a launcher picks the
// kernel instantiated for dt.
template <typename Fn>
decltype(auto) with_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::BF16: return fn(std::integral_constant<DType, DType::BF16>{});
    case DType::F16: return fn(std::integral_constant<DType, DType::F16>{});
    case DType::F32:
    // The float kernels never see an integer: the dtype rules (graph/dtype_rules.h) and
    // has_kernel (dtype_support.cpp) keep i32 and i64 to the ops that read them as such.
    case DType::I32:
    case DType::I64: break;
  }
  return fn(std::integral_constant<DType, DType::F32>{});
}

// The element type of dtype D.
template <DType D>
using element_type_t = std::conditional_t<D == DType::BF16, Bf16, std::conditional_t<D == DType::F16, F16, float>>;

// fn(T{}) with T the element type of dtype dt: one launcher body for every dtype.
template <typename Fn>
decltype(auto) with_element_type(DType dt, Fn&& fn) {
  return with_dtype(dt, [&](auto d) -> decltype(auto) { return fn(element_type_t<decltype(d)::value>{}); });
}

// fn(T{}, D{}) for a kTypeLowGrad call (the layernorm gradients, graph/op.h): T the element
// type of its result and of every input but dy, D that of dy: T, or a 16-bit type beside an
// f32 result (graph/dtype_rules.h: low_grad_input).
template <typename Fn>
void with_low_grad_types(DType result, DType dy, Fn&& fn) {
  with_element_type(result, [&](auto e) {
    if constexpr (std::is_same_v<decltype(e), float>) {
      with_element_type(dy, [&](auto d) { fn(e, d); });
    } else {
      fn(e, e);
    }
  });
}

// Whether p may be read 4 elements at a time (16 bytes of f32, 8 of a 16-bit type).
template <typename T>
TG_HOST_DEVICE inline bool aligned4(const T* p) {
  return (reinterpret_cast<uintptr_t>(p) & (4 * sizeof(T) - 1)) == 0;
}

}  // namespace tg::kernels::cuda

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace tg::kernels::cuda::detail {

using cuda::with_dtype;

template <DType D>
struct Elem;
template <>
struct Elem<DType::F32> {
  using T = float;
  static __device__ __forceinline__ float wide(float v) { return v; }
  static __device__ __forceinline__ float narrow(float v) { return v; }
};
template <>
struct Elem<DType::BF16> {
  using T = uint16_t;
  static __device__ __forceinline__ float wide(uint16_t v) { return Bf16{v}; }
  static __device__ __forceinline__ uint16_t narrow(float v) { return cuda::narrow<Bf16>(v).bits; }
};
// f16 through the conversion instructions where they are graph/float_formats.h's function
// (F16 above keeps the software forms, which the host needs):
// both are IEEE conversions, exact widening and round-to-nearest-even narrowing with
// gradual underflow and overflow to infinity, so they differ only in the NaNs (and
// infinities, widening), which take float_formats.h's bit formulas here. The software
// forms cost ~12 and ~20 branchy instructions per element, enough to make a memory-bound
// f16 kernel compute-bound; tests/kernels/cuda_cast_test.cpp checks every 16-bit pattern
// and a sweep of f32 patterns against float_formats.h bit for bit.
template <>
struct Elem<DType::F16> {
  using T = uint16_t;
  static __device__ __forceinline__ float wide(uint16_t v) {
    if ((v & 0x7C00u) == 0x7C00u)  // inf or NaN, payload kept: f32_from_f16's formula
      return __uint_as_float((static_cast<uint32_t>(v & 0x8000u) << 16) | 0x7F800000u |
                             (static_cast<uint32_t>(v & 0x3FFu) << 13));
    return __half2float(__ushort_as_half(v));
  }
  static __device__ __forceinline__ uint16_t narrow(float v) {
    const uint32_t u = __float_as_uint(v);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)  // NaN, quieted: f16_from_f32's formula
      return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
    return __half_as_ushort(__float2half_rn(v));
  }
};
template <DType D>
using Store = typename Elem<D>::T;

template <DType D>
constexpr int kPack = static_cast<int>(16 / sizeof(Store<D>));

// N elements in f32 registers: one element, a pack, or two packs a grid stride apart.
template <int N>
struct Lanes {
  float v[N];
};
template <typename F, int N>
__device__ __forceinline__ Lanes<N> map(F f, const Lanes<N>& a, const Lanes<N>& b) {
  Lanes<N> r;
#pragma unroll
  for (int k = 0; k < N; ++k) r.v[k] = f(a.v[k], b.v[k]);
  return r;
}

template <DType D>
__device__ __forceinline__ float load(const Store<D>* p, int64_t i) { return Elem<D>::wide(p[i]); }
template <DType D>
__device__ __forceinline__ void store(Store<D>* p, int64_t i, float v) { p[i] = Elem<D>::narrow(v); }

// Pack i (elements kPack * i ..) of a 16-byte aligned p, into v[0 .. kPack).
template <DType D>
__device__ __forceinline__ void load_pack(const Store<D>* p, int64_t i, float* v) {
  if constexpr (D == DType::F32) {
    const float4 q = reinterpret_cast<const float4*>(p)[i];
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
    const uint4 q = reinterpret_cast<const uint4*>(p)[i];
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // little endian: the lower half is the element at the lower address
      v[2 * k] = Elem<D>::wide(static_cast<uint16_t>(w[k] & 0xFFFFu));
      v[2 * k + 1] = Elem<D>::wide(static_cast<uint16_t>(w[k] >> 16));
    }
  }
}
template <DType D>
__device__ __forceinline__ void store_pack(Store<D>* p, int64_t i, const float* v) {
  if constexpr (D == DType::F32) {
    reinterpret_cast<float4*>(p)[i] = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t lo = Elem<D>::narrow(v[2 * k]), hi = Elem<D>::narrow(v[2 * k + 1]);
      w[k] = lo | hi << 16;
    }
    reinterpret_cast<uint4*>(p)[i] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}


// Four elements at p (aligned4(p)), widened: one 16-byte load of f32, one 8-byte load of
// a 16-bit type.
__device__ __forceinline__ float4 load4_wide(const float* p) { return *reinterpret_cast<const float4*>(p); }
template <typename T>
__device__ __forceinline__ float4 load4_wide(const T* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  return make_float4(T{static_cast<uint16_t>(u.x)}, T{static_cast<uint16_t>(u.x >> 16)},
                     T{static_cast<uint16_t>(u.y)}, T{static_cast<uint16_t>(u.y >> 16)});
}

// Four values rounded once each to the 16-bit T, in one 8-byte word (the lower address first).
template <typename T>
__device__ __forceinline__ uint2 pack4(float4 v) {
  const auto pack = [](float lo, float hi) {
    return static_cast<uint32_t>(narrow<T>(lo).bits) | (static_cast<uint32_t>(narrow<T>(hi).bits) << 16);
  };
  return make_uint2(pack(v.x, v.y), pack(v.z, v.w));
}

// Four values stored at p (aligned4(p)), each rounded once to T: a plain store, and a streaming
// one (evict-first: written once, not read again by the kernel).
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
template <typename T>
__device__ __forceinline__ void store4(T* p, float4 v) { *reinterpret_cast<uint2*>(p) = pack4<T>(v); }
__device__ __forceinline__ void store4_streaming(float* p, float4 v) { __stcs(reinterpret_cast<float4*>(p), v); }
template <typename T>
__device__ __forceinline__ void store4_streaming(T* p, float4 v) { __stcs(reinterpret_cast<uint2*>(p), pack4<T>(v)); }

}  // namespace tg::kernels::cuda::detail
#endif  // __CUDACC__
