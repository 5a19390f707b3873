#pragma once
// Graphviz DOT export: one box per node labelled with its op, name and output
// shape; one ellipse per leaf value (inputs, parameters, optimizer state); edges
// follow the values; fill colours show roles. `dot -Tsvg g.dot > g.svg` draws it.
#include <string>

#include "graph/graph.h"

namespace tg {

std::string graph_to_dot(const Graph& g, const std::string& title = "twograph");

}  // namespace tg
