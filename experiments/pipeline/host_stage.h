#pragma once
// tg-pipeline's host side: the synthetic "data loader" (raw batches, then
// normalize + augment on the CPU) and the CPU reference of the compute stage.
#include <cstdint>
#include <vector>

namespace tg::pipeline {

// The compute stage, identical on both backends: per element, `work` steps of
// y = fma(y, kDecay, kGain * x) from y = x (a contraction, so rounding stays
// bounded for any work), then two metrics over the batch: loss = mean(y^2) and
// mean(y). `work` sets the arithmetic per byte moved, i.e. compute- vs copy-bound.
constexpr float kDecay = 0.999f;
constexpr float kGain = 0.001f;

struct Metrics {
  float loss = 0, mean = 0;
};

// A raw batch: deterministic pseudo-random values in [0, 255] (pixel-like).
std::vector<float> make_raw_batch(int64_t n, uint64_t seed);
// Normalize (subtract the batch mean, divide by its std) and augment (flip the sign
// of every other row of `row` elements when the batch index is odd: a deterministic
// stand-in for a random flip). Writes n floats to out (pinned staging on the GPU path).
void preprocess(const float* raw, float* out, int64_t n, int64_t row, int64_t batch_index);
// The compute stage on the CPU (double accumulation, the reference).
Metrics compute_cpu(const float* x, int64_t n, int work);

}  // namespace tg::pipeline
