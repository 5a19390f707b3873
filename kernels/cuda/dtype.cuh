#pragma once
// How the kernels hold each dtype (internal to kernels/cuda). An element is stored as its
// dtype (f32, or the 16 bits of bf16 and f16), widened to f32 on load, computed on in f32
// registers with exactly the f32 kernel's arithmetic, and rounded once, to nearest even,
// on store: what the CPU reference does for 16-bit views (kernels/cpu/widen.cpp). The
// conversions give graph/float_formats.h's bits, the CPU's (bf16 by its own code, f16
// below), so wherever the f32 kernel gives the CPU's bits the 16-bit kernel does too, NaN
// payloads included.
// A pack is one 16-byte load or store: 4 f32 or 8 16-bit elements.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "graph/float_formats.h"
#include "graph/shape.h"

namespace tg::kernels::cuda::detail {

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
  static __device__ __forceinline__ float wide(uint16_t v) { return f32_from_bf16(v); }
  static __device__ __forceinline__ uint16_t narrow(float v) { return bf16_from_f32(v); }
};
// f16 through the conversion instructions where they are graph/float_formats.h's function:
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

// fn(std::integral_constant<DType, D>{}) for the runtime dtype dt: how a launcher picks the
// kernel instantiated for dt.
template <typename Fn>
void with_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::F32: return fn(std::integral_constant<DType, DType::F32>{});
    case DType::BF16: return fn(std::integral_constant<DType, DType::BF16>{});
    case DType::F16: return fn(std::integral_constant<DType, DType::F16>{});
  }
}

}  // namespace tg::kernels::cuda::detail
