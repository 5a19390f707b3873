#pragma once
// Building the graph a pass returns (internal to static/passes): the source graph with
// some nodes removed and fused nodes added in their place.
//
// While rewriting, value ids are the source's, and new values get ids after them. A new
// node takes the place of an anchor node of the source (the last node of the pattern it
// replaces, after every input of the pattern), so the rewritten graph keeps the order
// the source was recorded in and Graph::topo_order schedules it the same way. finish()
// drops the removed nodes and every value no remaining node produces (leaves stay),
// renumbers, and checks that nothing reads a value that was dropped.
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/name_index.h"

namespace tg {

// Names no value or node of g has, nor one given before: base, or base.1, base.2, ...
// A name given stays taken, so the search for a base goes on where it last stopped.
class FreshNames {
 public:
  explicit FreshNames(const Graph& g) : g_(g) {}
  std::string next(const std::string& base) {
    if (!index_) index_.emplace(g_);
    for (int& k = next_[base];; ++k) {
      std::string s = k == 0 ? base : base + "." + std::to_string(k);
      if (!index_->taken(s) && given_.insert(s).second) return s;
    }
  }

 private:
  const Graph& g_;
  std::optional<NameIndex> index_;  // built at the first name asked for
  std::unordered_set<std::string> given_;
  std::unordered_map<std::string, int> next_;  // per base: the suffix to try first (0: none)
};

class GraphRewrite {
 public:
  explicit GraphRewrite(const Graph& src);

  const Graph& source() const { return src_; }
  // Per source value: the nodes that read it (from the source; rewriting does not change it).
  const std::vector<std::vector<int>>& consumers() const { return consumers_; }
  // True when v is read by exactly one source node, through one of its inputs, and is
  // not a graph output: the values a pass may fuse away.
  bool only_read_by(int v, int node) const;
  // The same, where `node` may read v through several of its inputs (mul(h, h)): an
  // elementwise program reads a result as often as it likes.
  bool only_reader(int v, int node) const;
  // Whether v is a graph output, which a pass keeps.
  bool is_output(int v) const { return is_output_[static_cast<size_t>(v)]; }
  // The source node that produces v, or -1.
  int producer(int v) const { return src_.values[static_cast<size_t>(v)].producer; }
  bool removed(int node) const { return removed_[static_cast<size_t>(node)]; }
  // The node producing v when it is `op`, not yet removed, and v is read by `reader`
  // alone (only_read_by); else -1: the producer a pattern may fuse into its reader.
  int fusable_producer(int v, OpKind op, int reader) const;

  void remove(int node);
  // A source leaf (a parameter, input or optimizer state) that the rewrite leaves unread and
  // finish() drops instead of keeping (a weight copy a pass replaced with another).
  void drop_leaf(int v) { dropped_leaves_.push_back(v); }
  // A new value (id after the source's).
  int add_value(ValueInfo v);
  // A value's info: the source's or a new one's.
  const ValueInfo& value_info(int v) const {
    const size_t n = src_.values.size();
    return static_cast<size_t>(v) < n ? src_.values[static_cast<size_t>(v)] : new_values_[static_cast<size_t>(v) - n];
  }
  // A new node at `anchor`'s place; inputs and outputs are ids as above. Its outputs'
  // producer is set by finish().
  void add_node(Node n, int anchor);
  // A slice node at `anchor`'s place: `to` = `size` entries of `from` along `axis` from
  // `start`, the node named after its output (as every node is).
  void add_slice(int from, int to, int axis, int64_t start, int64_t size, int anchor);
  // The commonest rewrite: `producer` folded into `reader`, the node that reads it. Both
  // go; `fused` takes the reader's name, outputs and place.
  void fuse_into_reader(int producer, int reader, Node fused);

  Graph finish() const;

 private:
  const Graph& src_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;  // per source value: a graph output
  std::vector<bool> removed_;
  std::vector<ValueInfo> new_values_;
  std::vector<int> dropped_leaves_;
  struct Added {
    Node node;
    int anchor;
  };
  std::vector<Added> added_;
};

}  // namespace tg
