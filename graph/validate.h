#pragma once
// Whole-graph checks: everything a Graph built in code or loaded from a file
// must satisfy before an executor, the planner or a tool touches it. Each
// message names the node (or value), the op and the shapes, and says how to fix it.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

// Every problem found, in a stable order (values, then nodes, then outputs,
// then cycles); empty when the graph is valid. Never throws for a malformed
// graph: out-of-range ids, bad enums and overflowing shapes are reported, not read.
std::vector<std::string> validation_errors(const Graph& g);

// Throws GraphError with every message of validation_errors, one per line.
void validate(const Graph& g);

}  // namespace tg
