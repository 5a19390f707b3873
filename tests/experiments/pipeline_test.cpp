// tg-pipeline's host stage: the row-wise augmentation computes exactly what the
// per-element form did (bitwise), for both batch parities and partial last rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "experiments/pipeline/host_stage.h"

namespace tg {

namespace {
// The per-element form preprocess had before (a sign from i / row per element).
std::vector<float> reference(const std::vector<float>& raw, int64_t row, int64_t batch_index) {
  const int64_t n = static_cast<int64_t>(raw.size());
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += raw[static_cast<size_t>(i)];
    sq += static_cast<double>(raw[static_cast<size_t>(i)]) * raw[static_cast<size_t>(i)];
  }
  const double mean = sum / static_cast<double>(n);
  const double var = std::max(0.0, sq / static_cast<double>(n) - mean * mean);
  const float m = static_cast<float>(mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + 1e-6));
  const bool flip = batch_index % 2 == 1;
  std::vector<float> out(raw.size());
  for (int64_t i = 0; i < n; ++i) {
    const float sign = flip && (i / row) % 2 == 1 ? -1.0f : 1.0f;
    out[static_cast<size_t>(i)] = sign * (raw[static_cast<size_t>(i)] - m) * inv;
  }
  return out;
}
}  // namespace

TEST_CASE("tg-pipeline preprocess: row-wise sign equals the per-element form bitwise") {
  struct Shape {
    int64_t n, row;
  };
  for (const Shape s : {Shape{4096, 1024}, Shape{5000, 1024}, Shape{777, 7}, Shape{33, 1}, Shape{10, 64}}) {
    const std::vector<float> raw = pipeline::make_raw_batch(s.n, 42 + static_cast<uint64_t>(s.n));
    for (int64_t batch = 0; batch < 4; ++batch) {
      INFO("n " << s.n << " row " << s.row << " batch " << batch);
      std::vector<float> out(raw.size(), std::nanf(""));  // poisoned: every element must be written
      pipeline::preprocess(raw.data(), out.data(), s.n, s.row, batch);
      const std::vector<float> want = reference(raw, s.row, batch);
      const bool same = std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) == 0;
      if (!same)
        for (size_t i = 0; i < out.size(); ++i)
          if (std::memcmp(&out[i], &want[i], sizeof(float)) != 0) {
            INFO("first mismatch at " << i << ": " << out[i] << " vs " << want[i]);
            CHECK(false);
            break;
          }
      CHECK(same);
      // Odd batches flip odd rows: the two parities differ exactly there.
      if (batch % 2 == 1 && s.n > s.row) CHECK(out[static_cast<size_t>(s.row)] == -reference(raw, s.row, 0)[static_cast<size_t>(s.row)]);
    }
  }
}

TEST_CASE("tg-pipeline preprocess: a row length below 1 is refused") {
  const std::vector<float> raw = pipeline::make_raw_batch(16, 1);
  std::vector<float> out(16);
  CHECK_THROWS_AS(pipeline::preprocess(raw.data(), out.data(), 16, 0, 1), std::invalid_argument);
}

}  // namespace tg
