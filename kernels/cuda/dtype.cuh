#pragma once
// How the kernels hold each dtype (internal to kernels/cuda). An element is stored as its
// dtype (f32, or the 16 bits of bf16 and f16), widened to f32 on load, computed on in f32
// registers with exactly the f32 kernel's arithmetic, and rounded once, to nearest even,
// on store: what the CPU reference does for 16-bit views (kernels/cpu/widen.cpp). The
// conversions are graph/float_formats.h's, the CPU's own code, so wherever the f32 kernel
// gives the CPU's bits the 16-bit kernel does too, NaN payloads included.
// A pack is one 16-byte load or store: 4 f32 or 8 16-bit elements.
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
template <>
struct Elem<DType::F16> {
  using T = uint16_t;
  static __device__ __forceinline__ float wide(uint16_t v) { return f32_from_f16(v); }
  static __device__ __forceinline__ uint16_t narrow(float v) { return f16_from_f32(v); }
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
    for (int k = 0; k < 4; ++k)
      w[k] = static_cast<uint32_t>(Elem<D>::narrow(v[2 * k])) | static_cast<uint32_t>(Elem<D>::narrow(v[2 * k + 1])) << 16;
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
