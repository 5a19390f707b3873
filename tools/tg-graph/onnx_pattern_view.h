#pragma once
// The dataflow of an ONNX model by value name, as the formula rewrites (onnx_patterns.cpp)
// read it: who produces a value, who reads it. It stays current while nodes are fused, so
// that one pass over the model finds every rewrite, and it can note which values a
// search looked at, so that a search that failed is repeated only when one of them changed.
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/tg-graph/onnx_model.h"

namespace tg::onnx {

// The values one search read, by value id: whose producer, whose readers.
struct ViewReads {
  std::vector<int> producers, consumers;
};

class View {
 public:
  // Node ids are the model's node indices when the view is made; they stay valid while
  // nodes are fused (a fused node keeps its place, the nodes it absorbs are gone).
  explicit View(Model& m);

  // Whether node i has the operands and the output the rewrites read of its op; one
  // without them is never part of a match, and the mapping refuses it by name.
  bool usable(int i) const;
  // The node producing v when its op is `op` (default domain) and it is usable, else -1.
  // Of several producers, the last one in node order.
  int prod(const std::string& v, const char* op) const;
  const Node& node(int i) const { return m_.nodes[static_cast<size_t>(i)]; }
  // The single consumer of node i's output, with op `op` and usable; else -1.
  int only_consumer(int i, const char* op) const;
  // A one-element float constant: an initializer or a Constant node's value.
  std::optional<float> scalar(const std::string& v) const;
  bool is_scalar(const std::string& v, double expected) const;
  // For a binary node: the operand that is not `known` (either order), or "".
  std::string other(int i, const std::string& known) const;
  // Of a binary node, the operand that is the scalar `c` and the other one.
  std::string operand_beside_scalar(int i, double c) const;
  // Every output of the nodes in `inner` is read only by nodes of inner or `last`.
  bool closed(const std::set<int>& inner, int last) const;
  bool is_graph_output(const std::string& v) const { return outputs_.count(v) > 0; }

  // How many value names the model's nodes mention (value ids are below it).
  size_t values() const { return ids_.size(); }
  bool gone(int i) const { return gone_[static_cast<size_t>(i)]; }
  // While set, every producer and consumer lookup is noted in *reads.
  void record(ViewReads* reads) { reads_ = reads; }

  // Node `last` becomes `fused` and the nodes of `inner` go (`last` too, if it is one of
  // them). Adds the values whose producers or readers changed to *changed.
  void fuse(int last, Node fused, const std::set<int>& inner, ViewReads* changed);
  // The nodes still there, in order.
  std::vector<Node> live_nodes() const;

 private:
  // A node's entry in a value's readers; `stamp` is the node's when it was added: a fused
  // node gets a new one, which retires the entries of what it was.
  struct Reader {
    int node;
    int stamp;
  };
  int id_of(const std::string& v) const;
  int intern(const std::string& v);
  bool current(const Reader& r) const {
    return !gone_[static_cast<size_t>(r.node)] && r.stamp == stamp_[static_cast<size_t>(r.node)];
  }
  bool produces(int node, int v) const;
  int producer_of(int v) const;
  // v's current readers, one entry per input that reads it (retired entries among them
  // are skipped by the callers; dropped once they outnumber the current ones).
  const std::vector<Reader>& readers(int v) const;
  void add_reads(int node, ViewReads* changed);
  void drop_reads(int node, ViewReads* changed);
  void note_outputs(int node, ViewReads* changed) const;

  Model& m_;
  std::unordered_map<std::string, int> ids_;
  // Per value: the nodes listing it as an output, in node order (those that no longer
  // do are dropped from the back as lookups meet them).
  mutable std::vector<std::vector<int>> producers_;
  mutable std::vector<std::vector<Reader>> consumers_;
  std::vector<int> live_readers_;  // per value: how many current entries its readers hold
  std::vector<bool> gone_;
  std::vector<int> stamp_;
  std::vector<int> fused_output_;  // per node: a fused node's one output, else -1
  std::set<std::string> outputs_;
  ViewReads* reads_ = nullptr;
};

}  // namespace tg::onnx
