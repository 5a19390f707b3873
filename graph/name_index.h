#pragma once
// The names of a graph's values and nodes, looked up in constant time where
// Graph::find_value and find_node scan: what code that names things as it records
// (RecordingBuilder, the ONNX importer) asks once per node.
//
// It knows what it has seen of the graph: sync() takes in the values and nodes appended
// since (and starts over when the graph has fewer than it saw). A name changed in place
// must be reported with value_renamed() / node_renamed().
#include <string>
#include <unordered_map>

#include "graph/graph.h"

namespace tg {

class NameIndex {
 public:
  explicit NameIndex(const Graph& g) : g_(&g) { sync(); }

  void sync();
  // As Graph::find_value and find_node: the lowest id with the name, -1 when none.
  int find_value(const std::string& name) const { return values_.find(name); }
  int find_node(const std::string& name) const { return nodes_.find(name); }
  // Whether a value or a node has the name.
  bool taken(const std::string& name) const { return find_value(name) >= 0 || find_node(name) >= 0; }
  // Value (node) `id`, already renamed in the graph, was called `old_name`.
  void value_renamed(int id, const std::string& old_name);
  void node_renamed(int id, const std::string& old_name);

 private:
  // Per name: the lowest id holding it and how many do.
  class Ids {
   public:
    int find(const std::string& name) const;
    void add(const std::string& name, int id);
    // Drops `id` from `name`; when it was the lowest of several, lowest_with(name) finds the next.
    template <typename LowestWith>
    void remove(const std::string& name, int id, LowestWith lowest_with);
    void clear() { ids_.clear(); }

   private:
    struct Entry {
      int lowest;
      int count;
    };
    std::unordered_map<std::string, Entry> ids_;
  };

  const Graph* g_;
  Ids values_, nodes_;
  size_t values_seen_ = 0, nodes_seen_ = 0;
};

}  // namespace tg
