#pragma once
// Deterministic initial values and random test data. Both executors call these,
// so a parameter starts with the same bits whichever executor runs the model.
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace tg {

// splitmix64: tiny, fast, and good enough for weights and test inputs.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in [lo, hi).
inline float uniform01(uint64_t& state) { return static_cast<float>(splitmix64(state) >> 40) * (1.0f / 16777216.0f); }

// Fills `out` with uniform values in [lo, hi). Never all zeros for lo < hi.
void random_fill(std::vector<float>& out, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// The initial contents of a parameter or optimizer-state value: uniform in
// [-a, a] (a = 0 means 1/sqrt(fan_in), fan_in = the first dim), a constant, or
// the given data (a GraphError when its size is not the shape's).
// The generator is seeded by `seed` and the value's name, not its id, so a graph
// loaded from a file and the same model recorded in code start identically.
std::vector<float> initial_values(const ValueInfo& v, uint64_t seed);
// ParamInit::Kind::seed keeps the seed modulo this: the initial values pass through f32.
constexpr uint64_t kSeedInitModulus = uint64_t{1} << 24;

// Class labels for cross_entropy: integers in [0, classes) stored as floats.
// std::invalid_argument for classes < 1 (with anything to fill).
void random_labels(std::vector<float>& out, uint64_t seed, int64_t classes);

}  // namespace tg
