// Slice, Split, Mod of constants and the softmax NaN guard of exported attention
// (tools/tg-graph/onnx_slice.cpp, onnx_fold.cpp, onnx_patterns.cpp), on models built by hand: each imported graph run on the interpreter
// against the definition computed here, and each refusal's message.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "graph/init.h"
#include "kernels/interpreter.h"
#include "tests/onnx/onnx_model_builder.h"

namespace tg::testing {
namespace {

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

// The graph's value `out` after running it on the interpreter with input x.
std::vector<float> run_one(const Graph& g, const std::vector<float>& x, const std::string& out) {
  std::vector<std::vector<float>> values = make_values(g, 0);
  values[static_cast<size_t>(g.find_value("x"))] = x;
  interpret(g, values);
  const int id = g.find_value(out);
  REQUIRE_MESSAGE(id >= 0, "no value ", out);
  return values[static_cast<size_t>(id)];
}

Shape shape_of(const Graph& g, const std::string& v) { return g.values[static_cast<size_t>(g.find_value(v))].shape; }

TEST_CASE("onnx slice: Slice with negative and clamped bounds, and folded on a constant") {
  ModelBuilder mb;  // x [2, 3, 4]: x[1:2, :, -3:100] = x[1, :, 1:4]
  mb.input("x", {2, 3, 4}).ints("starts", {1, -3}).ints("ends", {2, 100}).ints("axes", {0, 2});
  mb.node("Slice", {"x", "starts", "ends", "axes"}, {"y"}).output("y");
  const Graph g = mb.import();
  CHECK(shape_of(g, "y") == Shape{1, 3, 3});
  const std::vector<float> got = run_one(g, iota(24), "y");
  std::vector<float> want;
  for (int j = 0; j < 3; ++j)
    for (int k = 1; k < 4; ++k) want.push_back(static_cast<float>(12 + 4 * j + k));
  CHECK(got == want);
  // On a constant: folded, then added to the input.
  ModelBuilder c;
  c.input("x", {2}).init("t", {2, 3}, {1, 2, 3, 4, 5, 6}).ints("s", {1}).ints("e", {3}).ints("a", {1});
  c.ints("r", {0}).ints("re", {1});
  c.node("Slice", {"t", "s", "e", "a"}, {"cols"}).node("Slice", {"cols", "r", "re"}, {"row"});
  c.ints("shape", {2}).node("Reshape", {"row", "shape"}, {"flat"}).node("Add", {"x", "flat"}, {"y"}).output("y");
  CHECK(run_one(c.import(), {10, 20}, "y") == std::vector<float>{12, 23});
}

TEST_CASE("onnx slice: Split by sizes, into equal parts, and the refusals") {
  ModelBuilder mb;
  mb.input("x", {2, 6}).ints("sizes", {1, 2, 3});
  mb.node("Split", {"x", "sizes"}, {"a", "b", "c"}, {{"axis", ai(1)}}).output("a").output("b").output("c");
  const Graph g = mb.import();
  CHECK(shape_of(g, "a") == Shape{2, 1});
  CHECK(shape_of(g, "c") == Shape{2, 3});
  CHECK(run_one(g, iota(12), "b") == std::vector<float>{1, 2, 7, 8});
  ModelBuilder eq;  // q | k | v of a fused projection, as Hugging Face GPT-2 exports it
  eq.input("x", {1, 2, 9}).node("Split", {"x"}, {"q", "k", "v"}, {{"axis", ai(2)}, {"num_outputs", ai(3)}});
  eq.output("q").output("k").output("v");
  const Graph ge = eq.import();
  CHECK(run_one(ge, iota(18), "v") == std::vector<float>{6, 7, 8, 15, 16, 17});
  ModelBuilder sum;
  sum.input("x", {2, 6}).ints("sizes", {1, 2});
  sum.node("Split", {"x", "sizes"}, {"a", "b"}, {{"axis", ai(1)}}).output("a").output("b");
  CHECK(refusal(sum).find("split sizes [1,2] sum to 3, but axis 1 of [2,6] is 6") != std::string::npos);
  ModelBuilder step;
  step.input("x", {4}).ints("s", {0}).ints("e", {4}).ints("a", {0}).ints("st", {2});
  step.node("Slice", {"x", "s", "e", "a", "st"}, {"y"}).output("y");
  CHECK(refusal(step).find("steps 2 along axis 0: the IR slices with step 1 only") != std::string::npos);
  ModelBuilder empty;
  empty.input("x", {4}).ints("s", {3}).ints("e", {1});
  empty.node("Slice", {"x", "s", "e"}, {"y"}).output("y");
  CHECK(refusal(empty).find("takes nothing along axis 0") != std::string::npos);
}

// scores + mask -> Softmax -> Where(IsNaN(s), 0, s), as PyTorch exports attention.
ModelBuilder guarded_softmax(std::vector<float> mask, bool runtime_mask) {
  ModelBuilder mb;
  mb.input("x", {1, 2, 2});
  if (runtime_mask)
    mb.input("mask", {1, 2, 2});
  else
    mb.init("mask", {1, 2, 2}, std::move(mask));
  mb.init("zero", {}, {0.0f});
  mb.node("Add", {"x", "mask"}, {"z"}).node("Softmax", {"z"}, {"s"}, {{"axis", ai(-1)}});
  mb.node("IsNaN", {"s"}, {"nan"}).node("Where", {"nan", "zero", "s"}, {"y"}).output("y");
  return mb;
}

TEST_CASE("onnx slice: softmax's NaN guard is dropped only where no row can be all masked") {
  const float inf = std::numeric_limits<float>::infinity(), lowest = std::numeric_limits<float>::lowest();
  // A causal mask of the float minimum, as PyTorch writes it: every row keeps its diagonal, and
  // even a row of minima is a finite softmax. The graph is the softmax alone.
  for (const std::vector<float>& mask : {std::vector<float>{0, lowest, 0, 0}, std::vector<float>{lowest, lowest, 0, 0}}) {
    const Graph g = guarded_softmax(mask, false).import();
    int softmaxes = 0;
    for (const Node& n : g.nodes) softmaxes += n.op == OpKind::softmax ? 1 : 0;
    CHECK(softmaxes == 1);
    for (const Node& n : g.nodes) {
      CAPTURE(op_name(n.op));
      CHECK((n.op == OpKind::add || n.op == OpKind::softmax || n.op == OpKind::copy));
    }
    const std::vector<float> y = run_one(g, {0.5f, 1.0f, -1.0f, 2.0f}, "y");
    CHECK(y[0] + y[1] == doctest::Approx(1.0f));
    CHECK(y[2] + y[3] == doctest::Approx(1.0f));
    CHECK(std::isfinite(y[0]));
  }
  // A row all -inf would be NaN: the guard stays, and the model is refused.
  CHECK(refusal(guarded_softmax({-inf, -inf, 0, 0}, false)) != "(imported without an error)");
  // A mask computed at run time (padding) may mask a whole row.
  const std::string runtime = refusal(guarded_softmax({}, true));
  CHECK(runtime.find("IsNaN") != std::string::npos);
  CHECK(runtime.find("run time") != std::string::npos);
}

}  // namespace
}  // namespace tg::testing

namespace tg::testing {

TEST_CASE("onnx shape arithmetic: Mod of constants folds as ONNX defines it, an empty constant Slice folds") {
  // Mod(a, b) cast to float and added to x = 0: the folded values. fmod=0 takes the divisor's
  // sign (Python's %), fmod=1 the dividend's (C's fmod).
  auto folded = [](std::vector<int64_t> a, std::vector<int64_t> b, int64_t fmod) {
    ModelBuilder mb;
    mb.input("x", {4}).ints("a", std::move(a)).ints("b", std::move(b));
    mb.node("Mod", {"a", "b"}, {"m"}, {{"fmod", ai(fmod)}}).node("Cast", {"m"}, {"mf"}, {{"to", ai(1)}});
    mb.node("Add", {"x", "mf"}, {"y"}).output("y");
    return run(mb.import(), {{"x", {0, 0, 0, 0}}}, "y");
  };
  CHECK(folded({7, -7, 7, -7}, {3, 3, -3, -3}, 0) == std::vector<float>{1, 2, -2, -1});
  CHECK(folded({7, -7, 7, -7}, {3, 3, -3, -3}, 1) == std::vector<float>{1, -1, 1, -1});
  ModelBuilder floats;
  floats.input("x", {2}).init("a", {2}, {5.5f, -5.5f}).init("b", {2}, {2.0f, 2.0f});
  floats.node("Mod", {"a", "b"}, {"m"}, {{"fmod", ai(1)}}).node("Add", {"x", "m"}, {"y"}).output("y");
  CHECK(run(floats.import(), {{"x", {0, 0}}}, "y") == std::vector<float>{1.5f, -1.5f});
  floats.m.nodes[0].attrs["fmod"] = ai(0);
  CHECK(refusal(floats).find("(Mod): has fmod=0 on floats") != std::string::npos);
  ModelBuilder computed;
  computed.input("x", {2}, "int64").ints("b", {2, 2});
  computed.node("Mod", {"x", "b"}, {"y"}).output("y");
  CHECK(refusal(computed).find("(Mod): its dividend ('x') is computed at run time") != std::string::npos);
  ModelBuilder zero;
  zero.input("x", {2}).ints("a", {1, 2}).ints("b", {0, 1});
  zero.node("Mod", {"a", "b"}, {"m"}).node("Cast", {"m"}, {"mf"}, {{"to", ai(1)}}).node("Add", {"x", "mf"}, {"y"});
  zero.output("y");
  CHECK(refusal(zero).find("integer modulo by zero") != std::string::npos);

  // shape[2:] of a rank-2 shape is empty, and the Concat after it the shape [6] (the TorchScript
  // exporter's unflatten of a packed projection).
  ModelBuilder empty;
  empty.input("x", {2, 3}).ints("s", {2}).ints("e", {std::numeric_limits<int64_t>::max()}).ints("six", {6});
  empty.node("Shape", {"x"}, {"shape"}).node("Slice", {"shape", "s", "e"}, {"rest"});
  empty.node("Concat", {"six", "rest"}, {"target"}, {{"axis", ai(0)}}).node("Reshape", {"x", "target"}, {"y"});
  empty.output("y");
  const Graph g = empty.import();
  CHECK(g.values[static_cast<size_t>(g.find_value("y"))].shape == Shape{6});
}

}  // namespace tg::testing
