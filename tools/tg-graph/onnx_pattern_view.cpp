#include "tools/tg-graph/onnx_pattern_view.h"

#include <algorithm>
#include <cmath>

namespace tg::onnx {

View::View(Model& m)
    : m_(m), gone_(m.nodes.size(), false), stamp_(m.nodes.size(), 0), fused_output_(m.nodes.size(), -1) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const int n = static_cast<int>(i);
    for (const std::string& o : m.nodes[i].outputs)
      if (!o.empty()) producers_[static_cast<size_t>(intern(o))].push_back(n);  // "": an omitted optional output
    for (const std::string& in : m.nodes[i].inputs) {
      if (in.empty()) continue;
      const size_t v = static_cast<size_t>(intern(in));
      consumers_[v].push_back({n, 0});
      ++live_readers_[v];
    }
  }
  for (const ValueDecl& o : m.outputs) outputs_.insert(o.name);
}

int View::intern(const std::string& v) {
  auto [it, fresh] = ids_.emplace(v, static_cast<int>(ids_.size()));
  if (fresh) {
    producers_.emplace_back();
    consumers_.emplace_back();
    live_readers_.push_back(0);
  }
  return it->second;
}

// Every name a node mentions is interned when the view is made, and fusing mentions no
// new one: a name without an id is no node's input or output, now or later.
int View::id_of(const std::string& v) const {
  auto it = ids_.find(v);
  return it == ids_.end() ? -1 : it->second;
}

bool View::produces(int node, int v) const {
  const size_t n = static_cast<size_t>(node);
  return !gone_[n] && (fused_output_[n] < 0 || fused_output_[n] == v);
}

// A node that stops producing v never starts again (gone is for good, and a fused node
// keeps its one output), so the back of the list can be dropped as it is met.
int View::producer_of(int v) const {
  std::vector<int>& list = producers_[static_cast<size_t>(v)];
  while (!list.empty() && !produces(list.back(), v)) list.pop_back();
  return list.empty() ? -1 : list.back();
}

const std::vector<View::Reader>& View::readers(int v) const {
  std::vector<Reader>& list = consumers_[static_cast<size_t>(v)];
  const size_t live = static_cast<size_t>(live_readers_[static_cast<size_t>(v)]);
  if (list.size() > 2 * live + 8)
    list.erase(std::remove_if(list.begin(), list.end(), [this](const Reader& r) { return !current(r); }), list.end());
  return list;
}

bool View::usable(int i) const {
  const Node& n = node(i);
  if (n.outputs.empty()) return false;
  const bool unary = n.op_type == "Tanh" || n.op_type == "Erf" || n.op_type == "Sqrt" || n.op_type == "ReduceMean" ||
                     n.op_type == "IsNaN" || n.op_type == "Softmax";
  if (n.op_type == "Where") return n.inputs.size() == 3;
  return n.inputs.size() >= (n.op_type == "Constant" ? 0u : unary ? 1u : 2u);
}

int View::prod(const std::string& v, const char* op) const {
  const int id = id_of(v);
  if (id < 0) return -1;
  if (reads_) reads_->producers.push_back(id);
  const int p = producer_of(id);
  return p >= 0 && node(p).op_type == op && node(p).domain.empty() && usable(p) ? p : -1;
}

int View::only_consumer(int i, const char* op) const {
  const int id = id_of(node(i).outputs[0]);
  if (id < 0) return -1;
  if (reads_) reads_->consumers.push_back(id);
  if (live_readers_[static_cast<size_t>(id)] != 1) return -1;
  for (const Reader& r : readers(id))
    if (current(r)) return node(r.node).op_type == op && usable(r.node) ? r.node : -1;
  return -1;
}

std::optional<float> View::scalar(const std::string& v) const {
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

bool View::is_scalar(const std::string& v, double expected) const {
  const std::optional<float> s = scalar(v);
  return s && std::fabs(*s - expected) <= 1e-5 * std::max(1.0, std::fabs(expected));
}

std::string View::other(int i, const std::string& known) const {
  const Node& n = node(i);
  if (n.inputs.size() != 2) return "";
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return "";
}

std::string View::operand_beside_scalar(int i, double c) const {
  const Node& n = node(i);
  if (n.inputs.size() != 2) return "";
  if (is_scalar(n.inputs[0], c)) return n.inputs[1];
  if (is_scalar(n.inputs[1], c)) return n.inputs[0];
  return "";
}

bool View::closed(const std::set<int>& inner, int last) const {
  for (int i : inner)
    for (const std::string& o : node(i).outputs) {
      if (outputs_.count(o)) return false;
      const int id = id_of(o);
      if (id < 0) continue;
      if (reads_) reads_->consumers.push_back(id);
      for (const Reader& r : readers(id))
        if (current(r) && r.node != last && !inner.count(r.node)) return false;
    }
  return true;
}

void View::add_reads(int node, ViewReads* changed) {
  for (const std::string& in : m_.nodes[static_cast<size_t>(node)].inputs) {
    if (in.empty()) continue;
    const size_t v = static_cast<size_t>(id_of(in));
    consumers_[v].push_back({node, stamp_[static_cast<size_t>(node)]});
    ++live_readers_[v];
    changed->consumers.push_back(static_cast<int>(v));
  }
}

void View::drop_reads(int node, ViewReads* changed) {
  for (const std::string& in : m_.nodes[static_cast<size_t>(node)].inputs) {
    if (in.empty()) continue;
    const size_t v = static_cast<size_t>(id_of(in));
    --live_readers_[v];
    changed->consumers.push_back(static_cast<int>(v));
  }
}

void View::note_outputs(int node, ViewReads* changed) const {
  for (const std::string& o : m_.nodes[static_cast<size_t>(node)].outputs) changed->producers.push_back(id_of(o));
}

void View::fuse(int last, Node fused, const std::set<int>& inner, ViewReads* changed) {
  const size_t l = static_cast<size_t>(last);
  drop_reads(last, changed);
  note_outputs(last, changed);
  m_.nodes[l] = std::move(fused);
  ++stamp_[l];
  fused_output_[l] = id_of(m_.nodes[l].outputs[0]);
  add_reads(last, changed);
  for (int i : inner) {
    drop_reads(i, changed);
    note_outputs(i, changed);
    gone_[static_cast<size_t>(i)] = true;
  }
}

std::vector<Node> View::live_nodes() const {
  std::vector<Node> kept;
  for (size_t i = 0; i < m_.nodes.size(); ++i)
    if (!gone_[i]) kept.push_back(m_.nodes[i]);
  return kept;
}

}  // namespace tg::onnx
