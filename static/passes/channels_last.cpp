// channels_last: a CNN's spatial ops on NHWC activations (docs/cnn.md, "Layout").
//
// The graph's layout is NCHW. This pass gives every 4-D activation that a convolution, a
// pool or a batch norm reads or writes the NHWC order instead, and sets those ops'
// channels_last attribute (attrs.conv.channels_last; attrs.channels_last for the batch_norm
// family). Forward and backward alike: the pass runs after autodiff and rewrites whatever
// nodes the graph holds.
//
// Each value has a logical shape (the source graph's) and an order: physical dim d of it
// holds logical dim order[d]. NCHW values have the identity order; an NHWC value has
// {0, 2, 3, 1}. The pass decides in two walks:
//  1. What each value would like to be (`want`): the activations of the spatial ops NHWC,
//     spread through the ops that do not care (same-shape elementwise ops: add, relu,
//     relu_grad, casts, fused_elementwise, ...), forward through reductions (a global
//     average pool's reduce_means over W and H keep C innermost: [N, H, C], then [N, C]) and
//     backward through broadcasts (the bias and the pool's gradient: [C] broadcast to
//     [P, C], then [P, Q, C]).
//  2. In node order, what each value is: a spatial op's activations are NHWC, a layout-blind
//     op takes the order its output wants, a reduction or broadcast follows its input (its
//     axis attribute moved to the physical axis), and every other op reads the identity
//     order. Where a node reads a value in another order than it has, a transpose is put
//     before it, once per value and order: the image input on its way into the first
//     convolution, the feature map before the classifier's reshape. A graph output keeps its
//     name and the NCHW order: the node writes an NHWC value named `<name>.nhwc` and a
//     transpose makes the output from it.
// Values keep their ids and names; their shapes become the physical ones. A graph without a
// 4-D convolution, pool or batch norm is returned as it is.
//
// The pass runs last in the pipeline, so that it rewrites the fused convolutions of the conv
// and bn_fold passes and the elementwise pass's chains, and needs to know none of their patterns.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/channels_last.h"
#include "static/passes/pass.h"

namespace tg {

namespace {

// Physical dim d holds logical dim dims[d].
struct Order {
  int rank = 0;
  std::array<int, kMaxRank> dims{};
  static Order identity(int rank) {
    Order o;
    o.rank = rank;
    for (int d = 0; d < rank; ++d) o.dims[static_cast<size_t>(d)] = d;
    return o;
  }
  static Order nhwc() {
    Order o;
    o.rank = 4;
    o.dims = {0, 2, 3, 1};
    return o;
  }
  bool is_identity() const { return *this == identity(rank); }
  bool operator==(const Order& o) const {
    if (rank != o.rank) return false;
    for (int d = 0; d < rank; ++d)
      if (dims[static_cast<size_t>(d)] != o.dims[static_cast<size_t>(d)]) return false;
    return true;
  }
  bool operator<(const Order& o) const { return rank != o.rank ? rank < o.rank : dims < o.dims; }
  // The physical position of logical dim a.
  int position(int a) const {
    for (int d = 0; d < rank; ++d)
      if (dims[static_cast<size_t>(d)] == a) return d;
    return -1;
  }
  // The order once logical dim a is reduced away (the dims after it renumbered).
  Order without(int a) const {
    Order o;
    for (int d = 0; d < rank; ++d) {
      const int l = dims[static_cast<size_t>(d)];
      if (l != a) o.dims[static_cast<size_t>(o.rank++)] = l > a ? l - 1 : l;
    }
    return o;
  }
  Shape physical(const Shape& logical) const {
    Shape s = logical;
    for (int d = 0; d < rank; ++d) s.dims[static_cast<size_t>(d)] = logical[dims[static_cast<size_t>(d)]];
    return s;
  }
  std::string suffix() const {
    if (*this == nhwc()) return "nhwc";
    if (rank == 4 && is_identity()) return "nchw";
    std::string s = "order";
    for (int d = 0; d < rank; ++d) s += std::to_string(dims[static_cast<size_t>(d)]);
    return s;
  }
};

// A convolution, pool or batch norm of 4-D activations.
bool is_spatial(const Graph& g, const Node& n) {
  const ChannelsLastOperands a = channels_last_operands(n.op);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (a.input(i)) return g.values[static_cast<size_t>(n.inputs[i])].shape.rank == 4;
  return false;
}

bool is_activation_input(const Node& n, size_t i) { return channels_last_operands(n.op).input(i); }

// Same-shape elementwise ops: an element's value depends only on the same element of the
// inputs, so any order of the dims gives the same values. (dropout is not one: its mask is
// drawn by flat index.)
bool layout_blind(const Graph& g, const Node& n) {
  if (!(op_in_family(n.op, "elementwise") || op_in_family(n.op, "activation")) || n.op == OpKind::fill) return false;
  if (n.outputs.size() != 1) return false;
  const Shape& s = g.values[static_cast<size_t>(n.outputs[0])].shape;
  for (int v : n.inputs)
    if (g.values[static_cast<size_t>(v)].shape != s) return false;
  return true;
}

bool is_reduce(OpKind op) { return op == OpKind::reduce_sum || op == OpKind::reduce_mean; }

int axis_of(const Node& n, int rank) { return n.attrs.axis < 0 ? n.attrs.axis + rank : n.attrs.axis; }

// Walk 1: the order each value would like.
std::vector<std::optional<Order>> wanted_orders(const Graph& g) {
  std::vector<std::optional<Order>> want(g.values.size());
  for (const Node& n : g.nodes) {
    if (!is_spatial(g, n)) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (is_activation_input(n, i)) want[static_cast<size_t>(n.inputs[i])] = Order::nhwc();
    if (channels_last_operands(n.op).output) want[static_cast<size_t>(n.outputs[0])] = Order::nhwc();
  }
  auto rank_of = [&](int v) { return g.values[static_cast<size_t>(v)].shape.rank; };
  // Spread until nothing changes; each round sets at least one value, so it ends.
  for (bool changed = true; changed;) {
    changed = false;
    auto set = [&](int v, const Order& o) {
      if (want[static_cast<size_t>(v)] || o.rank != rank_of(v) || o.is_identity()) return;
      want[static_cast<size_t>(v)] = o;
      changed = true;
    };
    for (const Node& n : g.nodes) {
      if (layout_blind(g, n)) {
        std::optional<Order> o = want[static_cast<size_t>(n.outputs[0])];
        for (int v : n.inputs)
          if (!o) o = want[static_cast<size_t>(v)];
        if (!o) continue;
        for (int v : n.inputs) set(v, *o);
        set(n.outputs[0], *o);
      } else if (is_reduce(n.op)) {
        const std::optional<Order>& in = want[static_cast<size_t>(n.inputs[0])];
        if (in) set(n.outputs[0], in->without(axis_of(n, in->rank)));
      } else if (n.op == OpKind::broadcast) {
        const std::optional<Order>& out = want[static_cast<size_t>(n.outputs[0])];
        if (out) set(n.inputs[0], out->without(axis_of(n, out->rank)));
      }
    }
  }
  return want;
}

class Relayout {
 public:
  explicit Relayout(const Graph& src) : src_(src), want_(wanted_orders(src)) {
    out_.values = src.values;
    out_.outputs = src.outputs;
    for (ValueInfo& v : out_.values) v.producer = -1;  // set again as the nodes are added
    order_.resize(src.values.size());
    for (size_t v = 0; v < src.values.size(); ++v) order_[v] = Order::identity(src.values[v].shape.rank);
    is_output_.assign(src.values.size(), false);
    for (int v : src.outputs) is_output_[static_cast<size_t>(v)] = true;
  }

  Graph run() {
    for (const Node& n : src_.nodes) rewrite(n);
    return std::move(out_);
  }

 private:
  // Value v (a source id) in order `to`: v itself, or a transpose of it made once.
  int in_order(int v, const Order& to) {
    const Order have = order_[static_cast<size_t>(v)];  // a copy: order_ grows below
    if (have == to) return v;
    const auto key = std::make_pair(v, to);
    const auto it = converted_.find(key);
    if (it != converted_.end()) return it->second;
    const ValueInfo& info = src_.values[static_cast<size_t>(v)];
    ValueInfo t;
    t.name = info.name + "." + to.suffix();
    t.shape = to.physical(info.shape);
    t.dtype = info.dtype;
    const int id = out_.add_value(std::move(t));
    order_.push_back(to);
    Node tr;
    tr.name = info.name + "." + to.suffix();  // a node shares its name with its output
    tr.op = OpKind::transpose;
    tr.inputs = {v};
    tr.outputs = {id};
    // Output physical dim d holds logical dim to[d], which the input holds at its position in `have`.
    for (int d = 0; d < to.rank; ++d)
      tr.attrs.perm[static_cast<size_t>(d)] = have.position(to.dims[static_cast<size_t>(d)]);
    out_.add_node(std::move(tr));
    converted_[key] = id;
    return id;
  }

  // Output v of a node gets `order`: its shape becomes the physical one. A graph output
  // keeps the identity order under its name: the node writes `<name>.<order>` instead,
  // and a transpose after the node (finish_outputs) makes the output from it.
  int output_as(int v, const Order& order) {
    if (order.is_identity() || !is_output_[static_cast<size_t>(v)]) {
      order_[static_cast<size_t>(v)] = order;
      out_.values[static_cast<size_t>(v)].shape = order.physical(src_.values[static_cast<size_t>(v)].shape);
      return v;
    }
    ValueInfo inner = src_.values[static_cast<size_t>(v)];
    inner.name += "." + order.suffix();
    inner.shape = order.physical(inner.shape);
    inner.role = Role::temporary;
    const int id = out_.add_value(std::move(inner));
    order_.push_back(order);
    pending_outputs_.push_back({id, v});
    return id;
  }

  void finish_outputs() {
    for (const auto& [inner, v] : pending_outputs_) {
      const Order have = order_[static_cast<size_t>(inner)];
      Node tr;
      tr.name = src_.values[static_cast<size_t>(v)].name;  // the output's producer, named after it
      tr.op = OpKind::transpose;
      tr.inputs = {inner};
      tr.outputs = {v};
      for (int d = 0; d < have.rank; ++d) tr.attrs.perm[static_cast<size_t>(d)] = have.position(d);
      out_.add_node(std::move(tr));
      converted_[std::make_pair(v, have)] = inner;
    }
    pending_outputs_.clear();
  }

  void rewrite(const Node& src) {
    Node n = src;
    auto rank_of = [&](int v) { return src_.values[static_cast<size_t>(v)].shape.rank; };
    if (is_spatial(src_, src)) {
      const bool activation_out = channels_last_operands(src.op).output;
      for (size_t i = 0; i < n.inputs.size(); ++i)
        n.inputs[i] =
            in_order(src.inputs[i], is_activation_input(src, i) ? Order::nhwc() : Order::identity(rank_of(src.inputs[i])));
      if (op_in_family(n.op, "conv")) n.attrs.conv.channels_last = true;
      else n.attrs.channels_last = true;
      for (size_t i = 0; i < n.outputs.size(); ++i)
        n.outputs[i] =
            output_as(src.outputs[i], activation_out && i == 0 ? Order::nhwc() : Order::identity(rank_of(src.outputs[i])));
    } else if (layout_blind(src_, src)) {
      const int y = src.outputs[0];
      const std::optional<Order>& w = want_[static_cast<size_t>(y)];
      const Order o = w ? *w : Order::identity(rank_of(y));
      for (size_t i = 0; i < n.inputs.size(); ++i) n.inputs[i] = in_order(src.inputs[i], o);
      n.outputs[0] = output_as(y, o);
    } else if (is_reduce(src.op)) {
      const Order& in = order_[static_cast<size_t>(src.inputs[0])];
      const int axis = axis_of(src, in.rank);
      n.attrs.axis = in.position(axis);
      n.outputs[0] = output_as(src.outputs[0], in.without(axis));
    } else if (src.op == OpKind::broadcast) {
      const int y = src.outputs[0];
      const int axis = axis_of(src, rank_of(y));
      const Order& in = order_[static_cast<size_t>(src.inputs[0])];
      const std::optional<Order>& w = want_[static_cast<size_t>(y)];
      const Order o = w && w->without(axis) == in ? *w : Order::identity(rank_of(y));
      n.inputs[0] = in_order(src.inputs[0], o.without(axis));
      n.attrs.axis = o.position(axis);
      n.outputs[0] = output_as(y, o);
    } else {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        n.inputs[i] = in_order(src.inputs[i], Order::identity(rank_of(src.inputs[i])));
    }
    // A node named after an output it now writes under another name takes that name, and
    // the transpose that makes the output takes the output's (finish_outputs).
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != src.outputs[i] && n.name == src_.values[static_cast<size_t>(src.outputs[i])].name)
        n.name = out_.values[static_cast<size_t>(n.outputs[i])].name;
    out_.add_node(std::move(n));
    finish_outputs();
  }

  const Graph& src_;
  std::vector<std::optional<Order>> want_;
  Graph out_;
  std::vector<Order> order_;  // per value of out_ (source ids first)
  std::vector<bool> is_output_;
  std::map<std::pair<int, Order>, int> converted_;
  std::vector<std::pair<int, int>> pending_outputs_;  // (the node's NHWC output, the graph output it becomes)
};

}  // namespace

Graph pass_channels_last(const Graph& g) {
  bool cnn = false;
  for (const Node& n : g.nodes) cnn = cnn || is_spatial(g, n);
  if (!cnn) return g;
  return Relayout(g).run();
}

}  // namespace tg
