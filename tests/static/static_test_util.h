#pragma once
// Shared by the static executor tests: feeds from make_values, bitwise compare.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/models.h"
#include "kernels/interpreter.h"
#include "static/executable.h"
#include "static/shape_strategy.h"
#include "tests/common/models.h"

namespace tg::testing {

// The interpreter's input data for every Role::input value, as feeds.
inline Feeds feeds_from(const Graph& g, const std::vector<std::vector<float>>& values) {
  Feeds f;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].role == Role::input) f[g.values[v].name] = values[v];
  return f;
}

// How many nodes of g run `op`.
inline int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

// A small MLP whose batch is the variable extent (the shape-strategy tests).
inline ShapedModelFn small_mlp_at() { return mlp_model_at(mlp_config(/*batch: varies*/ 0, 12, 16, 3, 5)); }

// A transformer block whose batch varies (seq 8, d_model 16, 2 heads): the bucket
// strategy pads whole sequences, which attention keeps apart.
inline ShapedModelFn small_transformer_at() {
  return transformer_model_at(transformer_config(/*batch: varies*/ 0, 8, 16, 2));
}

// "" when equal bit for bit, else where and how they first differ.
inline std::string bitwise_diff(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return fmt::format("sizes differ: {} vs {}", got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return fmt::format("element {} of {}: {:.9g} vs {:.9g}", i, got.size(), got[i], want[i]);
  return "";
}

}  // namespace tg::testing
