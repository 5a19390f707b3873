// Masks filled with -inf into a softmax (tools/tg-graph/onnx_infinite_fill.cpp) and
// GatherElements (onnx_lm.cpp): each imported graph run on the interpreter against the ONNX
// definitions, the one difference (a row masked whole, no NaN guard) checked as documented,
// and the refusals with their messages.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "graph/validate.h"
#include "tests/onnx/onnx_model_builder.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

bool has_note(const onnx::Imported& im, const std::string& part) {
  for (const std::string& n : im.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// ONNX's softmax over rows of `n` of x + fill where masked: NaN for a row masked whole.
std::vector<float> masked_softmax(const std::vector<float>& x, const std::vector<bool>& masked, size_t n) {
  std::vector<float> y;
  for (size_t r = 0; r < x.size(); r += n) {
    double top = -kInf, sum = 0;
    for (size_t k = r; k < r + n; ++k)
      if (!masked[k]) top = std::fmax(top, x[k]);
    for (size_t k = r; k < r + n; ++k) sum += masked[k] ? 0.0 : std::exp(x[k] - top);
    for (size_t k = r; k < r + n; ++k)
      y.push_back(static_cast<float>(masked[k] ? (sum > 0 ? 0.0 : std::nan("")) : std::exp(x[k] - top) / sum));
  }
  return y;
}

const std::vector<float> kScores = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -2.0f, 1.5f, 0.0f, -0.5f, 1.0f, 2.5f, -1.5f};

// scores x [2, 2, 3] + where(pad, -inf, 0) of pad [2, 3] seen as [2, 1, 3], into a softmax;
// pad's second row masks every key. With `guard`, the export's Where(IsNaN(s), 0, s).
ModelBuilder padded_attention(bool guard) {
  ModelBuilder mb;
  mb.input("pad", {2, 3}, "bool").input("x", {2, 2, 3}).init("ninf", {}, {-kInf}).init("zero", {}, {0.0f});
  mb.ints("shape", {2, 1, 3});
  mb.node("Where", {"pad", "ninf", "zero"}, {"fill"})
      .node("Reshape", {"fill", "shape"}, {"bias"})
      .node("Add", {"x", "bias"}, {"s"})
      .node("Softmax", {"s"}, {guard ? "p" : "y"}, {{"axis", ai(-1)}});
  if (guard) mb.node("IsNaN", {"p"}, {"nan"}).node("Where", {"nan", "zero", "p"}, {"y"});
  mb.output("y");
  return mb;
}

const std::vector<float> kPad = {0, 1, 0, 1, 1, 1};  // batch 1 masks every key
std::vector<bool> pad_per_score() {
  std::vector<bool> masked;
  for (size_t b = 0; b < 2; ++b)
    for (size_t q = 0; q < 2; ++q)
      for (size_t k = 0; k < 3; ++k) masked.push_back(kPad[b * 3 + k] != 0);
  return masked;
}

}  // namespace

TEST_CASE("onnx -inf fill: an additive -inf mask into a softmax imports, a row masked whole uniform, not NaN") {
  const onnx::Imported im = onnx::import_model(padded_attention(false).m, {}, "test.onnx");
  CHECK(validation_errors(im.graph).empty());
  CHECK(has_note(im, "imported as the lowest finite number"));
  const std::vector<float> got = run(im.graph, {{"pad", kPad}, {"x", kScores}}, "y");
  const std::vector<float> want = masked_softmax(kScores, pad_per_score(), 3);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < 6; ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-6));  // exact zeros included
  CHECK(got[1] == 0.0f);
  // ONNX's softmax of a row of -inf is NaN; the lowest float's is uniform (the documented difference).
  for (size_t k = 6; k < 12; ++k) {
    CHECK(std::isnan(want[k]));
    CHECK(got[k] == doctest::Approx(1.0 / 3));
  }
}

TEST_CASE("onnx -inf fill: the softmax's NaN guard gives 0 for a row masked whole, as in ONNX") {
  const onnx::Imported im = onnx::import_model(padded_attention(true).m, {}, "test.onnx");
  CHECK(validation_errors(im.graph).empty());
  CHECK(has_note(im, "as a choice on the row's count of kept entries"));
  const std::vector<float> got = run(im.graph, {{"pad", kPad}, {"x", kScores}}, "y");
  std::vector<float> want = masked_softmax(kScores, pad_per_score(), 3);
  for (float& v : want) v = std::isnan(v) ? 0.0f : v;  // Where(IsNaN(s), 0, s)
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-6));
  for (size_t k = 6; k < 12; ++k) CHECK(got[k] == 0.0f);
}

TEST_CASE("onnx -inf fill: Where(mask, -inf, scores) straight into a softmax imports") {
  ModelBuilder mb;
  mb.input("m", {4, 3}, "bool").input("x", {4, 3}).init("ninf", {}, {-kInf});
  mb.node("Where", {"m", "ninf", "x"}, {"s"}).node("Softmax", {"s"}, {"y"}, {{"axis", ai(-1)}}).output("y");
  const std::vector<float> m = {1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0};
  std::vector<bool> masked;
  for (float v : m) masked.push_back(v != 0);
  const std::vector<float> got = run(mb.import(), {{"m", m}, {"x", kScores}}, "y");
  const std::vector<float> want = masked_softmax(kScores, masked, 3);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-6));
}

TEST_CASE("onnx -inf fill: refused where the -inf does not only feed a softmax") {
  auto why = [](const ModelBuilder& mb) { return refusal(mb); };
  const std::string hint = "a -inf mask fill imports where a Where's -inf reaches a Softmax's input";
  {  // the fill read by a Relu, not a softmax
    ModelBuilder mb;
    mb.input("m", {2, 3}, "bool").input("x", {2, 3}).init("ninf", {}, {-kInf}).init("zero", {}, {0.0f});
    mb.node("Where", {"m", "ninf", "zero"}, {"f"}).node("Add", {"x", "f"}, {"s"}).node("Relu", {"s"}, {"y"});
    mb.output("y");
    const std::string w = why(mb);
    CHECK_MESSAGE(w.find("(Where): 'ninf' holds -inf at element 0; it becomes a parameter") != std::string::npos, w);
    CHECK_MESSAGE(w.find(hint) != std::string::npos, w);
  }
  {  // the fill also a graph output
    ModelBuilder mb;
    mb.input("m", {2, 3}, "bool").input("x", {2, 3}).init("ninf", {}, {-kInf}).init("zero", {}, {0.0f});
    mb.node("Where", {"m", "ninf", "zero"}, {"f"}).node("Add", {"x", "f"}, {"s"});
    mb.node("Softmax", {"s"}, {"y"}, {{"axis", ai(-1)}}).output("y").output("f");
    CHECK(why(mb).find("holds -inf at element 0") != std::string::npos);
  }
  {  // two fills added into one softmax: neither is the scores, so the second stays and is refused
    ModelBuilder mb;
    mb.input("m", {2, 3}, "bool").input("n", {2, 3}, "bool").init("ninf", {}, {-kInf}).init("zero", {}, {0.0f});
    mb.node("Where", {"m", "ninf", "zero"}, {"f"}).node("Where", {"n", "zero", "ninf"}, {"g"});
    mb.node("Add", {"f", "g"}, {"s"}).node("Softmax", {"s"}, {"y"}, {{"axis", ai(-1)}}).output("y");
    CHECK(why(mb).find("(Where): 'ninf' holds -inf at element 0") != std::string::npos);
  }
  {  // masked_fill form with a NaN guard: no count of kept entries to read, so the -inf stays
    ModelBuilder mb;
    mb.input("m", {2, 3}, "bool").input("x", {2, 3}).init("ninf", {}, {-kInf}).init("zero", {}, {0.0f});
    mb.node("Where", {"m", "ninf", "x"}, {"s"}).node("Softmax", {"s"}, {"p"}, {{"axis", ai(-1)}});
    mb.node("IsNaN", {"p"}, {"nan"}).node("Where", {"nan", "zero", "p"}, {"y"}).output("y");
    CHECK(why(mb).find("holds -inf at element 0") != std::string::npos);
  }
}

TEST_CASE("onnx GatherElements: constant indices from a computed tensor equal the definition") {
  const Dims data_dims = {2, 3, 4};
  std::vector<float> data;
  for (int k = 0; k < 24; ++k) data.push_back(0.5f * static_cast<float>(k) + 1.0f);  // > 0: the Relu keeps it
  struct Case {
    int64_t axis;
    Dims idx_dims;
    std::vector<int64_t> idx;
  };
  const std::vector<Case> cases = {
      {0, {1, 3, 4}, {1, 0, 1, 0, 0, 0, 1, 1, 1, 0, -1, 0}},
      {1, {2, 2, 4}, {2, 0, 1, 1, 0, 0, 0, -1, 1, 2, 2, 0, 0, 1, 2, 0}},
      {-1, {2, 3, 2}, {3, 0, 1, 1, 0, 2, 2, 3, 0, 0, 1, 3}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.axis);
    ModelBuilder mb;
    mb.input("x", data_dims).ints("i", c.idx);
    mb.m.initializers["i"].dims = c.idx_dims;
    mb.node("Relu", {"x"}, {"r"}).node("GatherElements", {"r", "i"}, {"y"}, {{"axis", ai(c.axis)}}).output("y");
    const Graph g = mb.import();
    CHECK(validation_errors(g).empty());
    // out[i, j, k] = data[i, j, k] with the axis's coordinate replaced by indices[i, j, k].
    const size_t axis = static_cast<size_t>(c.axis < 0 ? c.axis + 3 : c.axis);
    std::vector<float> want;
    for (int64_t i = 0; i < c.idx_dims[0]; ++i)
      for (int64_t j = 0; j < c.idx_dims[1]; ++j)
        for (int64_t k = 0; k < c.idx_dims[2]; ++k) {
          int64_t at[3] = {i, j, k};
          const int64_t v = c.idx[static_cast<size_t>((i * c.idx_dims[1] + j) * c.idx_dims[2] + k)];
          at[axis] = v < 0 ? v + data_dims[axis] : v;
          want.push_back(data[static_cast<size_t>((at[0] * 3 + at[1]) * 4 + at[2])]);
        }
    CHECK(run(g, {{"x", data}}, "y") == want);
  }
}

TEST_CASE("onnx GatherElements: of constants folds, bad and computed indices are refused") {
  {  // BERT's token type ids, a constant buffer gathered: folded, no IR node for it
    ModelBuilder mb;
    mb.input("x", {2, 3}).init("buf", {2, 3}, {1, 2, 3, 4, 5, 6}).ints("i", {2, 0, 1, 0, 0, 2});
    mb.m.initializers["i"].dims = {2, 3};
    mb.node("GatherElements", {"buf", "i"}, {"g"}, {{"axis", ai(1)}}).node("Add", {"x", "g"}, {"y"}).output("y");
    const Graph g = mb.import();
    CHECK(count_ops(g, OpKind::slice) == 0);
    CHECK(run(g, {{"x", {0, 0, 0, 0, 0, 0}}}, "y") == std::vector<float>{3, 1, 2, 4, 4, 6});
  }
  auto refusal_of = [](Dims idx_dims, std::vector<int64_t> idx) {
    ModelBuilder mb;
    mb.input("x", {2, 3}).ints("i", std::move(idx));
    mb.m.initializers["i"].dims = std::move(idx_dims);
    mb.node("Relu", {"x"}, {"r"}).node("GatherElements", {"r", "i"}, {"y"}, {{"axis", ai(1)}}).output("y");
    return refusal(mb);
  };
  CHECK(refusal_of({1, 2}, {0, 3}).find("(GatherElements): index 3 is outside axis 1 of [2,3] (extent 3)") !=
        std::string::npos);
  CHECK(refusal_of({2}, {0, 1}).find("indices [2] and data [2,3] differ in rank") != std::string::npos);
  CHECK(refusal_of({3, 1}, {0, 0, 0}).find("indices [3,1] reach past data [2,3] in dim 0") != std::string::npos);
  ModelBuilder computed;
  computed.input("x", {2, 3}).input("i", {2, 3}, "int64");
  computed.node("GatherElements", {"x", "i"}, {"y"}, {{"axis", ai(1)}}).output("y");
  const std::string why = refusal(computed);
  CHECK_MESSAGE(why.find("(GatherElements): its indices ('i') is computed at run time") != std::string::npos, why);
}

}  // namespace tg::testing
