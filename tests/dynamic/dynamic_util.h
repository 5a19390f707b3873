#pragma once
// Shared by the dynamic executor's CPU and CUDA tests: the reference run (the
// interpreter over build_training_graph) and bitwise comparison helpers.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dynamic/trainer.h"
#include "graph/training.h"
#include "kernels/interpreter.h"
#include "tests/common/models.h"

namespace tg::testing {

constexpr uint64_t kSeed = 42;

// The reference: the training graph, its values (make_values) and the feeds the
// dynamic trainer gets (the same input vectors, by name).
struct Reference {
  Graph g;
  std::vector<std::vector<float>> values;
  Feeds feeds;
  explicit Reference(const ModelFn& model, const TrainOptions& opt = {}) : g(build_training_graph(model, opt)) {
    values = make_values(g, kSeed);
    for (size_t i = 0; i < g.values.size(); ++i)
      if (g.values[i].role == Role::input) feeds[g.values[i].name] = values[i];
  }
  float step() {
    interpret(g, values);
    return values[static_cast<size_t>(g.outputs[0])][0];  // the loss is the first output
  }
  const std::vector<float>& value(const std::string& name) const {
    const int id = g.find_value(name);
    REQUIRE_MESSAGE(id >= 0, "no value named " << name);
    return values[static_cast<size_t>(id)];
  }
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Element i where |a - b| > atol + rtol*|b| first, or -1.
inline long first_mismatch(const std::vector<float>& a, const std::vector<float>& b, float atol, float rtol) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (!(d <= atol + rtol * (b[i] < 0 ? -b[i] : b[i]))) return static_cast<long>(i);
  }
  return -1;
}

inline MlpConfig small_mlp() { return mlp_config(4, 8, 16, 3, 5); }
inline TransformerConfig small_transformer() { return transformer_config(2, 4, 8, 2, /*mlp_ratio*/ 2); }

}  // namespace tg::testing
