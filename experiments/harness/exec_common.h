#pragma once
// What the executor experiments (tg-launch, tg-train, tg-memory, tg-shapes) share:
// feeds for a model's inputs and a bitwise comparison. The backend for --device is
// tg::make_backend (kernels/backend.h).
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/init.h"
#include "graph/models.h"
#include "kernels/backend.h"
#include "static/executable.h"

namespace tg::bench {

// Random feeds for every input the model declares (recorded once to learn the
// shapes); "labels" gets class indices in [0, classes).
inline Feeds model_feeds(const ModelFn& model, uint64_t seed, int64_t classes = 0) {
  Graph g;
  {
    RecordingBuilder rb(g);
    model(rb);
  }
  Feeds f;
  uint64_t salt = 0;
  for (int id : g.values_with_role(Role::input)) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    std::vector<float> data(static_cast<size_t>(v.shape.numel()));
    if (v.name == "labels") random_labels(data, seed + salt++, classes);
    else random_fill(data, seed + salt++);
    f[v.name] = std::move(data);
  }
  return f;
}

// "" when a and b hold the same bits; else the size difference or the first mismatches.
inline std::string bitwise_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return fmt::format("sizes differ: {} vs {}", a.size(), b.size());
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < a.size() && shown < 5; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      out += fmt::format("[{}] {:.9g} != {:.9g}; ", i, a[i], b[i]);
      ++shown;
    }
  }
  return out;
}

}  // namespace tg::bench
