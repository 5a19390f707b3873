// Attention masks computed at run time, as Hugging Face models export them with an
// attention_mask input (tools/tg-graph/onnx_bool.cpp, GatherND in onnx_lm.cpp): Cast to
// bool, And, Or, Xor and Not of computed bools, GatherND of constant indices, and the
// softmax NaN guard over a mask chosen from finite scalars; each imported graph run on the
// interpreter against the ops' definitions.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/init.h"
#include "graph/validate.h"
#include "kernels/interpreter.h"
#include "tests/onnx/onnx_model_builder.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 1.0f;
  return v;
}

}  // namespace

TEST_CASE("onnx mask: HF's attention mask (Cast to bool, GatherND, And with the causal mask, Where) imports") {
  // scores x [2, 1, 3, 3]; mask [2, 3] int64 (2 reads as true, as a Cast to bool does)
  ModelBuilder mb(20);
  mb.input("mask", {2, 3}, "int64").input("x", {2, 1, 3, 3});
  mb.ints("idx", {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2});  // mask[:, None, None, :] as PyTorch exports it
  mb.m.initializers["idx"].dims = {2, 1, 1, 3, 2};
  mb.ints("causal", {1, 0, 0, 1, 1, 0, 1, 1, 1});
  mb.m.initializers["causal"].dims = {1, 1, 3, 3};
  mb.m.initializers["causal"].type_name = "bool";
  mb.init("zero", {}, {0.0f}).init("lowest", {}, {-FLT_MAX});
  mb.node("Cast", {"mask"}, {"b"}, {{"to", ai(9)}})
      .node("GatherND", {"b", "idx"}, {"g"})
      .node("And", {"causal", "g"}, {"visible"})
      .node("Where", {"visible", "zero", "lowest"}, {"bias"})
      .node("Add", {"x", "bias"}, {"s"})
      .node("Softmax", {"s"}, {"p"}, {{"axis", ai(-1)}})
      .node("IsNaN", {"p"}, {"nan"})
      .node("Where", {"nan", "zero", "p"}, {"y"})
      .output("y");
  const onnx::Imported im = onnx::import_model(mb.m, {}, "test.onnx");
  CHECK(validation_errors(im.graph).empty());
  CHECK(im.graph.values[static_cast<size_t>(im.graph.find_value("mask"))].dtype == DType::I64);
  bool guard_dropped = false;
  for (const std::string& n : im.notes) guard_dropped = guard_dropped || n.find("NaN guard") != std::string::npos;
  CHECK(guard_dropped);
  const std::vector<float> mask = {1, 2, 0, 0, 1, 1}, x = iota(18);
  std::vector<float> want;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i) {
      // The row as f32 computes it: a masked score + the float minimum is the float minimum.
      float s[3], top = -FLT_MAX;
      for (int64_t j = 0; j < 3; ++j) {
        const bool visible = j <= i && mask[static_cast<size_t>(b * 3 + j)] != 0;
        s[j] = x[static_cast<size_t>((b * 3 + i) * 3 + j)] + (visible ? 0.0f : -FLT_MAX);
        top = std::fmax(top, s[j]);
      }
      double sum = 0;
      for (float v : s) sum += std::exp(static_cast<double>(v) - top);
      for (float v : s) want.push_back(static_cast<float>(std::exp(static_cast<double>(v) - top) / sum));
    }
  const std::vector<float> got = run(im.graph, {{"mask", mask}, {"x", x}}, "y");
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-5));
  // The query whose only visible key is masked (batch 1, query 0) spreads evenly, as onnxruntime does.
  CHECK(got[9] == doctest::Approx(1.0 / 3));
}

TEST_CASE("onnx mask: And, Or, Xor and Not of computed bools equal their truth tables") {
  struct Case {
    const char* op;
    std::vector<float> want;  // of a = [0, 1, 0, 3] and b = [0, 0, 2, 1], each nonzero true
  };
  for (const Case& c : std::vector<Case>{{"And", {0, 0, 0, 1}}, {"Or", {0, 1, 1, 1}}, {"Xor", {0, 1, 1, 0}},
                                         {"Not", {1, 0, 1, 0}}}) {
    CAPTURE(c.op);
    ModelBuilder mb;
    const bool unary = std::string(c.op) == "Not";
    mb.input("a", {4}, "int64").node("Cast", {"a"}, {"ab"}, {{"to", ai(9)}});
    std::map<std::string, std::vector<float>> feed{{"a", {0, 1, 0, 3}}};
    if (unary) {
      mb.node("Not", {"ab"}, {"m"});
    } else {
      mb.input("b", {4}, "int64").node("Cast", {"b"}, {"bb"}, {{"to", ai(9)}}).node(c.op, {"ab", "bb"}, {"m"});
      feed["b"] = {0, 0, 2, 1};
    }
    mb.node("Cast", {"m"}, {"y"}, {{"to", ai(1)}}).output("y");
    const Graph g = mb.import();
    CHECK(validation_errors(g).empty());
    CHECK(run(g, feed, "y") == c.want);
  }
  // A bool graph input (i32, here fed 2 for true) with a constant: the constant is where's condition.
  for (const Case& c : std::vector<Case>{{"And", {0, 0, 1, 1}}, {"Or", {1, 0, 1, 1}}, {"Xor", {1, 0, 0, 0}}}) {
    CAPTURE(c.op);
    ModelBuilder mb;
    mb.input("m", {4}, "bool").ints("c", {1, 0, 1, 1});
    mb.node(c.op, {"m", "c"}, {"r"}).node("Cast", {"r"}, {"y"}, {{"to", ai(1)}}).output("y");
    CHECK(run(mb.import(), {{"m", {0, 0, 2, 1}}}, "y") == c.want);
  }
  // And with a constant all true is its other operand: no where for it.
  ModelBuilder all_true;
  all_true.input("a", {2, 3}, "int64").ints("t", {1, 1, 1});
  all_true.node("Cast", {"a"}, {"ab"}, {{"to", ai(9)}}).node("And", {"t", "ab"}, {"m"});
  all_true.node("Cast", {"m"}, {"y"}, {{"to", ai(1)}}).output("y");
  const Graph g = all_true.import();
  CHECK(count_ops(g, OpKind::where) == 1);  // the Cast to bool's
  CHECK(run(g, {{"a", {0, 5, 1, 1, 0, 0}}}, "y") == std::vector<float>{0, 1, 1, 1, 0, 0});
}

TEST_CASE("onnx mask: a constant Cast to bool folds, NaN and nonzero true") {
  ModelBuilder mb;
  mb.input("x", {4}).init("v", {4}, {0.0f, 0.5f, std::nanf(""), -2.0f}).init("one", {}, {1.0f}).init("z", {}, {0.0f});
  mb.node("Cast", {"v"}, {"b"}, {{"to", ai(9)}}).node("Where", {"b", "one", "z"}, {"f"}).node("Add", {"x", "f"}, {"y"});
  mb.output("y");
  const Graph g = mb.import();
  CHECK(count_ops(g, OpKind::where) == 0);
  CHECK(run(g, {{"x", {10, 10, 10, 10}}}, "y") == std::vector<float>{10, 11, 11, 11});
}

TEST_CASE("onnx mask: GatherND of constant indices from a computed tensor equals its definition") {
  const std::vector<float> data = iota(24);  // x [2, 3, 4], through a Relu: computed
  struct Case {
    const char* what;
    int64_t batch_dims;
    Dims idx_dims;
    std::vector<int64_t> idx;
    Shape out;
  };
  const std::vector<Case> cases = {
      {"rows [1, 2] and [0, 0]", 0, {2, 2}, {1, 2, 0, 0}, Shape{2, 4}},
      {"elements, one negative", 0, {2, 3}, {1, 2, 3, 0, -1, 0}, Shape{2}},
      {"a slab", 0, {1, 1}, {-1}, Shape{1, 3, 4}},
      {"batch_dims 1", 1, {2, 1, 1}, {2, 0}, Shape{2, 1, 4}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ModelBuilder mb;
    mb.input("x", {2, 3, 4}).ints("i", c.idx);
    mb.m.initializers["i"].dims = c.idx_dims;
    mb.node("Relu", {"x"}, {"r"}).node("GatherND", {"r", "i"}, {"y"}, {{"batch_dims", ai(c.batch_dims)}}).output("y");
    const Graph g = mb.import();
    REQUIRE(g.values[static_cast<size_t>(g.find_value("y"))].shape == c.out);
    // Each index tuple names data[batch..., i0, ..., ik-1] and takes what is below it.
    const int64_t dims[3] = {2, 3, 4}, k = c.idx_dims.back();
    int64_t tuples = 1, batches = 1;
    for (size_t d = 0; d + 1 < c.idx_dims.size(); ++d) tuples *= c.idx_dims[d];
    for (int64_t d = 0; d < c.batch_dims; ++d) batches *= dims[d];
    std::vector<float> want;
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t at = c.batch_dims ? t / (tuples / batches) : 0, size = 1;
      for (int64_t d = c.batch_dims; d < c.batch_dims + k; ++d) {
        int64_t i = c.idx[static_cast<size_t>(t * k + d - c.batch_dims)];
        at = at * dims[d] + (i < 0 ? i + dims[d] : i);
      }
      for (int64_t d = c.batch_dims + k; d < 3; ++d) size *= dims[d];
      for (int64_t e = 0; e < size; ++e) {
        const float v = data[static_cast<size_t>(at * size + e)];
        want.push_back(v > 0.0f ? v : 0.0f);
      }
    }
    CHECK(run(g, {{"x", data}}, "y") == want);
  }
  auto refusal_of = [](Dims idx_dims, std::vector<int64_t> idx, int64_t batch_dims) {
    ModelBuilder mb;
    mb.input("x", {2, 3, 4}).ints("i", std::move(idx));
    mb.m.initializers["i"].dims = std::move(idx_dims);
    mb.node("Relu", {"x"}, {"r"}).node("GatherND", {"r", "i"}, {"y"}, {{"batch_dims", ai(batch_dims)}}).output("y");
    return refusal(mb);
  };
  CHECK(refusal_of({1, 2}, {0, 3}, 0).find("(GatherND): index 3 is outside dim 1 of [2,3,4] (extent 3)") !=
        std::string::npos);
  CHECK(refusal_of({1, 4}, {0, 0, 0, 0}, 0).find("index tuples have 4 entries for data [2,3,4]") != std::string::npos);
  CHECK(refusal_of({3, 1}, {0, 0, 0}, 1).find("indices [3,1] and data [2,3,4] differ in batch dim 0") !=
        std::string::npos);
}

TEST_CASE("onnx mask: the NaN guard stays, and is refused, when the mask may hold -inf or NaN") {
  // The mask chooses between 0 and a computed tensor, not two finite scalars: a row may be all -inf.
  ModelBuilder mb;
  mb.input("m", {2, 3}, "bool").input("x", {2, 3}).input("low", {2, 3}).init("zero", {}, {0.0f});
  mb.node("Where", {"m", "zero", "low"}, {"bias"})
      .node("Add", {"x", "bias"}, {"s"})
      .node("Softmax", {"s"}, {"p"}, {{"axis", ai(-1)}})
      .node("IsNaN", {"p"}, {"nan"})
      .node("Where", {"nan", "zero", "p"}, {"y"})
      .output("y");
  const std::string why = refusal(mb);
  CHECK_MESSAGE(why.find("(IsNaN): computes IsNaN of a tensor known only at run time") != std::string::npos, why);
}

}  // namespace tg::testing
