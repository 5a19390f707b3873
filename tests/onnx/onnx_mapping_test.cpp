// The ONNX -> IR mapping op by op, on models built by hand as tg::onnx::Model (no
// libonnx needed): each imported graph run on the interpreter against the op's
// definition computed here directly, and each refusal's message.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/validate.h"
#include "graph/init.h"
#include "kernels/interpreter.h"
#include "tests/onnx/onnx_model_builder.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

std::vector<float> seq(int64_t n, float scale = 0.1f, float offset = -0.3f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + scale * static_cast<float>((i * 7) % 11);
  return v;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

// The flat index into `d` (broadcast to `out`) of output element `flat`.
size_t bidx(size_t flat, const Dims& out, const Dims& d) {
  size_t idx = 0, stride_out = 1, stride_d = 1;
  for (size_t k = out.size(); k-- > 0;) {
    const size_t coord = (flat / stride_out) % static_cast<size_t>(out[k]);
    const size_t j = k + d.size() - out.size();
    if (k + d.size() >= out.size() && d[j] != 1) idx += coord * stride_d;
    if (k + d.size() >= out.size()) stride_d *= static_cast<size_t>(d[j]);
    stride_out *= static_cast<size_t>(out[k]);
  }
  return idx;
}

TEST_CASE("onnx mapping: Add, Sub, Mul with numpy broadcasting equal their definition") {
  const Dims da{2, 3, 4};
  const std::vector<float> a = seq(24);
  for (const Dims& db : {Dims{3, 1}, Dims{4}, Dims{1, 3, 4}, Dims{2, 1, 4}, Dims{2, 3, 4}}) {
    for (const char* op : {"Add", "Sub", "Mul"}) {
      CAPTURE(op);
      CAPTURE(db.size());
      int64_t nb = 1;
      for (int64_t x : db) nb *= x;
      const std::vector<float> b = seq(nb, 0.05f, 0.2f);
      for (bool b_first : {false, true}) {
        ModelBuilder mb;
        mb.input("a", da).input("b", db);
        mb.node(op, b_first ? std::vector<std::string>{"b", "a"} : std::vector<std::string>{"a", "b"}, {"y"}).output("y");
        const std::vector<float> got = run(mb.import(), {{"a", a}, {"b", b}}, "y");
        std::vector<float> want(24);
        for (size_t i = 0; i < 24; ++i) {
          const float x = a[i], y = b[bidx(i, da, db)];
          const float l = b_first ? y : x, r = b_first ? x : y;
          want[i] = std::string(op) == "Add" ? l + r : std::string(op) == "Sub" ? l - r : l * r;
        }
        check_close(got, want);
      }
    }
  }
}

TEST_CASE("onnx mapping: constants that are one value become scale and bias adds, Div by a constant, Neg, Pow 2 and 3") {
  const std::vector<float> x = seq(6);
  struct Case {
    const char* op;
    bool const_first;
    float k;
    float (*f)(float, float);
  };
  const Case cases[] = {{"Mul", false, 2.5f, [](float v, float k) { return v * k; }},
                        {"Div", false, 4.0f, [](float v, float k) { return v * (1.0f / k); }},
                        {"Add", true, 0.75f, [](float v, float k) { return v + k; }},
                        {"Sub", false, 0.75f, [](float v, float k) { return v - k; }},
                        {"Sub", true, 0.75f, [](float v, float k) { return k - v; }},
                        {"Pow", false, 2.0f, [](float v, float) { return v * v; }},
                        {"Pow", false, 3.0f, [](float v, float) { return v * (v * v); }}};
  for (const Case& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.const_first);
    ModelBuilder mb;
    mb.input("x", {2, 3}).init("k", {}, {c.k});
    mb.node(c.op, c.const_first ? std::vector<std::string>{"k", "x"} : std::vector<std::string>{"x", "k"}, {"y"});
    mb.output("y");
    const Graph g = mb.import();
    CHECK(g.values_with_role(Role::parameter).empty());  // folded into attributes, not a weight
    std::vector<float> want;
    for (float v : x) want.push_back(c.f(v, c.k));
    check_close(run(g, {{"x", x}}, "y"), want);
  }
  ModelBuilder neg;
  neg.input("x", {2, 3}).node("Neg", {"x"}, {"y"}).output("y");
  std::vector<float> want;
  for (float v : x) want.push_back(-v);
  check_close(run(neg.import(), {{"x", x}}, "y"), want);
}

TEST_CASE("onnx mapping: Gemm with transA, transB, alpha, beta and each shape of C") {
  const int64_t m = 3, k = 4, n = 5;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const Dims& dc : {Dims{n}, Dims{1, n}, Dims{m, n}}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(dc.size());
        const std::vector<float> a = seq(m * k), b = seq(k * n, 0.07f, -0.2f);
        const std::vector<float> c = seq(dc.size() == 2 ? dc[0] * dc[1] : n, 0.03f, 0.1f);
        ModelBuilder mb;
        mb.input("a", ta ? Dims{k, m} : Dims{m, k}).init("b", tb ? Dims{n, k} : Dims{k, n}, b).init("c", dc, c);
        mb.node("Gemm", {"a", "b", "c"}, {"y"}, {{"transA", ai(ta)}, {"transB", ai(tb)}, {"alpha", af(0.5f)}, {"beta", af(2.0f)}});
        mb.output("y");
        const std::vector<float> got = run(mb.import(), {{"a", a}}, "y");
        std::vector<float> want(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < k; ++p)
              s += static_cast<double>(a[static_cast<size_t>(ta ? p * m + i : i * k + p)]) *
                   b[static_cast<size_t>(tb ? j * k + p : p * n + j)];
            const float cv = c[static_cast<size_t>(dc == Dims{m, n} ? i * n + j : j)];
            want[static_cast<size_t>(i * n + j)] = static_cast<float>(0.5 * s + 2.0 * cv);
          }
        check_close(got, want);
      }
    }
  }
}

TEST_CASE("onnx mapping: MatMul of 4-D stacks (attention's heads), of 3-D by 2-D, and of 2-D") {
  struct Case {
    Dims a, b;
  };
  for (const Case& c : {Case{{2, 3, 4, 5}, {2, 3, 5, 2}}, Case{{2, 4, 5}, {5, 3}}, Case{{4, 5}, {5, 3}},
                        Case{{2, 3, 4, 5}, {5, 2}}}) {
    CAPTURE(c.a.size());
    CAPTURE(c.b.size());
    int64_t na = 1, nb = 1;
    for (int64_t x : c.a) na *= x;
    for (int64_t x : c.b) nb *= x;
    const std::vector<float> a = seq(na), b = seq(nb, 0.05f, -0.1f);
    ModelBuilder mb;
    mb.input("a", c.a).input("b", c.b).node("MatMul", {"a", "b"}, {"y"}).output("y");
    const std::vector<float> got = run(mb.import(), {{"a", a}, {"b", b}}, "y");
    const int64_t M = c.a[c.a.size() - 2], K = c.a.back(), N = c.b.back();
    const int64_t batches = na / (M * K);
    const bool shared_b = c.b.size() == 2;
    std::vector<float> want;
    for (int64_t s = 0; s < batches; ++s)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < K; ++p)
            acc += static_cast<double>(a[static_cast<size_t>((s * M + i) * K + p)]) *
                   b[static_cast<size_t>(((shared_b ? 0 : s) * K + p) * N + j)];
          want.push_back(static_cast<float>(acc));
        }
    check_close(got, want);
  }
}

TEST_CASE("onnx mapping: Reshape (0 and -1), Flatten, Squeeze and Unsqueeze give ONNX's shapes") {
  auto shape_of = [](const ModelBuilder& mb) {
    const Graph g = mb.import();
    return g.values[static_cast<size_t>(g.outputs[0])].shape;
  };
  ModelBuilder r;
  r.input("x", {2, 3, 4}).ints("s", {0, -1}).node("Reshape", {"x", "s"}, {"y"}).output("y");
  CHECK(shape_of(r) == Shape{2, 12});
  ModelBuilder f;
  f.input("x", {2, 3, 4}).node("Flatten", {"x"}, {"y"}, {{"axis", ai(2)}}).output("y");
  CHECK(shape_of(f) == Shape{6, 4});
  ModelBuilder u;
  u.input("x", {2, 3}).ints("axes", {0, 3}).node("Unsqueeze", {"x", "axes"}, {"y"}).output("y");
  CHECK(shape_of(u) == Shape{1, 2, 3, 1});
  ModelBuilder u11(11);  // axes as an attribute before opset 13
  u11.input("x", {2, 3}).node("Unsqueeze", {"x"}, {"y"}, {{"axes", aints({1})}}).output("y");
  CHECK(shape_of(u11) == Shape{2, 1, 3});
  ModelBuilder s;
  s.input("x", {1, 3, 1}).node("Squeeze", {"x"}, {"y"}).output("y");
  CHECK(shape_of(s) == Shape{3});
  ModelBuilder t;
  t.input("x", {2, 3, 4}).node("Transpose", {"x"}, {"y"}).output("y");  // default: reversed
  CHECK(shape_of(t) == Shape{4, 3, 2});
}

TEST_CASE("onnx mapping: ReduceMean and ReduceSum over several axes, with and without keepdims") {
  const std::vector<float> x = seq(24);
  for (const char* op : {"ReduceMean", "ReduceSum"}) {
    for (int keep : {0, 1}) {
      CAPTURE(op);
      CAPTURE(keep);
      ModelBuilder mb;
      mb.input("x", {2, 3, 4}).ints("axes", {0, -1});
      mb.node(op, {"x", "axes"}, {"y"}, {{"keepdims", ai(keep)}}).output("y");
      const Graph g = mb.import();
      CHECK(g.values[static_cast<size_t>(g.outputs[0])].shape == (keep ? Shape{1, 3, 1} : Shape{3}));
      std::vector<float> want(3, 0.0f);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) want[static_cast<size_t>(j)] += x[static_cast<size_t>((i * 3 + j) * 4 + k)];
      if (std::string(op) == "ReduceMean")
        for (float& w : want) w /= 8.0f;
      check_close(run(g, {{"x", x}}, "y"), want);
    }
  }
}

TEST_CASE("onnx mapping: shape arithmetic folds to constants (Shape, Gather, Unsqueeze, Concat, Cast, Sqrt, Div)") {
  ModelBuilder mb;
  mb.input("x", {2, 3, 4});
  mb.node("Shape", {"x"}, {"shape"});
  mb.ints("zero", {0});
  mb.node("Gather", {"shape", "zero"}, {"batch"});  // [2]
  mb.ints("minus1", {-1});
  mb.node("Concat", {"batch", "minus1"}, {"target"}, {{"axis", ai(0)}});  // [2, -1]
  mb.node("Reshape", {"x", "target"}, {"flat"});
  mb.init("four", {}, {4.0f});
  mb.node("Sqrt", {"four"}, {"two"});
  mb.node("Div", {"flat", "two"}, {"y"}).output("y");
  const Graph g = mb.import();
  CHECK(g.values[static_cast<size_t>(g.outputs[0])].shape == Shape{2, 12});
  CHECK(g.values_with_role(Role::parameter).empty());
  const std::vector<float> x = seq(24);
  std::vector<float> want;
  for (float v : x) want.push_back(v * 0.5f);
  check_close(run(g, {{"x", x}}, "y"), want);
}

TEST_CASE("onnx mapping: Softmax's axis by opset, LayerNormalization without a bias, Relu, Gelu tanh, Identity") {
  ModelBuilder mb(11);  // Softmax's default axis is 1 before opset 13: the last axis of a matrix
  mb.input("x", {2, 3}).node("Softmax", {"x"}, {"s"}).output("s");
  const std::vector<float> x = seq(6);
  std::vector<float> want(6);
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(static_cast<double>(x[static_cast<size_t>(r * 3 + c)]));
    for (int c = 0; c < 3; ++c) want[static_cast<size_t>(r * 3 + c)] = static_cast<float>(std::exp(x[static_cast<size_t>(r * 3 + c)]) / z);
  }
  check_close(run(mb.import(), {{"x", x}}, "s"), want);

  ModelBuilder ln;
  ln.input("x", {2, 3}).init("g", {3}, {1.0f, 2.0f, 0.5f});
  ln.node("LayerNormalization", {"x", "g"}, {"y"}, {{"epsilon", af(1e-3f)}}).output("y");
  std::vector<float> wl(6);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 3; ++c) mean += x[static_cast<size_t>(r * 3 + c)] / 3.0;
    for (int c = 0; c < 3; ++c) var += std::pow(x[static_cast<size_t>(r * 3 + c)] - mean, 2) / 3.0;
    const float gamma[3] = {1.0f, 2.0f, 0.5f};
    for (int c = 0; c < 3; ++c)
      wl[static_cast<size_t>(r * 3 + c)] = static_cast<float>((x[static_cast<size_t>(r * 3 + c)] - mean) / std::sqrt(var + 1e-3) * gamma[c]);
  }
  check_close(run(ln.import(), {{"x", x}}, "y"), wl, 1e-4);

  ModelBuilder act;
  act.input("x", {2, 3}).node("Relu", {"x"}, {"r"}).node("Identity", {"r"}, {"i"});
  act.node("Gelu", {"i"}, {"y"}, {{"approximate", as("tanh")}}).output("y");
  std::vector<float> wg;
  for (float v : x) {
    const double r = std::max(0.0f, v);
    wg.push_back(static_cast<float>(0.5 * r * (1 + std::tanh(std::sqrt(2 / M_PI) * (r + 0.044715 * r * r * r)))));
  }
  check_close(run(act.import(), {{"x", x}}, "y"), wg, 1e-4);

  // Dropout in inference (training_mode false, as model.eval() exports it) is the identity.
  ModelBuilder drop;
  drop.input("x", {2, 3}).init("ratio", {}, {0.1f}).ints("mode", {0});
  drop.node("Dropout", {"x", "ratio", "mode"}, {"d"}).node("Relu", {"d"}, {"y"}).output("y");
  const Graph dg = drop.import();
  for (const Node& n : dg.nodes) CHECK(n.op != OpKind::dropout);
  std::vector<float> wr;
  for (float v : x) wr.push_back(std::max(0.0f, v));
  check_close(run(dg, {{"x", x}}, "y"), wr, 1e-6);
}

TEST_CASE("onnx mapping: the tanh GELU formula fuses to one gelu in each order of its factors, only when closed") {
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
  auto formula = [](int order, bool leak) {
    ModelBuilder mb;
    mb.input("x", {2, 3});
    mb.init("c3", {}, {3.0f}).init("k1", {}, {0.044715f}).init("k0", {}, {0.7978845608f});
    mb.init("one", {}, {1.0f}).init("half", {}, {0.5f});
    mb.node("Pow", {"x", "c3"}, {"cube"}).node("Mul", {"k1", "cube"}, {"m1"}).node("Add", {"x", "m1"}, {"inner"});
    mb.node("Mul", {"inner", "k0"}, {"u"}).node("Tanh", {"u"}, {"t"}).node("Add", {"one", "t"}, {"onet"});
    if (order == 0) mb.node("Mul", {"x", "onet"}, {"p"}).node("Mul", {"p", "half"}, {"y"});
    if (order == 1) mb.node("Mul", {"half", "x"}, {"h"}).node("Mul", {"h", "onet"}, {"y"});
    if (order == 2) mb.node("Mul", {"onet", "half"}, {"q"}).node("Mul", {"x", "q"}, {"y"});
    mb.output("y");
    if (leak) mb.output("t");  // an intermediate read outside: the formula is not closed
    return mb;
  };
  const std::vector<float> x = seq(6);
  std::vector<float> want;
  for (float v : x) want.push_back(static_cast<float>(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))));
  for (int order = 0; order < 3; ++order) {
    CAPTURE(order);
    const Graph g = formula(order, false).import();
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].op == OpKind::gelu);
    check_close(run(g, {{"x", x}}, "y"), want, 1e-4);
  }
  // An intermediate read outside: the formula is not closed, and imports op by op (tanh too).
  const Graph leaked = formula(0, true).import();
  CHECK(leaked.nodes.size() > 1);
  check_close(run(leaked, {{"x", x}}, "y"), want, 1e-4);
}

TEST_CASE("onnx mapping: the exact GELU formula fuses to one gelu_erf, dividing by sqrt 2 or multiplying by its inverse, only when closed") {
  // x * 0.5 * (1 + erf(x / sqrt(2))): PyTorch's export of nn.GELU() before opset 20.
  auto formula = [](int order, bool mul_form, bool leak) {
    ModelBuilder mb;
    mb.input("x", {2, 3});
    mb.init("s2", {}, {1.4142135f}).init("r2", {}, {0.70710678f}).init("one", {}, {1.0f}).init("half", {}, {0.5f});
    if (mul_form) mb.node("Mul", {"r2", "x"}, {"u"});
    else mb.node("Div", {"x", "s2"}, {"u"});
    mb.node("Erf", {"u"}, {"e"}).node("Add", {"e", "one"}, {"onee"});
    if (order == 0) mb.node("Mul", {"x", "onee"}, {"p"}).node("Mul", {"p", "half"}, {"y"});
    if (order == 1) mb.node("Mul", {"x", "half"}, {"h"}).node("Mul", {"h", "onee"}, {"y"});
    if (order == 2) mb.node("Mul", {"onee", "half"}, {"q"}).node("Mul", {"q", "x"}, {"y"});
    mb.output("y");
    if (leak) mb.output("e");
    return mb;
  };
  const std::vector<float> x = seq(6, 0.4f, -2.0f);
  std::vector<float> want;
  for (float v : x) want.push_back(static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
  for (bool mul_form : {false, true})
    for (int order = 0; order < 3; ++order) {
      CAPTURE(mul_form);
      CAPTURE(order);
      const Graph g = formula(order, mul_form, false).import();
      REQUIRE(g.nodes.size() == 1);
      CHECK(g.nodes[0].op == OpKind::gelu_erf);
      check_close(run(g, {{"x", x}}, "y"), want, 1e-5);
    }
  // Not closed: the Erf is left standing, and the IR has no erf.
  CHECK(refusal(formula(0, false, true)).find("the IR has no erf") != std::string::npos);
}

TEST_CASE("onnx mapping: Tanh, Sigmoid, Exp, Log and Gelu in both forms against their definitions") {
  const std::vector<float> x = seq(6, 0.3f, -1.2f);
  struct Case {
    const char* op;
    OpKind kind;
    double (*f)(double);
    float shift;  // added to x: Log reads positive inputs
  };
  const Case cases[] = {
      {"Tanh", OpKind::tanh, [](double v) { return std::tanh(v); }, 0.0f},
      {"Sigmoid", OpKind::sigmoid, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 0.0f},
      {"Exp", OpKind::exp, [](double v) { return std::exp(v); }, 0.0f},
      {"Log", OpKind::log, [](double v) { return std::log(v); }, 1.5f},
  };
  for (const Case& c : cases) {
    CAPTURE(c.op);
    ModelBuilder mb;
    mb.input("x", {2, 3}).node(c.op, {"x"}, {"y"}).output("y");
    const Graph g = mb.import();
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].op == c.kind);
    std::vector<float> in, want;
    for (float v : x) {
      in.push_back(v + c.shift);
      want.push_back(static_cast<float>(c.f(in.back())));
    }
    check_close(run(g, {{"x", in}}, "y"), want, 1e-6);
    // A constant operand folds at import: y = op(k) + x, one add of a constant.
    ModelBuilder folded;
    folded.input("x", {2, 3}).init("k", {2, 3}, in).node(c.op, {"k"}, {"ok"}).node("Add", {"ok", "x"}, {"y"}).output("y");
    std::vector<float> want_folded;
    for (size_t i = 0; i < x.size(); ++i) want_folded.push_back(want[i] + x[i]);
    check_close(run(folded.import(), {{"x", x}}, "y"), want_folded, 1e-6);
  }
  // Gelu: "none" (the default and opset 20's nn.GELU()) is the exact form; "tanh" the approximation.
  for (int explicit_none = 0; explicit_none < 2; ++explicit_none) {
    ModelBuilder mb(20);
    std::map<std::string, Attribute> attrs;
    if (explicit_none) attrs["approximate"] = as("none");
    mb.input("x", {2, 3}).node("Gelu", {"x"}, {"y"}, attrs).output("y");
    const Graph g = mb.import();
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].op == OpKind::gelu_erf);
    std::vector<float> want;
    for (float v : x) want.push_back(static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
    check_close(run(g, {{"x", x}}, "y"), want, 1e-6);
  }
}

TEST_CASE("onnx mapping: the LayerNorm formula of older opsets fuses to one layernorm") {
  ModelBuilder mb(14);
  mb.input("x", {2, 4}).init("two", {}, {2.0f}).init("eps", {}, {1e-5f});
  mb.init("g", {4}, {1.0f, 0.5f, 2.0f, 1.5f}).init("b", {4}, {0.1f, 0.0f, -0.1f, 0.2f});
  const std::map<std::string, Attribute> axes{{"axes", aints({-1})}};
  mb.node("ReduceMean", {"x"}, {"mean"}, axes).node("Sub", {"x", "mean"}, {"d"}).node("Pow", {"d", "two"}, {"sq"});
  mb.node("ReduceMean", {"sq"}, {"var"}, axes).node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"s"});
  mb.node("Div", {"d", "s"}, {"n"}).node("Mul", {"n", "g"}, {"ng"}).node("Add", {"ng", "b"}, {"y"}).output("y");
  const Graph g = mb.import();
  int layernorms = 0;
  for (const Node& n : g.nodes) layernorms += n.op == OpKind::layernorm;
  CHECK(layernorms == 1);
  CHECK(g.nodes.size() == 1);
}

TEST_CASE("onnx mapping: dead nodes and initializers no output needs are left out") {
  ModelBuilder mb;
  mb.input("x", {2, 3}).init("unused", {3}, {1, 2, 3}).init("w", {3, 2}, seq(6));
  mb.node("Relu", {"x"}, {"dead"}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  const Graph g = mb.import();
  CHECK(g.find_value("dead") < 0);
  CHECK(g.find_value("unused") < 0);
  CHECK(g.values_with_role(Role::parameter).size() == 1);
  CHECK(g.values[static_cast<size_t>(g.find_value("w"))].init.kind == ParamInit::Kind::data);
}

TEST_CASE("onnx mapping: a dim the file fixes below 1, or leaves without size or name, is no case for --dim") {
  ModelBuilder negative;
  negative.input("x", {-5, 4}).node("Relu", {"x"}, {"y"}).output("y");
  const std::string neg = refusal(negative);
  CHECK(neg.find("dim 0 is -5 in the file, a size no tensor can have") != std::string::npos);
  CHECK(neg.find("--dim") == std::string::npos);
  ModelBuilder nameless;
  nameless.symbolic_input("x", "?", 4).node("Relu", {"x"}, {"y"}).output("y");
  CHECK(refusal(nameless).find("has neither a size nor a name in the file, so --dim cannot set it") !=
        std::string::npos);
}

TEST_CASE("onnx mapping: --dim fills symbolic dims, --loss appends mse or cross_entropy with its input") {
  ModelBuilder mb;
  mb.symbolic_input("x", "batch", 4).init("w", {4, 3}, seq(12)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  CHECK(refusal(mb).find("give its value with --dim batch=N") != std::string::npos);
  onnx::ImportOptions o;
  o.dims["batch"] = 5;
  o.loss = onnx::ImportOptions::Loss::mse;
  Graph g = mb.import(o);
  CHECK(g.values[static_cast<size_t>(g.find_value("x"))].shape == Shape{5, 4});
  REQUIRE(g.find_value("target") >= 0);
  CHECK(g.values[static_cast<size_t>(g.find_value("target"))].shape == Shape{5, 3});
  CHECK(g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(g.find_value("loss"))].producer)].op == OpKind::mse_loss);
  o.loss = onnx::ImportOptions::Loss::cross_entropy;
  g = mb.import(o);
  CHECK(g.values[static_cast<size_t>(g.find_value("labels"))].shape == Shape{5});
}

TEST_CASE("onnx mapping: float16 and bfloat16 inputs, initializers and Cast keep their dtype in the graph") {
  ModelBuilder mb;
  mb.input("x", {2, 3}, "float16").init("w", {3, 2}, {0.5f, -1.0f, 0.25f, 2.0f, -0.125f, 1.5f});
  mb.m.initializers["w"].dtype = DType::F16;
  mb.node("MatMul", {"x", "w"}, {"h"}).node("Cast", {"h"}, {"h32"}, {{"to", ai(1)}});
  mb.node("Relu", {"h32"}, {"r"}).node("Cast", {"r"}, {"same"}, {{"to", ai(1)}});
  mb.node("Cast", {"same"}, {"y"}, {{"to", ai(16)}}).output("y");
  const Graph g = mb.import();
  CHECK(validation_errors(g).empty());
  auto dtype_of = [&](const std::string& name) {
    const int id = g.find_value(name);
    REQUIRE_MESSAGE(id >= 0, "no value ", name);
    return g.values[static_cast<size_t>(id)].dtype;
  };
  CHECK(dtype_of("x") == DType::F16);
  CHECK(dtype_of("w") == DType::F16);
  CHECK(dtype_of("y") == DType::BF16);
  int casts = 0;
  for (const Node& n : g.nodes) casts += n.op == OpKind::cast;
  CHECK(casts == 2);  // to f32 after the f16 MatMul, to bf16 at the end; the f32 -> f32 Cast is no node

  ModelBuilder folded;  // a constant cast to float16 is rounded to it and keeps the dtype
  folded.input("x", {3}, "float16").init("c", {3}, {0.1f, 1.0f / 3.0f, 1000.7f});
  folded.node("Cast", {"c"}, {"c16"}, {{"to", ai(10)}}).node("Add", {"x", "c16"}, {"y"}).output("y");
  const Graph fg = folded.import();
  CHECK(validation_errors(fg).empty());
  bool found = false;
  for (const ValueInfo& v : fg.values)
    if (v.role == Role::parameter && v.init.data) {
      found = true;
      CHECK(v.dtype == DType::F16);
      for (float f : *v.init.data) CHECK(f == round_to_dtype(f, DType::F16));
    }
  CHECK(found);

  ModelBuilder to_double;
  to_double.input("x", {2, 3}).node("Cast", {"x"}, {"y"}, {{"to", ai(11)}}).output("y");
  CHECK(refusal(to_double).find("casts a tensor to ONNX type 11; the IR's values are float (1)") != std::string::npos);
  ModelBuilder mixed;  // an f16 input and an f32 weight: the dtype rule names the node
  mixed.input("x", {2, 3}, "float16").init("w", {3, 2}, {1, 2, 3, 4, 5, 6}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  CHECK(refusal(mixed).find("input 1 is f32 but input 0 is f16") != std::string::npos);
}

TEST_CASE("onnx mapping: int64 ids, Gather on a table -> embedding, Cast to and from integers") {
  ModelBuilder mb;
  std::vector<float> table = seq(10 * 4);
  mb.input("ids", {2, 3}, "int64").init("weight", {10, 4}, table);
  mb.node("Gather", {"weight", "ids"}, {"emb"});
  mb.node("Cast", {"ids"}, {"idf"}, {{"to", ai(1)}});  // ids as floats
  mb.node("Cast", {"idf"}, {"back"}, {{"to", ai(6)}});  // and to int32
  mb.output("emb").output("idf").output("back");
  const Graph g = mb.import();
  CHECK(validation_errors(g).empty());
  CHECK(g.values[static_cast<size_t>(g.find_value("ids"))].dtype == DType::I64);
  CHECK(g.values[static_cast<size_t>(g.find_value("back"))].dtype == DType::I32);
  bool has_embedding = false;
  for (const Node& n : g.nodes) has_embedding = has_embedding || n.op == OpKind::embedding;
  CHECK(has_embedding);
  const std::vector<float> ids = {9, 0, 3, 3, 1, 7};
  std::vector<float> want;
  for (float id : ids)
    for (int j = 0; j < 4; ++j) want.push_back(table[static_cast<size_t>(id) * 4 + static_cast<size_t>(j)]);
  CHECK(run(g, {{"ids", ids}}, "emb") == want);  // rows copied: the same floats
  CHECK(run(g, {{"ids", ids}}, "back") == ids);

  ModelBuilder axis1;  // rows only: a Gather along axis 1 with computed indices is refused
  axis1.input("ids", {3}, "int64").init("weight", {10, 4}, table);
  axis1.node("Gather", {"weight", "ids"}, {"y"}, {{"axis", ai(1)}}).output("y");
  CHECK(refusal(axis1).find("the IR's embedding takes rows (axis 0) of a 2-D table") != std::string::npos);
  ModelBuilder float_ids;
  float_ids.input("ids", {3}).init("weight", {10, 4}, table);
  float_ids.node("Gather", {"weight", "ids"}, {"y"}).output("y");
  CHECK(refusal(float_ids).find("an embedding's ids are int32 or int64") != std::string::npos);
}

TEST_CASE("onnx mapping: Where over a bool input, a constant condition and masked fill, with broadcasting") {
  const std::vector<float> x = seq(12), other = seq(12, 0.03f, 0.5f);
  // Masked fill as exporters write it: Where(mask, x, fill value), the mask [1, 4] and the value a scalar.
  ModelBuilder fill;
  fill.input("mask", {1, 4}, "bool").input("x", {3, 4}).init("lowest", {}, {-1e9f});
  fill.node("Where", {"mask", "x", "lowest"}, {"y"}).output("y");
  const Graph g = fill.import();
  CHECK(validation_errors(g).empty());
  CHECK(g.values[static_cast<size_t>(g.find_value("mask"))].dtype == DType::I32);  // the IR has no bool
  bool has_where = false;
  for (const Node& n : g.nodes) has_where = has_where || n.op == OpKind::where;
  CHECK(has_where);
  const std::vector<float> mask = {1, 0, 0, 1};
  std::vector<float> want(12);
  for (size_t i = 0; i < 12; ++i) want[i] = mask[i % 4] != 0 ? x[i] : -1e9f;
  CHECK(run(g, {{"mask", mask}, {"x", x}}, "y") == want);  // elements copied: the same floats

  // A constant condition of integers (a bool initializer reads as them) between two tensors.
  ModelBuilder picked;
  picked.input("a", {3, 4}).input("b", {3, 4}).ints("c", {0, 1, 1, 0});
  picked.node("Where", {"c", "a", "b"}, {"y"}).output("y");
  for (size_t i = 0; i < 12; ++i) want[i] = (i % 4 == 1 || i % 4 == 2) ? x[i] : other[i];
  CHECK(run(picked.import(), {{"a", x}, {"b", other}}, "y") == want);

  // Every input constant folds; a condition that is all one value picks its side without a where.
  ModelBuilder folded;
  folded.input("a", {4}).ints("c", {1, 0, 1, 0}).init("p", {4}, {1, 2, 3, 4}).init("q", {4}, {5, 6, 7, 8});
  folded.ints("yes", {1, 1, 1, 1});
  folded.node("Where", {"c", "p", "q"}, {"k"}).node("Add", {"a", "k"}, {"s"});
  folded.node("Where", {"yes", "s", "q"}, {"y"}).output("y");
  const Graph gf = folded.import();
  for (const Node& n : gf.nodes) CHECK(n.op != OpKind::where);
  CHECK(run(gf, {{"a", {0.5f, 0.5f, 0.5f, 0.5f}}}, "y") == std::vector<float>{1.5f, 6.5f, 3.5f, 8.5f});
}

TEST_CASE("onnx mapping: what cannot be mapped is refused, naming the node, the op and why") {
  auto one = [](const std::string& op, std::map<std::string, Attribute> attrs = {}, int64_t opset = 18) {
    ModelBuilder mb(opset);
    mb.input("x", {2, 3}).input("z", {2, 3}).node(op, {"x", "z"}, {"y"}, std::move(attrs)).output("y");
    return refusal(mb);
  };
  CHECK(one("Hardmax").find("node 'n0' (Hardmax): op Hardmax is not supported") != std::string::npos);
  CHECK(one("Div").find("divides two tensors") != std::string::npos);
  ModelBuilder gelu;
  gelu.input("x", {2, 3}).node("Gelu", {"x"}, {"y"}, {{"approximate", as("fast")}}).output("y");
  CHECK(refusal(gelu).find("has approximate=\"fast\"; ONNX defines \"none\"") != std::string::npos);
  ModelBuilder erf;
  erf.input("x", {2, 3}).node("Erf", {"x"}, {"y"}).output("y");
  CHECK(refusal(erf).find("the IR has no erf") != std::string::npos);
  ModelBuilder pow;
  pow.input("x", {2, 3}).init("h", {}, {0.5f}).node("Pow", {"x", "h"}, {"y"}).output("y");
  CHECK(refusal(pow).find("power other than the constants 1, 2 or 3") != std::string::npos);
  ModelBuilder dom;
  dom.input("x", {2, 3}).node("Relu", {"x"}, {"y"}).output("y");
  dom.m.nodes[0].domain = "com.microsoft";
  CHECK(refusal(dom).find("domain 'com.microsoft'") != std::string::npos);
  ModelBuilder order;
  order.input("x", {2, 3}).node("Relu", {"later"}, {"y"}).node("Relu", {"x"}, {"later"}).output("y");
  CHECK(refusal(order).find("topological order") != std::string::npos);
  ModelBuilder ints;
  ints.input("ids", {2, 3}, "int64").node("Relu", {"ids"}, {"y"}).output("y");
  CHECK(refusal(ints).find("input 0 is i64, an integer; relu takes float values only") != std::string::npos);
  ModelBuilder doubles;
  doubles.input("x", {2, 3}, "double").node("Relu", {"x"}, {"y"}).output("y");
  CHECK(refusal(doubles).find("input 'x': is double; the IR's values are float, float16, bfloat16, int32 or int64") !=
        std::string::npos);
  ModelBuilder constant_out;
  constant_out.input("x", {2, 3}).init("c", {2}, {1, 2}).node("Identity", {"c"}, {"y"}).output("y");
  CHECK(refusal(constant_out).find("output 'y' is a constant") != std::string::npos);
  ModelBuilder rank7;
  rank7.input("x", {1, 2, 1, 2, 3, 1, 2}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK(refusal(rank7).find("at most 6") != std::string::npos);
  ModelBuilder perm;
  perm.input("x", {2, 3}).node("Transpose", {"x"}, {"y"}, {{"perm", aints({0, 0})}}).output("y");
  CHECK(refusal(perm).find("not a permutation") != std::string::npos);
  ModelBuilder bcast;
  bcast.input("x", {2, 3}).input("z", {4, 3}).node("Add", {"x", "z"}, {"y"}).output("y");
  CHECK(refusal(bcast).find("do not broadcast") != std::string::npos);
  ModelBuilder train_dropout;
  train_dropout.input("x", {2, 3}).init("r", {}, {0.1f}).ints("t", {1}).node("Dropout", {"x", "r", "t"}, {"y"}).output("y");
  CHECK(refusal(train_dropout).find("is a dropout in training mode (training_mode true)") != std::string::npos);
  ModelBuilder ext;
  ext.input("x", {2, 3}).init("w", {3, 2}, {}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  ext.m.initializers["w"].external = true;
  ext.m.initializers["w"].type = onnx::Tensor::Type::other;
  CHECK(refusal(ext).find("external file") != std::string::npos);
}

}  // namespace
}  // namespace tg::testing
