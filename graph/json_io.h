#pragma once
// Graph files: JSON that a person can write by hand (docs/graph-format.md).
//
//   {"format": "twograph-graph", "version": 1,
//    "inputs":     [{"name": "x", "shape": [32, 512]}],
//    "parameters": [{"name": "w0", "shape": [512, 256], "init": {"uniform": 0.05}}],
//    "nodes":      [{"name": "h0", "op": "matmul", "inputs": ["x", "w0"]}],
//    "outputs":    ["h0"]}
//
// A node's output value carries the node's name; its shape is inferred on load.
// Loading rejects anything it cannot read (unknown keys, wrong types, unknown
// names, shape errors, cycles) with a GraphError that names the source, the JSON
// path or node, and the fix. It does not run validate(): `tg-graph check` does both.
#include <cstddef>
#include <string>

#include "graph/graph.h"

namespace tg {

constexpr size_t kMaxGraphFileBytes = size_t{64} << 20;
// A valid graph file nests 5 levels deep; anything far deeper is hostile or broken,
// and is refused before the parser sees it.
constexpr int kMaxGraphJsonDepth = 64;

// `source_name` prefixes every message ("mlp.json:3:14: ...").
Graph load_graph_json(const std::string& text, const std::string& source_name);
// Reads the file (refusing more than kMaxGraphFileBytes) and loads it.
Graph load_graph_file(const std::string& path);

// The inverse of load: load_graph_json(save_graph_json(g)) == g, value ids
// included. Throws GraphError for a graph the format cannot express (a leaf
// value that is not an input, parameter or optimizer state; a node whose output
// is not named after it; ids out of range).
std::string save_graph_json(const Graph& g);

// The attributes of a node that its op reads and that differ from the
// defaults, as compact JSON ("{\"trans_b\":true}"), or "" when there are none.
// Used by the text dump and the DOT export.
std::string node_attrs_json(const Graph& g, const Node& n);

}  // namespace tg
