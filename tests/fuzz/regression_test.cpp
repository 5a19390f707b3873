// Regression tests for the bugs that fuzzing the graph-file loader turned up
// (docs/reliability.md, "Fuzzing the graph-file loader"). Built in every build,
// unlike the fuzzer itself.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/validate.h"
#include "tests/graph/graph_equal.h"

using tg::Graph;
using tg::OpKind;

namespace {

std::string scale_graph(const std::string& alpha) {
  return R"({"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [2, 3]}],
             "parameters": [{"name": "w", "shape": [2, 3], "init": {"constant": )" + alpha + R"(}}],
             "nodes": [{"name": "s", "op": "scale", "inputs": ["x"], "attrs": {"alpha": )" + alpha + R"(}}],
             "outputs": ["s"]})";
}

Graph round_trip(const Graph& g) { return tg::load_graph_json(tg::save_graph_json(g), "saved.json"); }

// The order topo_order gave before barrier nodes: direct reader -> update edges.
std::vector<int> reference_order(const Graph& g) {
  const size_t n = g.nodes.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int in : g.nodes[i].inputs) {
      const int p = g.values[static_cast<size_t>(in)].producer;
      if (p >= 0) {
        ++pending[i];
        users[static_cast<size_t>(p)].push_back(static_cast<int>(i));
      }
    }
  const std::vector<std::vector<int>> readers = g.consumers();
  for (size_t i = 0; i < n; ++i) {
    if (!tg::op_is_update(g.nodes[i].op)) continue;
    for (int in : g.nodes[i].inputs)
      for (int j : readers[static_cast<size_t>(in)]) {
        if (tg::op_is_update(g.nodes[static_cast<size_t>(j)].op)) continue;
        ++pending[i];
        users[static_cast<size_t>(j)].push_back(static_cast<int>(i));
      }
  }
  std::vector<int> order, ready;
  auto cmp = [](int a, int b) { return a > b; };
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  std::make_heap(ready.begin(), ready.end(), cmp);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), cmp);
    const int v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (int u : users[static_cast<size_t>(v)])
      if (--pending[static_cast<size_t>(u)] == 0) {
        ready.push_back(u);
        std::push_heap(ready.begin(), ready.end(), cmp);
      }
  }
  return order;
}

tg::ValueInfo leaf(const std::string& name, tg::Role role) {
  tg::ValueInfo v;
  v.name = name;
  v.shape = {4};
  v.role = role;
  return v;
}

// Node `name` = op(inputs); adds its output value unless op is an update.
void add(Graph& g, const std::string& name, OpKind op, std::vector<int> inputs) {
  tg::Node n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  if (!tg::op_is_update(op)) n.outputs.push_back(g.add_value(leaf(name, tg::Role::temporary)));
  g.add_node(std::move(n));
}

}  // namespace

TEST_CASE("fuzz regression: FLT_MAX survives save and load (saved as 3.4028235e+38, which the loader refused)") {
  for (const char* alpha : {"3.4028234663852886e38", "-3.4028234663852886e38", "3.4028235e38"}) {
    CAPTURE(alpha);
    const Graph g = tg::load_graph_json(scale_graph(alpha), "flt_max.json");
    CHECK(std::fabs(g.nodes[0].attrs.alpha) == FLT_MAX);
    CHECK(std::fabs(g.values[static_cast<size_t>(g.find_value("w"))].init.a) == FLT_MAX);
    Graph back;
    REQUIRE_NOTHROW(back = round_trip(g));
    CHECK(tg::testing::graph_difference(g, back) == "");
  }
  // What does not round to a finite float is still refused.
  CHECK_THROWS_WITH_AS(tg::load_graph_json(scale_graph("3.4028236e38"), "big.json"),
                       doctest::Contains("does not fit in a 32-bit float"), tg::GraphError);
}

TEST_CASE("fuzz regression: validation refuses a value of 2^40 elements instead of letting it be allocated") {
  const std::string text = R"({"format": "twograph-graph", "version": 1,
    "inputs": [{"name": "x", "shape": [1099511627776]}], "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}],
    "outputs": ["y"]})";
  const Graph g = tg::load_graph_json(text, "huge.json");
  const std::vector<std::string> errs = tg::validation_errors(g);
  REQUIRE(errs.size() == 2);  // the input and the relu's output
  CHECK(errs[0] == "value 'x': shape [1099511627776] needs 4096 GiB (4398046511104 bytes); a value may hold at "
                   "most 256 GiB, more than any device has; use smaller dims");
  CHECK(errs[1].find("value 'y'") == 0);
  // The limit itself is allowed: 2^36 f32 elements are 256 GiB.
  Graph ok = g;
  ok.values[0].shape = {int64_t{1} << 36};
  ok.values[1].shape = {int64_t{1} << 36};
  CHECK(tg::validation_errors(ok).empty());
}

TEST_CASE("fuzz regression: many updates of one value keep topo_order linear (it made R x U edges)") {
  // 100k readers and 100k updates of w: 10^10 edges (tens of GB) before the fix.
  const int count = 100000;
  Graph g;
  const int w = g.add_value(leaf("w", tg::Role::parameter));
  for (int i = 0; i < count; ++i) add(g, fmt::format("r{}", i), OpKind::relu, {w});
  for (int i = 0; i < count; ++i) add(g, fmt::format("u{}", i), OpKind::sgd, {w, w});
  const std::vector<int> order = g.topo_order();
  REQUIRE(order.size() == g.nodes.size());
  // Readers first, then the updates, each in id order.
  size_t first_wrong = 0;
  while (first_wrong < order.size() && order[first_wrong] == static_cast<int>(first_wrong)) ++first_wrong;
  CHECK(first_wrong == order.size());
}

TEST_CASE("fuzz regression: topo_order with barrier nodes gives the order of direct update edges") {
  std::mt19937 rng(20261202);
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    Graph g;
    std::vector<int> params;
    for (int i = 0; i < 1 + pick(4); ++i) params.push_back(g.add_value(leaf(fmt::format("p{}", i), tg::Role::parameter)));
    const int steps = 1 + pick(30);
    for (int k = 0; k < steps; ++k) {
      std::vector<int> ids;  // every value so far (no update has an output)
      for (size_t v = 0; v < g.values.size(); ++v) ids.push_back(static_cast<int>(v));
      const int kind = pick(4);
      const std::string name = fmt::format("n{}", k);
      if (kind == 0) add(g, name, OpKind::relu, {ids[static_cast<size_t>(pick(static_cast<int>(ids.size())))]});
      else if (kind == 1)
        add(g, name, OpKind::add, {ids[static_cast<size_t>(pick(static_cast<int>(ids.size())))],
                                   ids[static_cast<size_t>(pick(static_cast<int>(ids.size())))]});
      else
        add(g, name, OpKind::sgd, {params[static_cast<size_t>(pick(static_cast<int>(params.size())))],
                                   ids[static_cast<size_t>(pick(static_cast<int>(ids.size())))]});
    }
    // Shuffle the node ids so the heap order matters, then compare.
    std::vector<int> perm(g.nodes.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    Graph s;
    s.values = g.values;
    for (int old_id : perm) s.add_node(g.nodes[static_cast<size_t>(old_id)]);
    CAPTURE(trial);
    CHECK(s.topo_order() == reference_order(s));
  }
}
