#pragma once
// Shared by the graph-pass tests (tests/static/passes_*.cpp): op counts, graphs recorded
// for a pattern, and the checks that a pass keeps a graph's bits on the CPU, where every
// fused kernel computes exactly what the ops it replaces compute.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/graph.h"
#include "static/compiler.h"
#include "static/passes/pass.h"
#include "static/planner.h"
#include "tests/static/static_test_util.h"

namespace tg::testing {

inline std::map<OpKind, int> op_counts(const Graph& g) {
  std::map<OpKind, int> c;
  for (const Node& n : g.nodes) ++c[n.op];
  return c;
}

inline int count(const Graph& g, OpKind op) {
  const auto c = op_counts(g);
  const auto it = c.find(op);
  return it == c.end() ? 0 : it->second;
}

// The pass options with the optimizer pass's GEMM-update tile threshold lowered to
// `tiles`, so that small weights fuse.
inline PassOptions gemm_update_tiles(int64_t tiles) {
  PassOptions o;
  o.gemm_update_min_tiles = tiles;
  return o;
}

// Compile options that differ from the defaults in their pass options only.
inline CompileOptions with_pass_options(const PassOptions& p) {
  CompileOptions o;
  o.pass_options = p;
  return o;
}

inline Graph recorded(const std::function<void(RecordingBuilder&)>& f) {
  Graph g;
  RecordingBuilder b(g);
  f(b);
  return g;
}

// Trains both plans (of one model) `steps` steps on `feeds`: every loss and every
// parameter after them must have the same bits.
inline void check_same_steps(CompiledPlan& a, CompiledPlan& b, int steps, const Feeds& feeds) {
  for (int s = 0; s < steps; ++s) {
    const float la = a.step(feeds), lb = b.step(feeds);
    CHECK_MESSAGE(bitwise_diff({lb}, {la}) == "", "step ", s, " loss ", lb, " vs ", la);
  }
  for (int v : a.graph->values_with_role(Role::parameter)) {
    const std::string& name = a.graph->values[static_cast<size_t>(v)].name;
    CHECK_MESSAGE(bitwise_diff(b.read(name), a.read(name)) == "", "parameter ", name);
  }
}

// The same on feeds made for a's graph (make_values).
inline void check_same_steps(CompiledPlan& a, CompiledPlan& b, int steps) {
  check_same_steps(a, b, steps, feeds_from(*a.graph, make_values(*a.graph, 3)));
}

// Trains `steps` steps with passes none and with `set` (on the CPU unless `base` names a
// backend); every loss and every parameter after them must have the same bits.
inline void check_same_training(const ModelFn& model, PassSet set, int steps, CompileOptions base = {}) {
  CompileOptions fused = base;
  fused.passes = set;
  CompiledPlan a = compile(model, base);
  CompiledPlan b = compile(model, fused);
  // Every pass but lanes (which marks nodes, static/passes/lanes.cpp) removes nodes.
  if (set == PassSet::only(PassId::lanes)) CHECK(b.graph->nodes.size() == a.graph->nodes.size());
  else CHECK(b.graph->nodes.size() < a.graph->nodes.size());
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  check_same_steps(a, b, steps);
}

inline void check_same_inference(const ModelFn& model, PassSet set) {
  CompileOptions base;
  base.training = false;
  CompileOptions fused = base;
  fused.passes = set;
  CompiledPlan a = compile(model, base);
  CompiledPlan b = compile(model, fused);
  CHECK(b.graph->nodes.size() < a.graph->nodes.size());
  const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 5));
  a.run(feeds);
  b.run(feeds);
  const std::string out = a.graph->values[static_cast<size_t>(a.prediction)].name;
  CHECK(bitwise_diff(b.read(out), a.read(out)) == "");
}

// A graph made for a pattern, run `runs` times on the CPU static executor unfused and
// with `set`, with the same feeds and `opt`'s plan options: every graph output, parameter
// and optimizer state must end with the same bits. Returns the rewritten graph.
inline Graph check_same_graph(const Graph& g, PassSet set, int runs = 1, CompileOptions opt = {}) {
  const Feeds feeds = feeds_from(g, make_values(g, 11));
  opt.passes = PassSet::none();
  CompiledPlan a = compile_graph(g, -1, opt);
  opt.passes = set;
  CompiledPlan b = compile_graph(g, -1, opt);
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  for (int r = 0; r < runs; ++r) {
    a.run(feeds);
    b.run(feeds);
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& info = g.values[v];
    bool output = false;
    for (int o : g.outputs) output = output || o == static_cast<int>(v);
    if (!output && info.role != Role::parameter && info.role != Role::optimizer_state) continue;
    CHECK_MESSAGE(bitwise_diff(b.read(info.name), a.read(info.name)) == "", "value ", info.name);
  }
  return *b.graph;
}

}  // namespace tg::testing
