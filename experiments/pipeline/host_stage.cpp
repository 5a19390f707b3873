#include "experiments/pipeline/host_stage.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tg::pipeline {

std::vector<float> make_raw_batch(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (float& x : v) {
    s ^= s << 13;  // xorshift64: cheap, deterministic, never zero
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(s >> 56);  // 0..255
  }
  return v;
}

void preprocess(const float* raw, float* out, int64_t n, int64_t row, int64_t batch_index) {
  if (n < 1 || row < 1) throw std::invalid_argument("preprocess: the batch and its rows need at least one element");
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += raw[i];
    sq += static_cast<double>(raw[i]) * raw[i];
  }
  const double mean = sum / static_cast<double>(n);
  const double var = std::max(0.0, sq / static_cast<double>(n) - mean * mean);
  const float m = static_cast<float>(mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + 1e-6));
  // Row by row with the sign chosen once per row: the same arithmetic per element
  // as a per-element sign, without an integer division by `row` per element, which
  // would make odd batches (the flipped ones) several times slower than even ones,
  // and with an inner loop the compiler vectorizes for either parity.
  const bool flip = batch_index % 2 == 1;
  for (int64_t start = 0, r = 0; start < n; start += row, ++r) {
    const float sign = flip && r % 2 == 1 ? -1.0f : 1.0f;
    const int64_t end = std::min(n, start + row);
    for (int64_t i = start; i < end; ++i) out[i] = sign * (raw[i] - m) * inv;
  }
}

Metrics compute_cpu(const float* x, int64_t n, int work) {
  double s2 = 0, s1 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float c = kGain * x[i];
    float y = x[i];
    for (int k = 0; k < work; ++k) y = std::fma(y, kDecay, c);
    s2 += static_cast<double>(y) * y;
    s1 += y;
  }
  return {static_cast<float>(s2 / static_cast<double>(n)), static_cast<float>(s1 / static_cast<double>(n))};
}

}  // namespace tg::pipeline
