#include "static/passes/rewrite.h"

#include <algorithm>

#include "graph/errors.h"

namespace tg {

GraphRewrite::GraphRewrite(const Graph& src)
    : src_(src), consumers_(src.consumers()), is_output_(src.values.size(), false), removed_(src.nodes.size(), false) {
  for (int o : src.outputs)
    if (o >= 0 && static_cast<size_t>(o) < is_output_.size()) is_output_[static_cast<size_t>(o)] = true;
}

bool GraphRewrite::only_reader(int v, int node) const {
  const std::vector<int>& c = consumers_[static_cast<size_t>(v)];
  return c.size() == 1 && c[0] == node && !is_output(v);
}

bool GraphRewrite::only_read_by(int v, int node) const {
  // A node reading v twice (mul(x, x)) lists it once in consumers(): count its reads.
  const Node& n = src_.nodes[static_cast<size_t>(node)];
  return only_reader(v, node) && std::count(n.inputs.begin(), n.inputs.end(), v) == 1;
}

int GraphRewrite::fusable_producer(int v, OpKind op, int reader) const {
  const int p = producer(v);
  if (p < 0 || removed(p) || src_.nodes[static_cast<size_t>(p)].op != op) return -1;
  return only_read_by(v, reader) ? p : -1;
}

void GraphRewrite::remove(int node) { removed_[static_cast<size_t>(node)] = true; }

int GraphRewrite::add_value(ValueInfo v) {
  new_values_.push_back(std::move(v));
  return static_cast<int>(src_.values.size() + new_values_.size()) - 1;
}

void GraphRewrite::add_node(Node n, int anchor) { added_.push_back({std::move(n), anchor}); }

void GraphRewrite::add_slice(int from, int to, int axis, int64_t start, int64_t size, int anchor) {
  Node s;
  s.op = OpKind::slice;
  s.name = value_info(to).name;
  s.attrs.axis = axis;
  s.attrs.start = start;
  s.attrs.size = size;
  s.inputs = {from};
  s.outputs = {to};
  add_node(std::move(s), anchor);
}

void GraphRewrite::fuse_into_reader(int producer, int reader, Node fused) {
  const Node& r = src_.nodes[static_cast<size_t>(reader)];
  fused.name = r.name;
  fused.outputs = r.outputs;
  remove(producer);
  remove(reader);
  add_node(std::move(fused), reader);
}

Graph GraphRewrite::finish() const {
  const size_t nall = src_.values.size() + new_values_.size();
  // The nodes in order: each kept node at its own index, each added one at its anchor's
  // (after it; in the order added when several share an anchor).
  std::vector<std::vector<const Node*>> at(src_.nodes.size());
  for (size_t i = 0; i < src_.nodes.size(); ++i)
    if (!removed_[i]) at[i].push_back(&src_.nodes[i]);
  for (const Added& a : added_) at[static_cast<size_t>(a.anchor)].push_back(&a.node);
  std::vector<const Node*> nodes;
  for (const auto& list : at) nodes.insert(nodes.end(), list.begin(), list.end());

  std::vector<bool> keep(nall, false);
  for (size_t v = 0; v < nall; ++v) {
    const Role r = value_info(static_cast<int>(v)).role;
    keep[v] = value_info(static_cast<int>(v)).producer < 0 &&
              (r == Role::input || r == Role::parameter || r == Role::optimizer_state);
  }
  for (int v : dropped_leaves_) keep[static_cast<size_t>(v)] = false;
  for (const Node* n : nodes)
    for (int o : n->outputs) keep[static_cast<size_t>(o)] = true;
  std::vector<int> id(nall, -1);
  Graph g;
  g.values.reserve(nall);
  g.nodes.reserve(nodes.size());
  for (size_t v = 0; v < nall; ++v) {
    if (!keep[v]) continue;
    id[v] = static_cast<int>(g.values.size());
    ValueInfo vi = value_info(static_cast<int>(v));
    vi.producer = -1;
    g.values.push_back(std::move(vi));
  }
  auto map = [&](int v, const Node& n) {
    if (v < 0 || static_cast<size_t>(v) >= nall || id[static_cast<size_t>(v)] < 0)
      graph_error("graph pass: node '{}' ({}) reads '{}', which the pass removed; a pass may only fuse away values "
                  "nothing else reads", n.name, op_name(n.op),
                  v >= 0 && static_cast<size_t>(v) < nall ? value_info(v).name : "?");
    return id[static_cast<size_t>(v)];
  };
  for (const Node* src : nodes) {
    Node n = *src;
    for (int& v : n.inputs) v = map(v, *src);
    for (int& v : n.outputs) v = map(v, *src);
    g.add_node(std::move(n));
  }
  for (int o : src_.outputs) {
    if (id[static_cast<size_t>(o)] < 0)
      graph_error("graph pass: graph output '{}' was removed; a pass must keep every output", value_info(o).name);
    g.outputs.push_back(id[static_cast<size_t>(o)]);
  }
  return g;
}

}  // namespace tg
