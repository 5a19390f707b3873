// The text dump and the DOT export, and the example files under tests/graphs/.
#include <doctest/doctest.h>

#include <string>

#include "graph/builder.h"
#include "graph/dot.h"
#include "graph/json_io.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "tests/graph/graph_equal.h"

namespace {

using namespace tg;

Graph brief_graph() {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {32, 512});
  Value w = b.parameter("w0", {512, 256}, ParamInit{ParamInit::Kind::uniform, 0.05f});
  Value h = b.apply(OpKind::matmul, {x, w}, {}, "n3");
  Value r = relu(b, h, true);
  b.mark_output(r);
  return g;
}

// Parameter `weight` [4] updated by sgd from input g [4], in a node named `node`: a node
// with no output, whose edge from the parameter is the update's.
Graph sgd_graph(const std::string& weight, const std::string& node) {
  Graph g;
  RecordingBuilder b(g);
  const Value w = b.parameter(weight, {4});
  const Value grad = b.input("g", {4});
  b.apply(OpKind::sgd, {w, grad}, {}, node);
  return g;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("text dump: one line per leaf and node") {
  const std::string t = text_dump(brief_graph());
  CHECK_MESSAGE(contains(t, "input x[32,512]\n"), t);
  CHECK_MESSAGE(contains(t, "parameter w0[512,256] init uniform(0.05)\n"), t);
  CHECK_MESSAGE(contains(t, "n3 = matmul(x[32,512], w0[512,256]) -> [32,256] temporary\n"), t);
  CHECK_MESSAGE(contains(t, "n1 = relu(n3[32,256]) {\"in_place\":true} -> [32,256] output\n"), t);
  CHECK_MESSAGE(contains(t, "outputs: n1\n"), t);
}

TEST_CASE("text dump: update ops and broken graphs do not crash it") {
  Graph g = sgd_graph("w", "w.update");
  std::string t = text_dump(g);
  CHECK_MESSAGE(contains(t, "w.update: sgd(w[4], g[4]) {\"lr\":0.01} (updates in place)"), t);
  g.nodes[0].inputs[1] = 99;
  g.outputs.push_back(-3);
  t = text_dump(g);
  CHECK(contains(t, "?99"));
  CHECK(contains(t, "outputs: ?-3"));
}

TEST_CASE("dot: nodes, leaves, edges, shapes and role colours") {
  const std::string d = graph_to_dot(brief_graph(), "brief");
  CHECK(d.rfind("digraph \"brief\" {", 0) == 0);
  CHECK(contains(d, "v0 [shape=ellipse, style=filled, fillcolor=\"#cfe2ff\", label=\"x\\ninput [32,512]\"]"));
  CHECK(contains(d, "v1 [shape=ellipse, style=filled, fillcolor=\"#d1e7dd\", label=\"w0\\nparameter [512,256]\"]"));
  CHECK(contains(d, "n0 [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", label=\"matmul n3\\n[32,256] temporary\"]"));
  CHECK(contains(d, "fillcolor=\"#ffd8a8\", peripheries=2"));  // the output
  CHECK(contains(d, "v0 -> n0 [label=\"0\"]"));
  CHECK(contains(d, "v1 -> n0 [label=\"1\"]"));
  CHECK(contains(d, "n0 -> n1 [label=\"0\"]"));
  CHECK(d.substr(d.size() - 2) == "}\n");
}

TEST_CASE("text dump and dot: a value that is not f32 shows its dtype") {
  Graph g = brief_graph();
  for (ValueInfo& v : g.values) v.dtype = DType::BF16;
  REQUIRE(validation_errors(g).empty());
  const std::string t = text_dump(g);
  CHECK_MESSAGE(contains(t, "input x[32,512] bf16\n"), t);
  CHECK_MESSAGE(contains(t, "-> [32,256] bf16 temporary\n"), t);
  const std::string d = graph_to_dot(g, "brief");
  CHECK_MESSAGE(contains(d, "label=\"x\\ninput [32,512] bf16\"]"), d);
  CHECK_MESSAGE(contains(d, "label=\"matmul n3\\n[32,256] bf16 temporary\"]"), d);
}

TEST_CASE("dot: names are escaped and update edges dashed") {
  const std::string d = graph_to_dot(sgd_graph("w\"odd\\", "up"));
  // listed() quotes the odd name and escapes its backslash; DOT escapes both again.
  CHECK(contains(d, "label=\"'w\\\"odd\\\\\\\\'\\nparameter [4]\""));
  CHECK(contains(d, "v0 -> n0 [label=\"0\", style=dashed]"));
  CHECK(contains(d, "(updates in place)"));
}

TEST_CASE("example files: every file under tests/graphs loads, validates and round-trips") {
  // docs/graph-format.md quotes these files; this test keeps its examples honest.
  for (const char* name : {"minimal", "mlp", "train_step", "attention", "classifier", "padded_loss", "rank6"}) {
    CAPTURE(name);
    const Graph g = load_graph_file(std::string("tests/graphs/") + name + ".json");
    CHECK(validation_errors(g).empty());
    const Graph back = load_graph_json(save_graph_json(g), "saved");
    CHECK(testing::graph_difference(g, back) == "");
  }
}

TEST_CASE("example files: shapes and roles are what the docs say") {
  const Graph mlp = load_graph_file("tests/graphs/mlp.json");
  CHECK(mlp.values[static_cast<size_t>(mlp.find_value("logits"))].shape == Shape{32, 10});
  CHECK(mlp.nodes[static_cast<size_t>(mlp.find_node("a0"))].attrs.in_place);
  const Graph att = load_graph_file("tests/graphs/attention.json");
  CHECK(att.values[static_cast<size_t>(att.find_value("hT"))].shape == Shape{2, 4, 8, 4});
  CHECK(att.values[static_cast<size_t>(att.find_value("probs"))].shape == Shape{8, 8, 8});
  CHECK(att.values[static_cast<size_t>(att.find_value("pooled"))].shape == Shape{8, 4});
  const Graph ts = load_graph_file("tests/graphs/train_step.json");
  CHECK(ts.values[static_cast<size_t>(ts.find_value("dw"))].role == Role::gradient);
  CHECK(ts.values[static_cast<size_t>(ts.find_value("y"))].role == Role::activation);
  CHECK(ts.values[static_cast<size_t>(ts.find_value("w.velocity"))].role == Role::optimizer_state);
  const Graph mp = load_graph_file("tests/graphs/mixed_precision.json");
  CHECK(mp.values[static_cast<size_t>(mp.find_value("xb"))].dtype == DType::BF16);
  CHECK(mp.values[static_cast<size_t>(mp.find_value("r"))].dtype == DType::BF16);
  CHECK(mp.values[static_cast<size_t>(mp.find_value("p"))].dtype == DType::F32);
}
