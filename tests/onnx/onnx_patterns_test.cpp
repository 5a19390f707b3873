// The formula rewrites (tools/tg-graph/onnx_patterns.cpp) in one pass against their
// definition: each rewrite is the first match in node order of the model the rewrites
// before it left, which fuse_first_pattern called until it finds none computes directly.
// Random soups of GELU and LayerNorm formulas, with the defects that stop or delay a
// match (leaks, extra readers, wrong constants, shared values, nodes out of order).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

using onnx::Attribute;
using onnx::Model;

onnx::Tensor scalar_tensor(const std::string& name, float v) {
  onnx::Tensor t;
  t.name = name;
  t.f = {v};
  return t;
}

class Soup {
 public:
  explicit Soup(uint32_t seed) : rng_(seed) {
    m.opset = 14;
    for (int i = 0; i < 3; ++i) {
      onnx::ValueDecl d;
      d.name = fmt::format("x{}", i);
      d.has_shape = true;
      d.dims = {onnx::Dim{2, ""}, onnx::Dim{4, ""}};
      m.inputs.push_back(d);
      pool_.push_back(d.name);
    }
    for (const auto& [name, v] : {std::pair<const char*, float>{"three", 3.0f}, {"k", 0.044715f}, {"s2pi", 0.7978845608f},
                                  {"one", 1.0f}, {"half", 0.5f}, {"two", 2.0f}, {"eps", 1e-5f}, {"odd", 0.3f}})
      m.initializers[name] = scalar_tensor(name, v);
    for (const char* name : {"gamma", "beta"}) {
      onnx::Tensor t;
      t.name = name;
      t.dims = {4};
      t.f = {1.0f, 0.5f, 2.0f, 1.5f};
      m.initializers[name] = t;
    }
    // Constant nodes as scalars too, each read by many formulas.
    constant("c_half", 0.5f);
    constant("c_one", 1.0f);
  }

  void gelu() {
    const std::string x = pick(), p = fresh("g");
    const std::string c3 = scalar("three"), k = scalar("k"), s = scalar("s2pi"), one = scalar("one"), half = scalar("half");
    if (chance(0.5)) {
      node("Pow", {x, c3}, p + "cube");
    } else {
      node("Mul", {x, x}, p + "sq");
      node("Mul", chance(0.5) ? std::vector<std::string>{x, p + "sq"} : std::vector<std::string>{p + "sq", x}, p + "cube");
    }
    node("Mul", {k, p + "cube"}, p + "mk");
    node("Add", {x, p + "mk"}, p + "in");
    node("Mul", {p + "in", s}, p + "u");
    node("Tanh", {p + "u"}, p + "t");
    node("Add", {one, p + "t"}, p + "onet");
    const int order = static_cast<int>(rng_() % 3);
    if (order == 0) node("Mul", {x, p + "onet"}, p + "p"), node("Mul", {p + "p", half}, p + "y");
    if (order == 1) node("Mul", {half, x}, p + "h"), node("Mul", {p + "h", p + "onet"}, p + "y");
    if (order == 2) node("Mul", {p + "onet", half}, p + "q"), node("Mul", {x, p + "q"}, p + "y");
    inner_.insert(inner_.end(), {p + "mk", p + "in", p + "u", p + "t", p + "onet"});
    pool_.push_back(p + "y");
  }

  void layernorm() {
    const std::string x = pick(), p = fresh("l");
    std::map<std::string, Attribute> axes;
    axes["axes"].kind = Attribute::Kind::ints;
    axes["axes"].ints = {chance(0.9) ? -1 : 0};
    node("ReduceMean", {x}, p + "mean", axes);
    node("Sub", {x, p + "mean"}, p + "d");
    if (chance(0.5)) node("Pow", {p + "d", scalar("two")}, p + "sq");
    else node("Mul", {p + "d", p + "d"}, p + "sq");
    node("ReduceMean", {p + "sq"}, p + "var", axes);
    node("Add", {p + "var", scalar("eps")}, p + "ve");
    node("Sqrt", {p + "ve"}, p + "s");
    node("Div", {p + "d", p + "s"}, p + "n");
    std::string y = p + "n";
    if (chance(0.6)) {
      node("Mul", {y, "gamma"}, p + "ng");
      y = p + "ng";
      if (chance(0.7)) node("Add", {y, "beta"}, p + "nb"), y = p + "nb";
    }
    inner_.insert(inner_.end(), {p + "mean", p + "d", p + "sq", p + "var", p + "s"});
    pool_.push_back(y);
  }

  // A defect: a reader outside a formula, an extra input on a formula's node (a reader
  // of another formula's value, which delays that one until this one is fused), an
  // intermediate that is a graph output, a stray Div or Tanh, a name produced twice.
  void defect() {
    if (inner_.empty()) return;
    const std::string v = inner_[rng_() % inner_.size()];
    switch (rng_() % 6) {
      case 0: node("Relu", {v}, fresh("leak")); break;
      case 1: {
        auto& n = m.nodes[rng_() % m.nodes.size()];
        if (n.op_type != "Constant") n.inputs.push_back(v);
        break;
      }
      case 2: output(v); break;
      case 3: node("Div", {pick(), v}, fresh("div")); break;
      case 4: node("Tanh", {v}, fresh("tanh")); break;
      case 5: node("Neg", {pick()}, v); break;
    }
  }

  // Moves a node to another place: a file out of topological order.
  void displace() {
    const size_t from = rng_() % m.nodes.size(), to = rng_() % m.nodes.size();
    onnx::Node n = m.nodes[from];
    m.nodes.erase(m.nodes.begin() + static_cast<std::ptrdiff_t>(from));
    m.nodes.insert(m.nodes.begin() + static_cast<std::ptrdiff_t>(to), n);
  }

  void finish() {
    for (size_t i = pool_.size() - std::min<size_t>(pool_.size(), 2); i < pool_.size(); ++i) output(pool_[i]);
  }

  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  Model m;

 private:
  void node(const std::string& op, std::vector<std::string> ins, const std::string& out,
            std::map<std::string, Attribute> attrs = {}) {
    onnx::Node n;
    n.name = fmt::format("n{}", m.nodes.size());
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    m.nodes.push_back(std::move(n));
  }
  void constant(const std::string& name, float v) {
    std::map<std::string, Attribute> a;
    a["value"].kind = Attribute::Kind::tensor;
    a["value"].t = scalar_tensor(name, v);
    node("Constant", {}, name, a);
  }
  void output(const std::string& v) {
    onnx::ValueDecl d;
    d.name = v;
    m.outputs.push_back(d);
  }
  std::string pick() { return pool_[rng_() % pool_.size()]; }
  std::string fresh(const std::string& base) { return fmt::format("{}{}_", base, counter_++); }
  // The scalar `name` as an initializer, a shared Constant node, or now and then a wrong one.
  std::string scalar(const std::string& name) {
    if (chance(0.03)) return "odd";
    if (name == "half" && chance(0.3)) return "c_half";
    if (name == "one" && chance(0.3)) return "c_one";
    return name;
  }

  std::mt19937 rng_;
  std::vector<std::string> pool_, inner_;
  int counter_ = 0;
};

std::string describe(const onnx::Node& n) {
  std::string s = fmt::format("{} {} [{}] -> [{}]", n.name, n.op_type, fmt::join(n.inputs, ","), fmt::join(n.outputs, ","));
  for (const auto& [k, a] : n.attrs) s += fmt::format(" {}={}/{}/{}/{}/{}", k, static_cast<int>(a.kind), a.i, a.f, a.s, fmt::join(a.ints, ","));
  return s;
}

std::vector<std::string> listing(const Model& m) {
  std::vector<std::string> out;
  for (const onnx::Node& n : m.nodes) out.push_back(describe(n));
  return out;
}

// fuse_patterns against fuse_first_pattern repeated; returns the number of rewrites.
size_t check_same_rewrites(const Model& m) {
  Model one_pass = m, repeated = m;
  std::vector<std::string> notes, want_notes;
  onnx::fuse_patterns(one_pass, notes);
  while (onnx::fuse_first_pattern(repeated, want_notes)) {
  }
  CHECK(notes == want_notes);
  CHECK(listing(one_pass) == listing(repeated));
  return want_notes.size();
}

TEST_CASE("onnx patterns: one pass rewrites what the first match repeated does, on random formula soups") {
  size_t rewrites = 0, models_with_defects = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    CAPTURE(seed);
    Soup s(seed);
    const int formulas = 1 + static_cast<int>(seed % 12);
    for (int i = 0; i < formulas; ++i) s.chance(0.5) ? s.gelu() : s.layernorm();
    const int defects = static_cast<int>(seed % 4);
    for (int i = 0; i < defects; ++i) s.defect();
    if (seed % 5 == 0) s.displace();
    s.finish();
    models_with_defects += defects > 0;
    rewrites += check_same_rewrites(s.m);
  }
  // The soups must exercise the rewrites, not only their refusals.
  CHECK(rewrites > 400);
  CHECK(models_with_defects > 200);
}

TEST_CASE("onnx patterns: a rewrite that frees an earlier formula is followed by that formula's") {
  // GELU a comes first, but its (1 + tanh) value has a second reader, an extra input of
  // GELU b's Tanh. Fusing b drops that reader, and then a matches: b's note comes first.
  Soup s(7);
  s.m.nodes.clear();
  const auto gelu = [&](const std::string& x, const std::string& p, const std::string& extra) {
    auto add = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
      onnx::Node n;
      n.name = p + out;
      n.op_type = op;
      n.inputs = std::move(ins);
      n.outputs = {p + out};
      s.m.nodes.push_back(n);
    };
    add("Pow", {x, "three"}, "cube");
    add("Mul", {p + "cube", "k"}, "mk");
    add("Add", {x, p + "mk"}, "in");
    add("Mul", {p + "in", "s2pi"}, "u");
    add("Tanh", extra.empty() ? std::vector<std::string>{p + "u"} : std::vector<std::string>{p + "u", extra}, "t");
    add("Add", {p + "t", "one"}, "onet");
    add("Mul", {x, "half"}, "h");
    add("Mul", {p + "h", p + "onet"}, "y");
  };
  gelu("x0", "a.", "");
  gelu("x1", "b.", "a.onet");
  s.m.outputs.clear();
  for (const char* y : {"a.y", "b.y"}) {
    onnx::ValueDecl d;
    d.name = y;
    s.m.outputs.push_back(d);
  }
  REQUIRE(check_same_rewrites(s.m) == 2);
  Model fused = s.m;
  std::vector<std::string> notes;
  onnx::fuse_patterns(fused, notes);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("nodes b.cube..b.y") == 0);
  CHECK(notes[1].find("nodes a.cube..a.y") == 0);
  REQUIRE(fused.nodes.size() == 2);
  CHECK(fused.nodes[0].op_type == "Gelu");
  CHECK(fused.nodes[0].inputs == std::vector<std::string>{"x0"});
}

TEST_CASE("onnx patterns: formula nodes without an operand or an output are left alone by the fuser and refused by the arity check") {
  // Each a node of a formula with less than its op takes, where a rewrite would look.
  struct Case {
    std::vector<onnx::Node> nodes;
    std::string refusal;
  };
  auto node = [](const char* op, std::vector<std::string> ins, std::vector<std::string> outs) {
    onnx::Node n;
    n.name = outs.empty() ? std::string("nameless") : outs[0];
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    return n;
  };
  const std::vector<Case> cases = {
      {{node("Tanh", {}, {"y"})}, "node 'y' (Tanh): has 0 inputs, but Tanh takes 1 input"},
      {{node("Sqrt", {}, {"s"}), node("Sub", {"x0", "x0"}, {"d"}), node("Div", {"d", "s"}, {"y"})},
       "node 's' (Sqrt): has 0 inputs, but Sqrt takes 1 input"},
      {{node("Mul", {"x0"}, {"u"}), node("Tanh", {"u"}, {"y"})}, "node 'u' (Mul): has 1 input, but Mul takes 2 inputs"},
      {{node("Relu", {"x0"}, {"y"}), node("Tanh", {"x0"}, {})}, "node 'nameless' (Tanh): has 0 outputs, but Tanh gives 1 output"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.refusal);
    Soup s(1);
    s.m.nodes = c.nodes;
    s.m.outputs.clear();
    onnx::ValueDecl y;
    y.name = "y";
    s.m.outputs.push_back(y);
    check_same_rewrites(s.m);
    std::string message = "(imported)";
    try {
      onnx::import_model(s.m, {}, "bad.onnx");
    } catch (const GraphError& e) {
      message = e.what();
    }
    CHECK_MESSAGE(message.find(c.refusal) != std::string::npos, message);
  }
}

}  // namespace
}  // namespace tg::testing
