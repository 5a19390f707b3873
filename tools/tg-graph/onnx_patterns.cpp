// Formula rewrites before the mapping (onnx_import.h, fuse_patterns). The IR has
// no erf, sqrt or tensor division, so the formulas that the TorchScript exporter
// writes for the exact GELU (before opset 20) and, before opset 17, for LayerNorm can
// only be imported whole, as the ops they compute. The tanh GELU's formula would
// import op by op (the IR has tanh), but as one gelu it is one kernel, and the one op
// the linear pass fuses into a GEMM.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <set>

#include "tools/tg-graph/onnx_import.h"
#include "tools/tg-graph/onnx_pattern_view.h"

namespace tg::onnx {

namespace {

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

// The end both GELU formulas share, from their Tanh or Erf `t` on: 0.5 * x * (1 + t) in
// each order of its factors. Adds its nodes to m.inner and sets m.last; false if absent.
bool gelu_tail(const View& v, int t, const std::string& x, Match& m) {
  const int one = v.only_consumer(t, "Add");
  if (one < 0 || !v.is_scalar(v.other(one, v.node(t).outputs[0]), 1.0)) return false;
  m.inner.insert(one);
  const int prod = v.only_consumer(one, "Mul");
  if (prod < 0) return false;
  const std::string o = v.other(prod, v.node(one).outputs[0]);
  if (o == x) {  // (x * (1 + t)) * 0.5
    const int half = v.only_consumer(prod, "Mul");
    if (half < 0 || !v.is_scalar(v.other(half, v.node(prod).outputs[0]), 0.5)) return false;
    m.inner.insert(prod);
    m.last = half;
  } else if (int h = v.prod(o, "Mul"); h >= 0 && v.operand_beside_scalar(h, 0.5) == x) {  // (0.5 * x) * (1 + t)
    m.inner.insert(h);
    m.last = prod;
  } else if (v.is_scalar(o, 0.5)) {  // x * ((1 + t) * 0.5)
    const int xm = v.only_consumer(prod, "Mul");
    if (xm < 0 || v.other(xm, v.node(prod).outputs[0]) != x) return false;
    m.inner.insert(prod);
    m.last = xm;
  } else {
    return false;
  }
  return true;
}

// The one Gelu node a formula becomes.
Match gelu_node(Match m, const std::string& x, const char* approximate) {
  m.fused.op_type = "Gelu";
  m.fused.inputs = {x};
  m.fused.attrs["approximate"].kind = Attribute::Kind::s;
  m.fused.attrs["approximate"].s = approximate;
  return m;
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
  if (!gelu_tail(v, t, x, m) || !v.closed(m.inner, m.last)) return std::nullopt;
  return gelu_node(m, x, "tanh");
}

// x * 0.5 * (1 + erf(x / sqrt(2))) (x / sqrt(2) also as x * (1 / sqrt(2))), anchored at
// the Erf: PyTorch's export of nn.GELU() before opset 20.
std::optional<Match> gelu_erf(const View& v, int e) {
  const double sqrt2 = std::sqrt(2.0);
  const std::string& in = v.node(e).inputs[0];
  std::string x;
  int scale = v.prod(in, "Div");
  if (scale >= 0) {
    const Node& d = v.node(scale);
    if (d.inputs.size() == 2 && v.is_scalar(d.inputs[1], sqrt2)) x = d.inputs[0];
  } else if ((scale = v.prod(in, "Mul")) >= 0) {
    x = v.operand_beside_scalar(scale, 1.0 / sqrt2);
  }
  if (x.empty()) return std::nullopt;
  Match m;
  m.inner = {scale, e};
  if (!gelu_tail(v, e, x, m) || !v.closed(m.inner, m.last)) return std::nullopt;
  return gelu_node(m, x, "none");
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

// A constant mask (an initializer) with no NaN and in every row of its last axis an entry
// above -inf (exporters write "masked" as -inf or as the float minimum).
bool mask_keeps_a_finite_entry(const Tensor& mask) {
  if (mask.type != Tensor::Type::f32 || mask.external || mask.dims.empty() || mask.dims.back() < 1) return false;
  const size_t row = static_cast<size_t>(mask.dims.back());
  for (size_t r = 0; r < mask.f.size(); r += row) {
    bool finite = false;
    for (size_t k = r; k < r + row; ++k) {
      if (std::isnan(mask.f[k])) return false;
      finite = finite || mask.f[k] > -std::numeric_limits<float>::infinity();
    }
    if (!finite) return false;
  }
  return true;
}

// A mask computed at run time as Where(cond, a, b) of two finite scalars (Hugging Face's
// attention mask: 0 where attended, the float minimum elsewhere): every entry is finite.
bool chosen_from_finite_scalars(const View& v, const std::string& mask) {
  const int w = v.prod(mask, "Where");
  if (w < 0) return false;
  for (size_t i : {1, 2}) {
    const std::optional<float> x = v.scalar(v.node(w).inputs[i]);
    if (!x || !std::isfinite(*x)) return false;
  }
  return true;
}

// Whether softmax's input x has a finite entry in every row, assuming finite scores: x is not
// a sum, or the sum of the scores and one mask that keeps a finite entry in every row.
bool rows_keep_a_finite_entry(const View& v, const Model& model, const std::string& x) {
  const int add = v.prod(x, "Add");
  if (add < 0) return v.prod(x, "Sub") < 0;
  const Node& a = v.node(add);
  for (const std::string& operand : a.inputs) {
    const auto it = model.initializers.find(operand);
    if (it != model.initializers.end() && !mask_keeps_a_finite_entry(it->second)) return false;
    if (it == model.initializers.end() && !chosen_from_finite_scalars(v, operand)) continue;
    return v.prod(v.other(add, operand), "Add") < 0;  // the other operand: the scores, not a second mask
  }
  return false;
}

// Where(IsNaN(s), 0, s) after s = Softmax(x): the guard PyTorch's exported attention puts on a
// softmax whose rows may be all masked. A softmax row is NaN only when every entry of x's row is
// -inf (or a NaN comes in), so where every row keeps a finite entry the guard is s itself.
std::optional<Match> softmax_nan_guard(const View& v, const Model& model, int isnan) {
  const std::string& s = v.node(isnan).inputs[0];
  const int softmax = v.prod(s, "Softmax");
  const int where = v.only_consumer(isnan, "Where");
  if (softmax < 0 || where < 0) return std::nullopt;
  const Node& w = v.node(where);
  if (w.inputs[0] != v.node(isnan).outputs[0] || !v.is_scalar(w.inputs[1], 0.0) || w.inputs[2] != s) return std::nullopt;
  if (!rows_keep_a_finite_entry(v, model, v.node(softmax).inputs[0])) return std::nullopt;
  Match m;
  m.inner = {isnan};
  m.last = where;
  m.fused.op_type = "Identity";
  m.fused.inputs = {s};
  return m;
}

// The rewrite anchored at node i, if one matches there.
std::optional<Match> match_at(const View& v, const Model& model, int i) {
  const Node& n = v.node(i);
  if (!n.domain.empty() || !v.usable(i)) return std::nullopt;
  if (n.op_type == "Tanh") return gelu_tanh(v, i);
  if (n.op_type == "Erf") return gelu_erf(v, i);
  if (n.op_type == "Div") return layernorm_formula(v, model, i);
  if (n.op_type == "IsNaN") return softmax_nan_guard(v, model, i);
  return std::nullopt;
}

bool is_anchor(const Node& n) {
  return n.domain.empty() &&
         (n.op_type == "Tanh" || n.op_type == "Erf" || n.op_type == "Div" || n.op_type == "IsNaN");
}

// The note a rewrite leaves: the formula's first and last nodes, and what it became.
void note_match(const Model& model, const Match& m, std::vector<std::string>& notes) {
  if (m.fused.op_type == "Identity") {
    notes.push_back(fmt::format("nodes {}..{}: the NaN guard of softmax {} dropped: every row of its input keeps a "
                                "finite entry (finite scores, a mask that masks no whole row), so no row "
                                "is NaN",
                                model.nodes[static_cast<size_t>(*m.inner.begin())].name,
                                model.nodes[static_cast<size_t>(m.last)].name, m.fused.inputs[0]));
    return;
  }
  const bool gelu = m.fused.op_type == "Gelu";
  const bool exact = gelu && m.fused.attrs.at("approximate").s == "none";
  notes.push_back(fmt::format("nodes {}..{}: the {} formula ({} nodes) imported as one {}",
                              model.nodes[static_cast<size_t>(*m.inner.begin())].name,
                              model.nodes[static_cast<size_t>(m.last)].name,
                              !gelu ? "LayerNorm" : exact ? "exact GELU" : "tanh GELU", m.inner.size() + 1,
                              !gelu ? "layernorm" : exact ? "gelu_erf" : "gelu"));
}

// The fused node takes the name and first output of the node it replaces.
Node fused_node(const Model& model, Match& m) {
  const Node& last = model.nodes[static_cast<size_t>(m.last)];
  m.fused.name = last.name;
  m.fused.outputs = {last.outputs[0]};
  return m.fused;
}

// Anchors (node ids) whose search failed, per value it read: a change to the value
// sends them back to be searched again. A search's entries carry the anchor's round;
// entries of an earlier round are stale.
class Watchers {
 public:
  Watchers(size_t values, size_t nodes) : by_producer_(values), by_consumer_(values), round_(nodes, 0) {}

  void watch(int anchor, ViewReads& reads) {
    add(anchor, reads.producers, by_producer_);
    add(anchor, reads.consumers, by_consumer_);
  }
  // The anchors watching a changed value, each once; their entries retire.
  void wake(const ViewReads& changed, std::vector<int>& woken) {
    take(changed.producers, by_producer_, woken);
    take(changed.consumers, by_consumer_, woken);
  }

 private:
  struct Entry {
    int anchor, round;
  };
  using Lists = std::vector<std::vector<Entry>>;
  void add(int anchor, std::vector<int>& values, Lists& lists) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (int v : values) lists[static_cast<size_t>(v)].push_back({anchor, round_[static_cast<size_t>(anchor)]});
  }
  void take(const std::vector<int>& values, Lists& lists, std::vector<int>& woken) {
    for (int v : values) {
      for (const Entry& e : lists[static_cast<size_t>(v)])
        if (e.round == round_[static_cast<size_t>(e.anchor)]) {
          ++round_[static_cast<size_t>(e.anchor)];
          woken.push_back(e.anchor);
        }
      lists[static_cast<size_t>(v)].clear();
    }
  }
  Lists by_producer_, by_consumer_;
  std::vector<int> round_;
};

}  // namespace

bool fuse_first_pattern(Model& model, std::vector<std::string>& notes) {
  const View v(model);
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    std::optional<Match> m = match_at(v, model, static_cast<int>(i));
    if (!m) continue;
    note_match(model, *m, notes);
    model.nodes[static_cast<size_t>(m->last)] = fused_node(model, *m);
    std::vector<Node> kept;
    for (size_t k = 0; k < model.nodes.size(); ++k)
      if (!m->inner.count(static_cast<int>(k))) kept.push_back(std::move(model.nodes[k]));
    model.nodes = std::move(kept);
    return true;
  }
  return false;
}

// The anchors wait in node order. One that is taken is searched in the model as it is
// now; if nothing matches, it waits on the values its search read. So each fusion is the
// first match in node order of the model at that point, as in fuse_first_pattern.
void fuse_patterns(Model& model, std::vector<std::string>& notes) {
  View v(model);
  std::priority_queue<int, std::vector<int>, std::greater<int>> todo;
  for (size_t i = 0; i < model.nodes.size(); ++i)
    if (is_anchor(model.nodes[i])) todo.push(static_cast<int>(i));
  Watchers watchers(v.values(), model.nodes.size());
  bool any = false;
  std::vector<int> woken;
  while (!todo.empty()) {
    const int i = todo.top();
    todo.pop();
    if (v.gone(i) || !is_anchor(model.nodes[static_cast<size_t>(i)])) continue;
    ViewReads reads;
    v.record(&reads);
    std::optional<Match> m = match_at(v, model, i);
    v.record(nullptr);
    if (!m) {
      watchers.watch(i, reads);
      continue;
    }
    note_match(model, *m, notes);
    ViewReads changed;
    v.fuse(m->last, fused_node(model, *m), m->inner, &changed);
    any = true;
    woken.clear();
    watchers.wake(changed, woken);
    for (int a : woken) todo.push(a);
  }
  if (any) model.nodes = v.live_nodes();
}

}  // namespace tg::onnx
