// The graph passes (static/passes): each pattern on a graph made for it, the cases it
// must leave alone, and every pass on the built-in models: the rewritten graph is
// valid, has the fused ops, and on the CPU (whose fused kernels compute exactly what
// the ops they replace compute) trains to the same bits as the unfused graph.
#include <doctest/doctest.h>

#include <map>

#include "graph/builder.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "static/compiler.h"
#include "static/passes/pass.h"
#include "tests/common/models.h"
#include "tests/static/static_test_util.h"

namespace tg::testing {

namespace {

std::map<OpKind, int> op_counts(const Graph& g) {
  std::map<OpKind, int> c;
  for (const Node& n : g.nodes) ++c[n.op];
  return c;
}

int count(const Graph& g, OpKind op) {
  const auto c = op_counts(g);
  const auto it = c.find(op);
  return it == c.end() ? 0 : it->second;
}

Graph recorded(const std::function<void(RecordingBuilder&)>& f) {
  Graph g;
  RecordingBuilder b(g);
  f(b);
  return g;
}

}  // namespace

TEST_CASE("passes: parse and print the pass sets") {
  CHECK(parse_passes("none").empty());
  CHECK(parse_passes("all") == PassSet::all());
  CHECK(parse_passes("linear").has(PassId::linear));
  CHECK_FALSE(parse_passes("linear").has(PassId::rows));
  CHECK(parse_passes("linear,rows") == PassSet::all());
  CHECK(PassSet::only(PassId::rows).str() == "rows");
  CHECK(PassSet::none().str() == "none");
  CHECK(PassSet::all().str() == "all");
  CHECK_THROWS_WITH_AS(parse_passes("lineer"), doctest::Contains("'lineer' is not a pass"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes("rows,rows"), doctest::Contains("given twice"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes(""), doctest::Contains("is not a pass"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes("rows,"), doctest::Contains("is not a pass"), std::invalid_argument);
}

TEST_CASE("linear pass: matmul + bias_add + relu is one linear; a value read twice or a graph output stays") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value h = relu(b, bias_add(b, matmul(b, x, b.parameter("w", {6, 5})), b.parameter("b", {5})));
    b.mark_output(h);
  });
  const Graph f = pass_linear(g);
  validate(f);
  CHECK(f.nodes.size() == 1);
  CHECK(f.nodes[0].op == OpKind::linear);
  CHECK(f.nodes[0].attrs.act == Act::relu);
  CHECK(f.values[static_cast<size_t>(f.outputs[0])].name == g.values[static_cast<size_t>(g.outputs[0])].name);

  // The pre-activation is an output too: bias_add + matmul fuse, the relu stays.
  const Graph g2 = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value z = bias_add(b, matmul(b, x, b.parameter("w", {6, 5})), b.parameter("b", {5}));
    b.mark_output(relu(b, z));
    b.mark_output(z);
  });
  const Graph f2 = pass_linear(g2);
  validate(f2);
  CHECK(count(f2, OpKind::linear) == 1);
  CHECK(count(f2, OpKind::relu) == 1);

  // The product is read twice: nothing fuses.
  const Graph g3 = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value p = matmul(b, x, b.parameter("w", {6, 5}));
    b.mark_output(add(b, bias_add(b, p, b.parameter("b", {5})), p));
  });
  const Graph f3 = pass_linear(g3);
  CHECK(count(f3, OpKind::matmul) == 1);
  CHECK(count(f3, OpKind::linear) == 0);
}

TEST_CASE("linear pass: GELU fuses in inference, not where gelu_grad reads its input") {
  TransformerConfig t = transformer_config(2, 4, 8, 2);
  const Graph infer = build_inference_graph(transformer_model(without_loss(t)));
  const Graph fi = pass_linear(infer);
  validate(fi);
  CHECK(count(fi, OpKind::gelu) == 0);
  CHECK(count(fi, OpKind::bias_add) == 0);
  CHECK(count(fi, OpKind::linear_add) == 2);  // both residuals
  const Graph train = build_training_graph(transformer_model(t));
  const Graph ft = pass_linear(train);
  validate(ft);
  CHECK(count(ft, OpKind::gelu) == 1);
  CHECK(count(ft, OpKind::matmul_bias_grad) == 6);  // q, k, v, o, fc1, fc2
  CHECK(count(ft, OpKind::matmul_add) >= 2);        // the accumulated gradients of h (q, k and v)
}

TEST_CASE("rows pass: the attention scale folds into softmax and its gradient; layernorm's parameter gradients are one op") {
  const Graph train = build_training_graph(transformer_model(transformer_config(2, 4, 8, 2)));
  const Graph f = pass_rows(train);
  validate(f);
  CHECK(count(train, OpKind::scale) - count(f, OpKind::scale) == 2);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::softmax || n.op == OpKind::softmax_grad) CHECK(n.attrs.alpha != 1.0f);
  CHECK(count(f, OpKind::layernorm_grad_gamma) == 0);
  CHECK(count(f, OpKind::layernorm_grad_params) == 2);
}

namespace {

// Trains `steps` steps with passes none and with `set` on the CPU; every loss and every
// parameter after them must have the same bits.
void check_same_training(const ModelFn& model, PassSet set, int steps) {
  CompileOptions base;
  CompileOptions fused = base;
  fused.passes = set;
  CompiledPlan a = compile(model, base);
  CompiledPlan b = compile(model, fused);
  CHECK(b.graph->nodes.size() < a.graph->nodes.size());
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  const std::vector<std::vector<float>> values = make_values(*a.graph, 3);
  const Feeds feeds = feeds_from(*a.graph, values);
  for (int s = 0; s < steps; ++s) {
    const float la = a.step(feeds), lb = b.step(feeds);
    CHECK_MESSAGE(bitwise_diff({lb}, {la}) == "", "step ", s, " loss ", lb, " vs ", la);
  }
  for (int v : a.graph->values_with_role(Role::parameter)) {
    const std::string& name = a.graph->values[static_cast<size_t>(v)].name;
    CHECK_MESSAGE(bitwise_diff(b.read(name), a.read(name)) == "", "parameter ", name);
  }
}

void check_same_inference(const ModelFn& model, PassSet set) {
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

}  // namespace

TEST_CASE("every pass on the built-in models: fewer nodes, a sound plan, the unfused graph's bits on the CPU") {
  const ModelFn mlp = mlp_model(mlp_config(6, 12, 16, 3, 5));
  const ModelFn tfm = transformer_model(transformer_config(2, 8, 16, 2));
  const ModelFn mlp_ce = mlp_model(mlp_config(6, 12, 16, 3, 5, MlpConfig::Loss::cross_entropy));
  for (PassSet set : {PassSet::only(PassId::linear), PassSet::all()}) {
    CAPTURE(set.str());
    check_same_training(mlp, set, 4);
    check_same_training(mlp_ce, set, 3);
    check_same_training(tfm, set, 3);
    check_same_inference(mlp_model(without_loss(mlp_config(6, 12, 16, 3, 5))), set);
    check_same_inference(transformer_model(without_loss(transformer_config(2, 8, 16, 2))), set);
  }
  check_same_training(tfm, PassSet::only(PassId::rows), 3);
}

TEST_CASE("passes: compile records their time and what each did") {
  CompileOptions o;
  o.passes = PassSet::all();
  CompiledPlan p = compile(mlp_model(mlp_config(6, 12, 16, 3, 5)), o);
  REQUIRE(p.pass_stats.size() == static_cast<size_t>(kNumPasses));
  for (const PassStats& s : p.pass_stats) CHECK(s.nodes_after <= s.nodes_before);
  CHECK(p.timings.passes >= 0.0);
}

}  // namespace tg::testing
