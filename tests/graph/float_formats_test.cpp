// bf16 and f16 conversions (graph/float_formats.h) against an oracle that knows nothing
// of bit tricks: the sorted list of every finite value of the format, the nearest one
// found by search, ties to the even bit pattern. Every 16-bit pattern, every midpoint
// between neighbours (the ties) and the floats just beside each midpoint are checked.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "graph/float_formats.h"

namespace tg {
namespace {

struct Format {
  const char* name;
  uint16_t (*narrow)(float);
  float (*widen)(uint16_t);
  uint16_t inf_bits;  // +infinity
};
const Format kBf16{"bf16", bf16_from_f32, f32_from_bf16, 0x7F80};
const Format kF16{"f16", f16_from_f32, f32_from_f16, 0x7C00};

bool is_nan_bits(const Format& f, uint16_t h) { return std::isnan(f.widen(h)); }

// Every finite non-negative value of the format with its bits, ascending.
std::vector<std::pair<double, uint16_t>> finite_values(const Format& f) {
  std::vector<std::pair<double, uint16_t>> v;
  for (uint32_t h = 0; h < 0x8000u; ++h) {
    const float x = f.widen(static_cast<uint16_t>(h));
    if (std::isfinite(x)) v.emplace_back(static_cast<double>(x), static_cast<uint16_t>(h));
  }
  std::sort(v.begin(), v.end());
  return v;
}

// The oracle: round |x| to nearest among `table`, ties to the even pattern; past the
// largest value by half its spacing or more, infinity.
uint16_t oracle(const Format& f, const std::vector<std::pair<double, uint16_t>>& table, float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  const double max = table.back().first, spacing = max - table[table.size() - 2].first;
  if (std::isinf(a) || a >= max + spacing / 2) return static_cast<uint16_t>(sign | f.inf_bits);
  auto hi = std::lower_bound(table.begin(), table.end(), std::make_pair(a, uint16_t{0}));
  if (hi == table.end()) return static_cast<uint16_t>(sign | table.back().second);
  if (hi->first == a || hi == table.begin()) return static_cast<uint16_t>(sign | hi->second);
  const auto lo = hi - 1;
  const double dlo = a - lo->first, dhi = hi->first - a;
  const uint16_t pick = dlo < dhi ? lo->second : dhi < dlo ? hi->second : ((lo->second & 1) ? hi->second : lo->second);
  return static_cast<uint16_t>(sign | pick);
}

void check_narrow(const Format& f, const std::vector<std::pair<double, uint16_t>>& table, float x, int& failures) {
  if (std::isnan(x)) return;
  const uint16_t got = f.narrow(x), want = oracle(f, table, x);
  if (got != want && ++failures <= 10)
    FAIL_CHECK(fmt::format("{}: {:a} (bits {:08x}) narrows to {:04x}, the nearest value (ties to even) is {:04x}",
                           f.name, x, f32_bits(x), got, want));
}

}  // namespace

TEST_CASE("float formats: widening then narrowing gives every 16-bit pattern back") {
  for (const Format& f : {kBf16, kF16}) {
    CAPTURE(f.name);
    int failures = 0;
    for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
      const uint16_t bits = static_cast<uint16_t>(h);
      const uint16_t back = f.narrow(f.widen(bits));
      const bool ok = is_nan_bits(f, bits) ? is_nan_bits(f, back) && ((back ^ bits) & 0x8000) == 0 : back == bits;
      if (!ok && ++failures <= 10) FAIL_CHECK(fmt::format("{}: {:04x} -> {:a} -> {:04x}", f.name, bits, f.widen(bits), back));
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("float formats: narrowing rounds to nearest, ties to even, at every midpoint and beside it") {
  for (const Format& f : {kBf16, kF16}) {
    CAPTURE(f.name);
    const auto table = finite_values(f);
    int failures = 0;
    for (size_t i = 0; i + 1 < table.size(); ++i) {
      const float mid = static_cast<float>((table[i].first + table[i + 1].first) / 2);
      REQUIRE(static_cast<double>(mid) == (table[i].first + table[i + 1].first) / 2);  // midpoints are exact in f32
      for (float x : {static_cast<float>(table[i].first), mid, std::nextafter(mid, 0.0f),
                      std::nextafter(mid, std::numeric_limits<float>::infinity())}) {
        check_narrow(f, table, x, failures);
        check_narrow(f, table, -x, failures);
      }
    }
    // Around the overflow threshold and the bottom of the range.
    const double max = table.back().first, spacing = max - table[table.size() - 2].first;
    const float edge = static_cast<float>(max + spacing / 2);
    for (float x : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 1e38f), std::numeric_limits<float>::max(),
                    std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(), 0.0f})
      check_narrow(f, table, x, failures);
    // Random floats over the whole f32 range.
    std::mt19937 rng(17);
    for (int k = 0; k < 200000; ++k) check_narrow(f, table, f32_from_bits(static_cast<uint32_t>(rng())), failures);
    CHECK(failures == 0);
  }
}

TEST_CASE("float formats: NaN stays NaN, never infinity, and round_to_dtype matches the conversions") {
  const float nan_low_payload = f32_from_bits(0x7F800001u);  // would round to inf if treated as a number
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(nan_low_payload))));
  CHECK(std::isnan(f32_from_f16(f16_from_f32(nan_low_payload))));
  CHECK(std::isnan(f32_from_f16(f16_from_f32(-std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f16_from_f32(65504.0f) == 0x7BFF);
  CHECK(f16_from_f32(65519.996f) == 0x7BFF);
  CHECK(f16_from_f32(65520.0f) == 0x7C00);
  CHECK(f16_from_f32(-1e6f) == 0xFC00);
  CHECK(f32_from_f16(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_from_f32(std::ldexp(1.0f, -25)) == 0x0000);                 // a tie, to the even zero
  CHECK(f16_from_f32(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(bf16_from_f32(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);           // a tie, to even 1.0
  CHECK(bf16_from_f32(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);           // a tie, up to the even neighbour
  for (float x : {0.1f, -3.14159f, 1e-6f, 7e4f, 1e30f}) {
    CHECK(round_to_dtype(x, DType::F32) == x);
    CHECK(round_to_dtype(x, DType::BF16) == f32_from_bf16(bf16_from_f32(x)));
    CHECK(round_to_dtype(x, DType::F16) == f32_from_f16(f16_from_f32(x)));
  }
}

}  // namespace tg
