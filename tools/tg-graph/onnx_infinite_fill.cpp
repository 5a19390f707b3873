// Attention masks filled with -inf (PyTorch's nn.MultiheadAttention with a key padding mask,
// the TorchScript exporter's Hugging Face models): Where(mask, -inf, y) or Where(mask, y,
// -inf) whose result reaches a Softmax's input, alone or added to the scores. The IR's
// constants are parameters, which are finite, so the -inf becomes the lowest finite number of
// its type. For a row of the softmax that keeps an entry the result is the same: with finite
// scores, exp(lowest - max) underflows to 0 as exp(-inf) is 0. A row masked whole differs: ONNX's
// softmax of only -inf is NaN, and of only the lowest number is uniform. Where the export
// guards the softmax, Where(IsNaN(s), 0, s) (a row masked whole gives 0), the guard becomes
// Where(kept, s, 0) with kept the row's count of entries the mask keeps, so such a row
// gives 0 here too; an unguarded softmax gives uniform weights where ONNX gives NaN.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "graph/quote.h"
#include "tools/tg-graph/onnx_import.h"
#include "tools/tg-graph/onnx_pattern_view.h"

namespace tg::onnx {

namespace {

// The lowest finite number of a float dtype, which the constant keeps (a float16 model's
// mask stays float16, and -FLT_MAX would be -inf there).
float lowest(DType dt) {
  if (dt == DType::F16) return -65504.0f;
  if (dt == DType::BF16) return -std::ldexp(255.0f / 128.0f, 127);  // (2 - 2^-7) 2^127
  return std::numeric_limits<float>::lowest();
}

// Ops that move a mask's entries without changing them, its data as input 0.
bool moves_entries(const Node& n) {
  return n.domain.empty() && !n.inputs.empty() &&
         (n.op_type == "Reshape" || n.op_type == "Expand" || n.op_type == "Unsqueeze" || n.op_type == "Squeeze" ||
          n.op_type == "Transpose");
}

class Fills {
 public:
  explicit Fills(Model& m) : m_(m), view_(m) {
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      for (const std::string& in : m.nodes[i].inputs)
        if (!in.empty()) readers_[in].push_back(static_cast<int>(i));
      for (const std::string& o : m.nodes[i].outputs) names_.insert(o);
      for (const std::string& in : m.nodes[i].inputs) names_.insert(in);
    }
    for (const auto& [name, t] : m.initializers) names_.insert(name);
    for (const ValueDecl& d : m.inputs) names_.insert(d.name);
    for (const ValueDecl& d : m.outputs) outputs_.insert(d.name);
  }

  void run(std::vector<std::string>& notes) {
    for (size_t i = 0; i < m_.nodes.size(); ++i) lower(static_cast<int>(i), notes);
    if (gone_.empty() && before_.empty()) return;
    std::vector<Node> kept;
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const int n = static_cast<int>(i);
      if (auto it = before_.find(n); it != before_.end())
        for (Node& extra : it->second) kept.push_back(std::move(extra));
      if (!gone_.count(n)) kept.push_back(std::move(m_.nodes[i]));
    }
    m_.nodes = std::move(kept);
  }

 private:
  bool neg_inf(const std::string& v) const {
    const std::optional<float> s = view_.scalar(v);
    return s && std::isinf(*s) && *s < 0;
  }
  // The dtype of a scalar constant: an initializer's or a Constant node's value's.
  DType dtype_of(const std::string& v) const {
    if (auto it = m_.initializers.find(v); it != m_.initializers.end()) return it->second.dtype;
    const int c = view_.prod(v, "Constant");
    if (c < 0) return DType::F32;
    const auto& attrs = node(c).attrs;
    const auto a = attrs.find("value");
    return a == attrs.end() ? DType::F32 : a->second.t.dtype;
  }
  // The one node reading v, or -1 (none, several, or v is a graph output).
  int only_reader(const std::string& v) const {
    auto it = readers_.find(v);
    if (outputs_.count(v) || it == readers_.end() || it->second.size() != 1) return -1;
    return it->second[0];
  }
  const Node& node(int i) const { return m_.nodes[static_cast<size_t>(i)]; }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    names_.insert(name);
    return name;
  }
  std::string constant(const std::string& base, float x, DType dt) {
    const std::string name = fresh(base);
    Tensor t;
    t.name = name;
    t.f = {x};
    t.dtype = dt;
    t.type_name = dt == DType::F16 ? "float16" : dt == DType::BF16 ? "bfloat16" : "float";
    m_.initializers[name] = t;
    return name;
  }

  // The guard Where(IsNaN(s), 0, s) on softmax output s: {isnan, where}, or {-1, -1}.
  std::pair<int, int> nan_guard(const std::string& s) const {
    auto it = readers_.find(s);
    if (it == readers_.end() || it->second.size() != 2 || outputs_.count(s)) return {-1, -1};
    for (int isnan : it->second) {
      const Node& n = node(isnan);
      if (n.op_type != "IsNaN" || !n.domain.empty() || n.outputs.size() != 1) continue;
      const int w = only_reader(n.outputs[0]);
      if (w < 0 || w == isnan) continue;
      const Node& g = node(w);
      if (g.op_type == "Where" && g.domain.empty() && g.inputs.size() == 3 && g.inputs[0] == n.outputs[0] &&
          view_.is_scalar(g.inputs[1], 0.0) && g.inputs[2] == s && (it->second[0] == w || it->second[1] == w))
        return {isnan, w};
    }
    return {-1, -1};
  }

  void lower(int w, std::vector<std::string>& notes) {
    const Node& where = node(w);
    if (where.op_type != "Where" || !where.domain.empty() || where.inputs.size() != 3 || where.outputs.size() != 1)
      return;
    const bool first = neg_inf(where.inputs[1]), second = neg_inf(where.inputs[2]);
    if (first == second) return;
    const size_t fill = first ? 1 : 2;
    // Through the ops that move entries, to an Add with the scores or the Softmax itself.
    std::string mask = where.outputs[0];
    int r = only_reader(mask);
    while (r >= 0 && moves_entries(node(r)) && node(r).inputs[0] == mask && node(r).outputs.size() == 1) {
      mask = node(r).outputs[0];
      r = only_reader(mask);
    }
    if (r < 0) return;
    bool added = false;
    if (node(r).op_type == "Add" && node(r).domain.empty() && node(r).inputs.size() == 2 &&
        node(r).inputs[0] != node(r).inputs[1] && node(r).outputs.size() == 1) {
      added = true;
      r = only_reader(node(r).outputs[0]);
    }
    if (r < 0 || node(r).op_type != "Softmax" || !node(r).domain.empty() || node(r).outputs.size() != 1) return;
    const int softmax = r;
    // A second fill into the same softmax (two masks added) stays -inf and is refused: the
    // first one's rewrite took the other mask for finite scores.
    if (!softmaxes_.insert(softmax).second) return;
    const std::string& s = node(softmax).outputs[0];
    const auto [isnan, guard] = nan_guard(s);
    // The row count below reads the mask's entries as 0 (kept) and the fill: only an
    // additive mask of 0 and -inf has it.
    const bool zero_else = view_.is_scalar(where.inputs[3 - fill], 0.0);
    if (guard >= 0 && !(added && zero_else)) return;  // the -inf stays, and the import refuses it by name

    const std::string where_name = quote_name(where.name.empty() ? where.outputs[0] : where.name);
    const std::string softmax_name = quote_name(node(softmax).name.empty() ? s : node(softmax).name);
    const DType dt = dtype_of(where.inputs[fill]);
    m_.nodes[static_cast<size_t>(w)].inputs[fill] = constant(where.outputs[0] + ".lowest", lowest(dt), dt);
    if (guard < 0) {
      notes.push_back(fmt::format("node {}: the mask's -inf fill into softmax {} imported as the lowest finite number: "
                                  "the same softmax for every row that keeps an entry; a row masked whole gives "
                                  "uniform weights here and NaN in ONNX",
                                  where_name, softmax_name));
      return;
    }
    // kept = ReduceSum(Relu(mask + 1), last axis): the mask is 0 or the lowest number, so
    // Relu(mask + 1) is 1 where it keeps an entry and 0 where it masks one.
    const Node& g = node(guard);
    const std::string base = g.outputs[0];
    Node plus{fresh(base + ".mask_plus_one"), "Add", "", {mask, constant(base + ".one", 1.0f, dt)}, {}, {}};
    plus.outputs = {plus.name};
    Node relu{fresh(base + ".kept_entries"), "Relu", "", {plus.name}, {}, {}};
    relu.outputs = {relu.name};
    Node count{fresh(base + ".kept_per_row"), "ReduceSum", "", {relu.name}, {}, {}};
    count.outputs = {count.name};
    count.attrs["axes"].kind = Attribute::Kind::ints;
    count.attrs["axes"].ints = {-1};
    count.attrs["keepdims"].kind = Attribute::Kind::i;
    count.attrs["keepdims"].i = 1;
    Node& guarded = m_.nodes[static_cast<size_t>(guard)];
    guarded.inputs = {count.name, s, guarded.inputs[1]};
    before_[guard] = {plus, relu, count};
    gone_.insert(isnan);
    notes.push_back(fmt::format("node {}: the mask's -inf fill into softmax {} imported as the lowest finite number, "
                                "and its NaN guard {} as a choice on the row's count of kept entries: the same "
                                "result, 0 for a row masked whole",
                                where_name, softmax_name, quote_name(guarded.name.empty() ? base : guarded.name)));
  }

  Model& m_;
  View view_;
  std::map<std::string, std::vector<int>> readers_;
  std::set<std::string> names_, outputs_;
  std::set<int> gone_, softmaxes_;
  std::map<int, std::vector<Node>> before_;
};

}  // namespace

void lower_infinite_fills(Model& m, std::vector<std::string>& notes) { Fills(m).run(notes); }

}  // namespace tg::onnx
