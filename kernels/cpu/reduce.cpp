// Reductions over one axis and their adjoint, broadcast. The tensor is viewed as
// [outer, len, inner] around the axis; sums run in double in a fixed order.
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

void reduce(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool mean) {
  // Stack accumulators for a block of inner positions, so that x is read
  // contiguously (inner is the fastest axis) and each output is rounded once.
  constexpr int64_t kBlock = 1024;
  double acc[kBlock];
  for (int64_t o = 0; o < outer; ++o) {
    const float* xo = x + o * len * inner;
    for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const int64_t w = inner - i0 < kBlock ? inner - i0 : kBlock;
      for (int64_t i = 0; i < w; ++i) acc[i] = 0.0;
      for (int64_t a = 0; a < len; ++a) {
        const float* row = xo + a * inner + i0;
        for (int64_t i = 0; i < w; ++i) acc[i] += row[i];
      }
      for (int64_t i = 0; i < w; ++i) y[o * inner + i0 + i] = static_cast<float>(mean ? acc[i] / static_cast<double>(len) : acc[i]);
    }
  }
}

}  // namespace

void cpu_reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner) {
  reduce(x, y, outer, len, inner, false);
}

void cpu_reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner) {
  reduce(x, y, outer, len, inner, true);
}

void cpu_broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s = 0; s < size; ++s) {
      const float* src = x + o * inner;
      float* dst = y + (o * size + s) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = src[i];
    }
}

}  // namespace tg::kernels
