// Formula rewrites before the mapping (onnx_import.h, fuse_patterns). The IR has
// no tanh, sqrt or tensor division, so the formulas that the TorchScript exporter
// writes for GELU (tanh form) and, before opset 17, for LayerNorm can only be
// imported whole, as the ops they compute.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "tools/tg-graph/onnx_import.h"

namespace tg::onnx {

namespace {

class View {
 public:
  explicit View(const Model& m) : m_(m) {
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      for (const std::string& o : m.nodes[i].outputs)
        if (!o.empty()) producer_[o] = static_cast<int>(i);  // "": an omitted optional output
      for (const std::string& in : m.nodes[i].inputs)
        if (!in.empty()) consumers_[in].push_back(static_cast<int>(i));
    }
    for (const ValueDecl& o : m.outputs) outputs_.insert(o.name);
  }

  // The node producing v when its op is `op`, else -1.
  int prod(const std::string& v, const char* op) const {
    auto it = producer_.find(v);
    return it != producer_.end() && m_.nodes[static_cast<size_t>(it->second)].op_type == op &&
                   m_.nodes[static_cast<size_t>(it->second)].domain.empty()
               ? it->second
               : -1;
  }
  const Node& node(int i) const { return m_.nodes[static_cast<size_t>(i)]; }
  const std::vector<int>& consumers(const std::string& v) const {
    static const std::vector<int> none;
    auto it = consumers_.find(v);
    return it == consumers_.end() ? none : it->second;
  }
  // The single consumer of node i's output, with op `op`; else -1.
  int only_consumer(int i, const char* op) const {
    const std::vector<int>& c = consumers(node(i).outputs[0]);
    return c.size() == 1 && node(c[0]).op_type == op ? c[0] : -1;
  }
  // A one-element float constant: an initializer or a Constant node's value.
  std::optional<float> scalar(const std::string& v) const {
    auto it = m_.initializers.find(v);
    if (it != m_.initializers.end())
      return it->second.type == Tensor::Type::f32 && it->second.f.size() == 1 ? std::optional<float>(it->second.f[0])
                                                                               : std::nullopt;
    const int c = prod(v, "Constant");
    if (c < 0) return std::nullopt;
    const auto& attrs = node(c).attrs;
    if (auto a = attrs.find("value_float"); a != attrs.end()) return a->second.f;
    if (auto a = attrs.find("value"); a != attrs.end() && a->second.t.type == Tensor::Type::f32 &&
                                      a->second.t.f.size() == 1)
      return a->second.t.f[0];
    return std::nullopt;
  }
  bool is_scalar(const std::string& v, double expected) const {
    const std::optional<float> s = scalar(v);
    return s && std::fabs(*s - expected) <= 1e-5 * std::max(1.0, std::fabs(expected));
  }
  // For a binary node: the operand that is not `known` (either order), or "".
  std::string other(int i, const std::string& known) const {
    const Node& n = node(i);
    if (n.inputs.size() != 2) return "";
    if (n.inputs[0] == known) return n.inputs[1];
    if (n.inputs[1] == known) return n.inputs[0];
    return "";
  }
  // Of a binary node, the operand that is the scalar `c` and the other one.
  std::string operand_beside_scalar(int i, double c) const {
    const Node& n = node(i);
    if (n.inputs.size() != 2) return "";
    if (is_scalar(n.inputs[0], c)) return n.inputs[1];
    if (is_scalar(n.inputs[1], c)) return n.inputs[0];
    return "";
  }
  // Every output of the nodes in `inner` is read only by nodes of inner or `last`.
  bool closed(const std::set<int>& inner, int last) const {
    for (int i : inner)
      for (const std::string& o : node(i).outputs) {
        if (outputs_.count(o)) return false;
        for (int c : consumers(o))
          if (c != last && !inner.count(c)) return false;
      }
    return true;
  }
  bool is_graph_output(const std::string& v) const { return outputs_.count(v) > 0; }

 private:
  const Model& m_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
};

struct Match {
  int last = -1;           // the node whose output the fused node produces
  std::set<int> inner;     // the nodes it replaces besides `last`
  Node fused;
};

// x * x * x as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x): returns the nodes, or {}.
std::set<int> cube_of(const View& v, const std::string& cube, const std::string& x) {
  if (int p = v.prod(cube, "Pow"); p >= 0 && v.node(p).inputs[0] == x && v.is_scalar(v.node(p).inputs[1], 3.0))
    return {p};
  const int m = v.prod(cube, "Mul");
  if (m < 0) return {};
  const std::string sq = v.other(m, x);
  const int s = sq.empty() ? -1 : v.prod(sq, "Mul");
  if (s < 0 || v.node(s).inputs[0] != x || v.node(s).inputs[1] != x) return {};
  return {m, s};
}

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), anchored at the Tanh.
std::optional<Match> gelu_tanh(const View& v, int t) {
  const double k0 = std::sqrt(2.0 / 3.14159265358979323846);
  const int scale = v.prod(v.node(t).inputs[0], "Mul");
  if (scale < 0) return std::nullopt;
  const std::string inner_sum = v.operand_beside_scalar(scale, k0);
  const int add = inner_sum.empty() ? -1 : v.prod(inner_sum, "Add");
  if (add < 0) return std::nullopt;
  Match m;
  std::string x;
  for (int order = 0; order < 2 && x.empty(); ++order) {
    const std::string cand = v.node(add).inputs[static_cast<size_t>(order)];
    const int cub = v.prod(v.node(add).inputs[static_cast<size_t>(1 - order)], "Mul");
    if (cub < 0) continue;
    const std::string cube = v.operand_beside_scalar(cub, 0.044715);
    const std::set<int> c = cube.empty() ? std::set<int>{} : cube_of(v, cube, cand);
    if (c.empty()) continue;
    x = cand;
    m.inner = c;
    m.inner.insert(cub);
  }
  if (x.empty()) return std::nullopt;
  m.inner.insert({scale, add, t});
  const int one = v.only_consumer(t, "Add");
  if (one < 0 || !v.is_scalar(v.other(one, v.node(t).outputs[0]), 1.0)) return std::nullopt;
  m.inner.insert(one);
  const int prod = v.only_consumer(one, "Mul");
  if (prod < 0) return std::nullopt;
  const std::string o = v.other(prod, v.node(one).outputs[0]);
  if (o == x) {  // (x * (1 + t)) * 0.5
    const int half = v.only_consumer(prod, "Mul");
    if (half < 0 || !v.is_scalar(v.other(half, v.node(prod).outputs[0]), 0.5)) return std::nullopt;
    m.inner.insert(prod);
    m.last = half;
  } else if (int h = v.prod(o, "Mul"); h >= 0 && v.operand_beside_scalar(h, 0.5) == x) {  // (0.5 * x) * (1 + t)
    m.inner.insert(h);
    m.last = prod;
  } else if (v.is_scalar(o, 0.5)) {  // x * ((1 + t) * 0.5)
    const int xm = v.only_consumer(prod, "Mul");
    if (xm < 0 || v.other(xm, v.node(prod).outputs[0]) != x) return std::nullopt;
    m.inner.insert(prod);
    m.last = xm;
  } else {
    return std::nullopt;
  }
  if (!v.closed(m.inner, m.last)) return std::nullopt;
  m.fused.op_type = "Gelu";
  m.fused.inputs = {x};
  m.fused.attrs["approximate"].kind = Attribute::Kind::s;
  m.fused.attrs["approximate"].s = "tanh";
  return m;
}

// ReduceMean's axes (attribute, or constant input from opset 18) when it is one
// axis, and keepdims is on; else nullopt.
std::optional<int64_t> mean_axis(const View& v, const Model& model, int r) {
  const Node& n = v.node(r);
  auto kd = n.attrs.find("keepdims");
  if (kd != n.attrs.end() && kd->second.i == 0) return std::nullopt;
  std::vector<int64_t> axes;
  if (auto a = n.attrs.find("axes"); a != n.attrs.end()) axes = a->second.ints;
  else if (n.inputs.size() > 1) {
    auto it = model.initializers.find(n.inputs[1]);
    const int c = v.prod(n.inputs[1], "Constant");
    if (it != model.initializers.end() && it->second.type == Tensor::Type::i64) axes = it->second.i;
    else if (c >= 0 && v.node(c).attrs.count("value")) axes = v.node(c).attrs.at("value").t.i;
  }
  if (axes.size() != 1) return std::nullopt;
  return axes[0];
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* gamma] [+ beta], anchored at the Div.
std::optional<Match> layernorm_formula(const View& v, const Model& model, int div) {
  const Node& d = v.node(div);
  if (d.inputs.size() != 2) return std::nullopt;
  const int sqrt = v.prod(d.inputs[1], "Sqrt");
  const int sub = v.prod(d.inputs[0], "Sub");
  if (sqrt < 0 || sub < 0) return std::nullopt;
  const int add_eps = v.prod(v.node(sqrt).inputs[0], "Add");
  if (add_eps < 0) return std::nullopt;
  const Node& ae = v.node(add_eps);
  std::string var;
  float eps = 0;
  for (int k = 0; k < 2 && var.empty(); ++k)
    if (auto s = v.scalar(ae.inputs[static_cast<size_t>(1 - k)]); s && *s > 0) {
      var = ae.inputs[static_cast<size_t>(k)];
      eps = *s;
    }
  const int mean2 = var.empty() ? -1 : v.prod(var, "ReduceMean");
  if (mean2 < 0) return std::nullopt;
  const std::string sq = v.node(mean2).inputs[0];
  const std::string centered = d.inputs[0];
  int square = v.prod(sq, "Pow");
  if (square >= 0 && !(v.node(square).inputs[0] == centered && v.is_scalar(v.node(square).inputs[1], 2.0))) square = -1;
  if (square < 0) {
    square = v.prod(sq, "Mul");
    if (square >= 0 && !(v.node(square).inputs[0] == centered && v.node(square).inputs[1] == centered)) square = -1;
  }
  if (square < 0) return std::nullopt;
  const std::string x = v.node(sub).inputs[0];
  const int mean1 = v.prod(v.node(sub).inputs[1], "ReduceMean");
  if (mean1 < 0 || v.node(mean1).inputs[0] != x) return std::nullopt;
  const std::optional<int64_t> a1 = mean_axis(v, model, mean1), a2 = mean_axis(v, model, mean2);
  if (!a1 || !a2 || *a1 != *a2) return std::nullopt;

  Match m;
  m.inner = {mean1, sub, square, mean2, add_eps, sqrt};
  m.last = div;
  std::string gamma, beta;
  const int mul = v.only_consumer(div, "Mul");
  if (mul >= 0 && !v.is_graph_output(d.outputs[0])) {
    gamma = v.other(mul, d.outputs[0]);
    m.inner.insert(div);
    m.last = mul;
    const int add = v.only_consumer(mul, "Add");
    if (add >= 0 && !v.is_graph_output(v.node(mul).outputs[0])) {
      beta = v.other(add, v.node(mul).outputs[0]);
      m.inner.insert(mul);
      m.last = add;
    }
  }
  if (!v.closed(m.inner, m.last)) return std::nullopt;
  m.fused.op_type = "LayerNormalization";
  m.fused.inputs = {x, gamma, beta};
  m.fused.attrs["axis"].kind = Attribute::Kind::i;
  m.fused.attrs["axis"].i = *a1;
  m.fused.attrs["epsilon"].kind = Attribute::Kind::f;
  m.fused.attrs["epsilon"].f = eps;
  return m;
}

}  // namespace

void fuse_patterns(Model& model, std::vector<std::string>& notes) {
  for (bool changed = true; changed;) {
    changed = false;
    const View v(model);
    for (size_t i = 0; i < model.nodes.size() && !changed; ++i) {
      const std::string& op = model.nodes[i].op_type;
      std::optional<Match> m;
      if (model.nodes[i].domain.empty() && op == "Tanh") m = gelu_tanh(v, static_cast<int>(i));
      if (model.nodes[i].domain.empty() && op == "Div") m = layernorm_formula(v, model, static_cast<int>(i));
      if (!m) continue;
      Node& last = model.nodes[static_cast<size_t>(m->last)];
      m->fused.name = last.name;
      m->fused.outputs = {last.outputs[0]};
      notes.push_back(fmt::format("nodes {}..{}: the {} formula ({} nodes) imported as one {}",
                                  model.nodes[static_cast<size_t>(*m->inner.begin())].name, last.name,
                                  m->fused.op_type == "Gelu" ? "tanh GELU" : "LayerNorm", m->inner.size() + 1,
                                  m->fused.op_type == "Gelu" ? "gelu" : "layernorm"));
      last = m->fused;
      std::vector<Node> kept;
      for (size_t k = 0; k < model.nodes.size(); ++k)
        if (!m->inner.count(static_cast<int>(k))) kept.push_back(std::move(model.nodes[k]));
      model.nodes = std::move(kept);
      changed = true;
    }
  }
}

}  // namespace tg::onnx
