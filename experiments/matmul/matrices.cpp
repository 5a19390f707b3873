#include "experiments/matmul/matrices.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tg::matmul {

namespace {
uint64_t splitmix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

void fill_uniform(float* x, size_t count, uint64_t seed) {
  const uint64_t base = splitmix(seed);
  for (size_t i = 0; i < count; ++i) {
    // The top 24 bits give every float in [0, 1) on a 2^-24 grid exactly.
    const float u = static_cast<float>(splitmix(base + i) >> 40) * (1.0f / 16777216.0f);
    x[i] = 2.0f * u - 1.0f;
  }
}

void poison_nan(float* x, size_t count) {
  for (size_t i = 0; i < count; ++i) x[i] = std::numeric_limits<float>::quiet_NaN();
}

Tolerance tolerance(const std::string& precision, int64_t k) {
  const double s = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  // Entries of A B have |ref| ~ sqrt(k)/3; these bounds are ~10x the rms error seen
  // in practice, so a real bug (a wrong index, a missing tile) fails by orders of magnitude.
  if (precision == "tf32") return {3e-3 * s, 1e-2};
  // bf16 and fp16: against the CPU's f32 product of the same rounded inputs; both sum in f32
  // (fp32's bound) and the GPU rounds each result once, at most one ulp: 2^-7 (bf16) or
  // 2^-10 (fp16) of |ref|, with half again as margin.
  if (precision == "bf16") return {5e-5 * s, 1.5 / 128};
  if (precision == "fp16") return {5e-5 * s, 1.5 / 1024};
  return {5e-5 * s, 1e-4};
}

Comparison compare(const float* ref, const float* got, int64_t n, const Tolerance& tol) {
  Comparison c;
  for (int64_t i = 0; i < n * n; ++i) {
    const double r = ref[i], g = got[i], err = std::fabs(r - g);
    const bool ok = err <= tol.atol + tol.rtol * std::fabs(r);  // false for NaN too
    if (ok) {
      if (err > c.max_abs_err) c.max_abs_err = err;
      continue;
    }
    c.max_abs_err = std::isnan(err) ? err : std::max(c.max_abs_err, err);
    if (++c.mismatches <= 5)
      c.first += fmt::format("  C({}, {}): reference {:.7g}, got {:.7g}, |diff| {:.3g} > {:.3g}\n", i / n, i % n, r, g,
                             err, tol.atol + tol.rtol * std::fabs(r));
  }
  return c;
}

void spot_check(const float* a, const float* b, const float* c, int64_t n, const std::string& what) {
  if (n == 0) return;
  const Tolerance tol = tolerance("fp32", n);
  for (int s = 0; s < 64; ++s) {
    const int64_t i = static_cast<int64_t>(splitmix(2 * s) % static_cast<uint64_t>(n));
    const int64_t j = static_cast<int64_t>(splitmix(2 * s + 1) % static_cast<uint64_t>(n));
    double ref = 0;
    for (int64_t k = 0; k < n; ++k) ref += static_cast<double>(a[i * n + k]) * b[k * n + j];
    const double got = c[i * n + j], err = std::fabs(ref - got);
    if (!(err <= tol.atol + tol.rtol * std::fabs(ref)))
      throw std::runtime_error(fmt::format("{} n={}: C({}, {}) = {:.7g} but the double-precision dot product is "
                                           "{:.7g} (|diff| {:.3g})", what, n, i, j, got, ref, err));
  }
}

}  // namespace tg::matmul
