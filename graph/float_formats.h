#pragma once
// The 16-bit float formats of the IR's dtypes, converted bit by bit, so that the CPU
// reference kernels, the graph files and the CUDA kernels round the same way:
//   bf16: 1 sign, 8 exponent, 7 mantissa bits (f32's range, 3 significant digits);
//   f16:  1 sign, 5 exponent, 10 mantissa bits (IEEE binary16: max 65504, subnormals
//         down to 2^-24).
// Narrowing rounds to nearest, ties to even (what the GPU's conversion instructions
// do); a NaN stays a NaN (quiet, sign kept) and never rounds to infinity; f16 overflows
// to infinity past the largest finite value by half an ulp. Widening is exact.
// The functions compile for the host and, under nvcc, for the device.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "graph/shape.h"

#if defined(__CUDACC__)
#define TG_HOST_DEVICE __host__ __device__
#else
#define TG_HOST_DEVICE
#endif

namespace tg {

TG_HOST_DEVICE inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
TG_HOST_DEVICE inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TG_HOST_DEVICE inline uint16_t bf16_from_f32(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet it
  // Adding 0x7FFF plus the lowest kept bit carries into the kept half exactly when the
  // dropped half is above the midpoint, or at it with an odd kept half.
  const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

TG_HOST_DEVICE inline float f32_from_bf16(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

TG_HOST_DEVICE inline uint16_t f16_from_f32(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN, quiet
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds past 65504: inf
  const int exp = static_cast<int>(a >> 23) - 127;
  if (exp >= -14) {  // a normal f16: rebias the exponent, round the mantissa from 23 to 10 bits
    const uint32_t v = ((static_cast<uint32_t>(exp + 15) << 10) | ((a >> 13) & 0x3FFu));
    const uint32_t rest = a & 0x1FFFu;
    const uint32_t up = rest > 0x1000u || (rest == 0x1000u && (v & 1u));
    return static_cast<uint16_t>(sign | (v + up));  // a carry out of the mantissa bumps the exponent: still right
  }
  if (exp < -25) return sign;  // below half the smallest subnormal (2^-25): rounds to zero
  // Subnormal: the value is m * 2^-24 with m = significand >> shift, rounded.
  const uint32_t significand = (a & 0x7FFFFFu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24: from 2^(exp) with 23 fraction bits down to units of 2^-24
  const uint32_t m = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t up = rest > half || (rest == half && (m & 1u));
  return static_cast<uint16_t>(sign | (m + up));  // m + up == 0x400 is the smallest normal: right too
}

TG_HOST_DEVICE inline float f32_from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
#if defined(__CUDA_ARCH__)
  // On the device, the conversion instruction and a select in one asm block, no branch: a
  // branch (which the compiler makes of any select it can sink) splits a kernel's basic
  // block at every 16-bit load, and a multiply before the split and an add after it are
  // then not contracted into one fma as they are in the f32 twin of the kernel, which
  // rounds differently. The select keeps a NaN's payload.
  const uint32_t inf_nan = sign | 0x7F800000u | (man << 13);
  uint32_t bits;
  asm("{\n\t.reg .pred special;\n\t.reg .f32 widened;\n\t"
      "cvt.f32.f16 widened, %1;\n\t"
      "setp.eq.u32 special, %3, 31;\n\t"
      "selp.b32 %0, %2, widened, special;\n\t}"
      : "=r"(bits)
      : "h"(h), "r"(inf_nan), "r"(exp));
  return f32_from_bits(bits);
#else
  if (exp == 0x1Fu) return f32_from_bits(sign | 0x7F800000u | (man << 13));  // inf, NaN (payload kept)
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in f32.
  const float mag = static_cast<float>(man) * f32_from_bits(0x33800000u);  // 2^-24
  return f32_from_bits(sign | f32_bits(mag));
#endif
}

// A float converted to an integer type I: rounded toward zero, saturated at I's limits,
// NaN to 0. What cast does from a float dtype to i32 and i64 on every backend (CUDA's
// cvt.rzi conversions do the same), so no float has an undefined conversion.
template <typename I>
TG_HOST_DEVICE inline I int_from_f32(float f) {
  static_assert(sizeof(I) == 4 || sizeof(I) == 8, "int32_t or int64_t");
  if (!(f == f)) return 0;
  // 2^31 and 2^63 are floats; every float below them in magnitude converts exactly after truncation.
  if constexpr (sizeof(I) == 4) {
    if (f >= 2147483648.0f) return 2147483647;
    if (f < -2147483648.0f) return -2147483647 - 1;
  } else {
    if (f >= 9223372036854775808.0f) return 9223372036854775807ll;
    if (f < -9223372036854775808.0f) return -9223372036854775807ll - 1;
  }
  return static_cast<I>(f);  // C++ truncates toward zero
}

// f rounded to `dt` and widened back: what a kernel that stores in `dt` leaves in memory,
// seen as f32. The CPU reference applies it wherever such a kernel stores. An integer
// dtype keeps f's integer part (int_from_f32), widened back to the nearest float.
TG_HOST_DEVICE inline float round_to_dtype(float f, DType dt) {
  switch (dt) {
    case DType::F32: return f;
    case DType::BF16: return f32_from_bf16(bf16_from_f32(f));
    case DType::F16: return f32_from_f16(f16_from_f32(f));
    case DType::I32: return static_cast<float>(int_from_f32<int32_t>(f));
    case DType::I64: return static_cast<float>(int_from_f32<int64_t>(f));
  }
  return f;
}

// n values stored as `dt` at dst (dtype_size(dt) bytes each), rounded as above; and
// back, widened exactly (an integer past 2^24 to the nearest float). For host buffers:
// graph files, feeds, read-backs, the CPU kernels.
inline void store_as_dtype(const float* src, size_t n, DType dt, void* dst) {
  if (dt == DType::F32) return static_cast<void>(std::memcpy(dst, src, n * sizeof(float)));
  if (dt == DType::I32) {
    auto* ints = static_cast<int32_t*>(dst);
    for (size_t i = 0; i < n; ++i) ints[i] = int_from_f32<int32_t>(src[i]);
    return;
  }
  if (dt == DType::I64) {
    auto* ints = static_cast<int64_t*>(dst);
    for (size_t i = 0; i < n; ++i) ints[i] = int_from_f32<int64_t>(src[i]);
    return;
  }
  auto* bits = static_cast<uint16_t*>(dst);
  const bool bf16 = dt == DType::BF16;
  for (size_t i = 0; i < n; ++i) bits[i] = bf16 ? bf16_from_f32(src[i]) : f16_from_f32(src[i]);
}
inline void load_from_dtype(const void* src, size_t n, DType dt, float* dst) {
  if (dt == DType::F32) return static_cast<void>(std::memcpy(dst, src, n * sizeof(float)));
  if (dt == DType::I32) {
    const auto* ints = static_cast<const int32_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(ints[i]);
    return;
  }
  if (dt == DType::I64) {
    const auto* ints = static_cast<const int64_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(ints[i]);
    return;
  }
  const auto* bits = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) dst[i] = dt == DType::BF16 ? f32_from_bf16(bits[i]) : f32_from_f16(bits[i]);
}

}  // namespace tg
