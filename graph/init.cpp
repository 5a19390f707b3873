#include "graph/init.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "graph/errors.h"

namespace tg {

namespace {
uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

void random_fill(std::vector<float>& out, uint64_t seed, float lo, float hi) {
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  for (float& x : out) x = lo + (hi - lo) * uniform01(state);
}

std::vector<float> initial_values(const ValueInfo& v, uint64_t seed) {
  if (v.init.kind == ParamInit::Kind::data) {
    if (!v.init.data || static_cast<int64_t>(v.init.data->size()) != v.shape.numel())
      graph_error("parameter '{}': its given values hold {} floats, but its shape {} has {}; load weights that "
                  "match the graph", v.name, v.init.data ? v.init.data->size() : 0, v.shape.str(), v.shape.numel());
    return *v.init.data;
  }
  std::vector<float> out(static_cast<size_t>(v.shape.numel()));
  if (v.init.kind == ParamInit::Kind::seed) {
    if (!out.empty()) out[0] = static_cast<float>(seed % kSeedInitModulus);
    return out;
  }
  if (v.init.kind == ParamInit::Kind::constant) {
    for (float& x : out) x = v.init.a;
    return out;
  }
  if (v.init.kind == ParamInit::Kind::running_stats) {
    if (v.shape.rank != 2 || v.shape[0] != 2)
      graph_error("parameter '{}': running_stats initializes a [2, C] (the running mean, then the running "
                  "variance), not {}", v.name, v.shape.str());
    std::fill(out.begin() + v.shape[1], out.end(), 1.0f);
    return out;
  }
  float a = v.init.a;
  if (a == 0.0f) a = 1.0f / std::sqrt(static_cast<float>(v.shape.rank > 0 ? v.shape[0] : 1));
  uint64_t state = seed ^ hash_name(v.name);
  for (float& x : out) x = -a + 2.0f * a * uniform01(state);
  return out;
}

void random_labels(std::vector<float>& out, uint64_t seed, int64_t classes) {
  // A class count below 1 would divide by zero below.
  if (classes < 1 && !out.empty())
    throw std::invalid_argument("random_labels: " + std::to_string(classes) +
                                " classes; class indices need a class count >= 1");
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& x : out) x = static_cast<float>(splitmix64(state) % static_cast<uint64_t>(classes));
}

}  // namespace tg
