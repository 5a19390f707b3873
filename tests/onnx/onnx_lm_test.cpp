// The ONNX ops of exported language models (tools/tg-graph/onnx_lm.cpp) and the ranks
// they reach: Unsqueeze and Squeeze to 5 and 6 dims in both forms (axes as the input
// from opset 13, as the attribute before), Gather of constant indices from a computed
// tensor, Split, masks of constants; each imported graph run on the interpreter
// against the op's definition.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/interpreter.h"
#include "tests/onnx/onnx_model_builder.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i) - 3.0f;
  return v;
}

// The imported model run on the interpreter with input x; each named output's values and shape.
struct Outputs {
  Graph g;
  std::vector<std::vector<float>> values;
  const std::vector<float>& at(const std::string& name) const {
    const int id = g.find_value(name);
    REQUIRE_MESSAGE(id >= 0, "no value ", name);
    return values[static_cast<size_t>(id)];
  }
  Shape shape(const std::string& name) const { return g.values[static_cast<size_t>(g.find_value(name))].shape; }
};

Outputs import_and_run(const ModelBuilder& mb, const std::vector<float>& x) {
  Outputs o;
  o.g = mb.import();
  o.values = make_values(o.g, 0);
  o.values[static_cast<size_t>(o.g.find_value("x"))] = x;
  interpret(o.g, o.values);
  return o;
}

// A scalar int64 initializer (a Gather index as exporters write it).
void scalar_index(ModelBuilder& mb, const std::string& name, int64_t v) {
  mb.ints(name, {v});
  mb.m.initializers[name].dims.clear();
}

}  // namespace

TEST_CASE("onnx lm: Unsqueeze to 5 and 6 dims and Squeeze back, axes as input (opset 13+) or attribute (opset 11)") {
  const Dims x{2, 3, 4};
  const std::vector<float> data = iota(24);
  for (int64_t opset : {11, 18}) {
    CAPTURE(opset);
    ModelBuilder mb(opset);
    mb.input("x", x);
    auto axes = [&](const char* name, std::vector<int64_t> v) -> std::map<std::string, Attribute> {
      if (opset < 13) return {{"axes", aints(v)}};
      mb.ints(name, v);
      return {};
    };
    const auto up5 = axes("a5", {0, -2});     // [1, 2, 3, 1, 4]
    const auto up6 = axes("a6", {5});          // [1, 2, 3, 1, 4, 1]
    const auto down = axes("a3", {0, 3, -1});  // [2, 3, 4]
    auto ins = [&](const char* v, const char* a) {
      return opset < 13 ? std::vector<std::string>{v} : std::vector<std::string>{v, a};
    };
    mb.node("Unsqueeze", ins("x", "a5"), {"u5"}, up5).node("Unsqueeze", ins("u5", "a6"), {"u6"}, up6);
    mb.node("Relu", {"u6"}, {"r6"}).node("Squeeze", ins("r6", "a3"), {"y"}, down).output("y").output("u6");
    const Outputs o = import_and_run(mb, data);
    CHECK(o.shape("u5") == Shape{1, 2, 3, 1, 4});
    CHECK(o.shape("u6") == Shape{1, 2, 3, 1, 4, 1});
    CHECK(o.shape("y") == Shape{2, 3, 4});
    std::vector<float> want = data;
    for (float& v : want) v = v > 0.0f ? v : 0.0f;
    CHECK(o.at("y") == want);
  }
}

TEST_CASE("onnx lm: a seventh dim is refused, naming the node") {
  ModelBuilder mb;
  mb.input("x", {1, 2, 1, 2, 1, 2}).ints("a", {0}).node("Unsqueeze", {"x", "a"}, {"y"}).output("y");
  const std::string why = refusal(mb);
  CHECK_MESSAGE(why.find("node 'n0' (Unsqueeze)") != std::string::npos, why);
  CHECK_MESSAGE(why.find("at most 6") != std::string::npos, why);
}

TEST_CASE("onnx lm: Gather of constant indices from a computed tensor equals indexing") {
  // x [3, 2, 4] (nn.MultiheadAttention's packed q, k, v along axis 0)
  const std::vector<float> data = iota(24);
  struct Case {
    const char* what;
    int64_t axis;
    std::vector<int64_t> idx;  // empty: the scalar index `scalar`
    int64_t scalar;
    Shape out;
  };
  const std::vector<Case> cases = {{"scalar 1 on axis 0", 0, {}, 1, Shape{2, 4}},
                                   {"scalar -1 on axis 2", 2, {}, -1, Shape{3, 2}},
                                   {"[2, 0, 1] on axis 0", 0, {2, 0, 1}, 0, Shape{3, 2, 4}},
                                   {"[1, 2, 3] on the last axis", -1, {1, 2, 3}, 0, Shape{3, 2, 3}},
                                   {"[0, 0] on axis 1", 1, {0, 0}, 0, Shape{3, 2, 4}}};
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ModelBuilder mb;
    mb.input("x", {3, 2, 4});
    if (c.idx.empty()) scalar_index(mb, "i", c.scalar);
    else mb.ints("i", c.idx);
    mb.node("Relu", {"x"}, {"r"}).node("Gather", {"r", "i"}, {"y"}, {{"axis", ai(c.axis)}}).output("y");
    const Outputs o = import_and_run(mb, data);
    REQUIRE(o.shape("y") == c.out);
    const int64_t axis = c.axis < 0 ? c.axis + 3 : c.axis;
    const std::vector<int64_t> picks = c.idx.empty() ? std::vector<int64_t>{c.scalar} : c.idx;
    const int64_t dims[3] = {3, 2, 4};
    std::vector<float> want;
    // out[i0, k, i2] with the gathered axis replaced by the picks, in row-major order.
    for (int64_t a = 0; a < (axis == 0 ? static_cast<int64_t>(picks.size()) : dims[0]); ++a)
      for (int64_t b = 0; b < (axis == 1 ? static_cast<int64_t>(picks.size()) : dims[1]); ++b)
        for (int64_t e = 0; e < (axis == 2 ? static_cast<int64_t>(picks.size()) : dims[2]); ++e) {
          int64_t i[3] = {a, b, e};
          int64_t& k = i[axis];
          k = picks[static_cast<size_t>(k)];
          if (k < 0) k += dims[axis];
          const float v = data[static_cast<size_t>((i[0] * 2 + i[1]) * 4 + i[2])];
          want.push_back(v > 0.0f ? v : 0.0f);
        }
    CHECK(o.at("y") == want);
  }
  ModelBuilder out_of_range;
  out_of_range.input("x", {3, 2}).ints("i", {3}).node("Gather", {"x", "i"}, {"y"}).output("y");
  CHECK(refusal(out_of_range).find("index 3 is outside axis 0 of [3,2] (extent 3)") != std::string::npos);
}

TEST_CASE("onnx lm: Split by sizes (input or attribute) and into equal chunks equals slicing") {
  const std::vector<float> data = iota(2 * 7);  // x [2, 7], split along axis 1
  struct Case {
    const char* what;
    int64_t opset;
    std::vector<int64_t> sizes;  // empty: equal chunks (num_outputs from opset 18)
    bool as_input;
    std::vector<int64_t> want;   // the sizes the outputs get
  };
  const std::vector<Case> cases = {{"sizes input", 18, {2, 4, 1}, true, {2, 4, 1}},
                                   {"sizes attribute (opset 11)", 11, {3, 4}, false, {3, 4}},
                                   {"num_outputs 3 of 7: 3, 3, 1", 18, {}, false, {3, 3, 1}}};
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ModelBuilder mb(c.opset);
    mb.input("x", {2, 7});
    std::vector<std::string> outs;
    for (size_t i = 0; i < c.want.size(); ++i) outs.push_back("y" + std::to_string(i));
    std::map<std::string, Attribute> at{{"axis", ai(-1)}};
    std::vector<std::string> ins{"x"};
    if (c.sizes.empty()) at["num_outputs"] = ai(static_cast<int64_t>(outs.size()));
    else if (c.as_input) mb.ints("s", c.sizes), ins.push_back("s");
    else at["split"] = aints(c.sizes);
    mb.node("Split", ins, outs, at);
    for (const std::string& o : outs) mb.output(o);
    const Outputs o = import_and_run(mb, data);
    int64_t start = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      CHECK(o.shape(outs[i]) == Shape{2, c.want[i]});
      std::vector<float> want;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t k = 0; k < c.want[i]; ++k) want.push_back(data[static_cast<size_t>(r * 7 + start + k)]);
      CHECK(o.at(outs[i]) == want);
      start += c.want[i];
    }
  }
  ModelBuilder bad;
  bad.input("x", {2, 7}).ints("s", {2, 2}).node("Split", {"x", "s"}, {"a", "b"}, {{"axis", ai(1)}}).output("a");
  CHECK(refusal(bad).find("split sizes [2,2] sum to 4, but axis 1 of [2,7] is 7") != std::string::npos);
}

}  // namespace tg::testing

namespace tg::testing {

TEST_CASE("onnx lm: a causal mask built of constants (LessOrEqual, And, Not, Where) folds into an added constant") {
  // rows [3, 1] and columns [1, 3]: key j is visible to query i when j <= i (and not masked by `keep`)
  ModelBuilder mb;
  mb.input("x", {2, 3, 3}).ints("rows", {0, 1, 2}).ints("cols", {0, 1, 2}).ints("keep", {1, 1, 0});
  mb.m.initializers["rows"].dims = {3, 1};
  mb.init("zero", {}, {0.0f}).init("low", {}, {-1e9f});
  mb.node("LessOrEqual", {"cols", "rows"}, {"causal"})
      .node("And", {"causal", "keep"}, {"visible"})
      .node("Not", {"visible"}, {"hidden"})
      .node("Where", {"hidden", "low", "zero"}, {"bias"})
      .node("Add", {"x", "bias"}, {"y"})
      .output("y");
  const std::vector<float> data = iota(18);
  const Outputs o = import_and_run(mb, data);
  std::vector<float> want;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const bool visible = j <= i && j != 2;
        want.push_back(data[static_cast<size_t>((b * 3 + i) * 3 + j)] + (visible ? 0.0f : -1e9f));
      }
  CHECK(o.at("y") == want);
  for (const Node& n : o.g.nodes) CHECK(std::string(op_name(n.op)) != "where");
  // Equal, Less, Greater, GreaterOrEqual, Or, Xor and IsNaN of constants: their definitions.
  struct Case {
    const char* op;
    std::vector<int64_t> want;  // of a = [0, 1, 2] and b = [1, 1, 1]
  };
  for (const Case& c : std::vector<Case>{{"Equal", {0, 1, 0}}, {"Less", {1, 0, 0}}, {"Greater", {0, 0, 1}},
                                         {"GreaterOrEqual", {0, 1, 1}}, {"Or", {1, 1, 1}}, {"Xor", {1, 0, 0}}}) {
    CAPTURE(c.op);
    ModelBuilder cmp;
    cmp.input("x", {3}).ints("a", {0, 1, 2}).ints("b", {1, 1, 1}).init("one", {}, {1.0f}).init("zero", {}, {0.0f});
    cmp.node(c.op, {"a", "b"}, {"m"}).node("Where", {"m", "one", "zero"}, {"f"}).node("Mul", {"x", "f"}, {"y"}).output("y");
    std::vector<float> want;
    for (int64_t v : c.want) want.push_back(static_cast<float>(v) * 2.0f);
    CHECK(import_and_run(cmp, {2.0f, 2.0f, 2.0f}).at("y") == want);
  }
  ModelBuilder nan;
  nan.input("x", {2}).init("v", {2}, {std::nanf(""), 1.0f}).init("zero", {}, {0.0f});
  nan.node("IsNaN", {"v"}, {"m"}).node("Where", {"m", "zero", "v"}, {"c"}).node("Add", {"x", "c"}, {"y"}).output("y");
  CHECK(import_and_run(nan, {1.0f, 1.0f}).at("y") == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("onnx lm: a comparison of a computed tensor is refused, naming the node") {
  ModelBuilder mb;
  mb.input("x", {2, 3}).init("z", {}, {0.0f}).node("Less", {"x", "z"}, {"m"}).output("m");
  const std::string why = refusal(mb);
  CHECK_MESSAGE(why.find("node 'n0' (Less): computes Less of a tensor known only at run time: the IR has no comparison "
                         "or NaN test") != std::string::npos, why);
}

}  // namespace tg::testing

namespace tg::testing {

TEST_CASE("onnx lm: Expand of a constant folds, as numpy broadcasts it") {
  ModelBuilder mb;
  mb.input("x", {2, 3}).init("row", {1, 3}, {1.0f, 2.0f, 3.0f}).ints("shape", {2, 1});
  mb.node("Expand", {"row", "shape"}, {"e"}).node("Add", {"x", "e"}, {"y"}).output("y");
  const Outputs o = import_and_run(mb, {0, 0, 0, 10, 10, 10});
  CHECK(o.at("y") == std::vector<float>{1, 2, 3, 11, 12, 13});
  CHECK(o.g.find_node("e") < 0);  // folded: no node computes it
}

}  // namespace tg::testing
