#pragma once
// Whole-graph checks: everything a Graph built in code or loaded from a file
// must satisfy before an executor, the planner or a tool touches it. Each
// message names the node (or value), the op and the shapes, and says how to fix it.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

// The most bytes one value may hold: 256 GiB, more than any one GPU (an H200 has
// 141 GB) or host this runs on. A file that declares a [2^40] tensor is a typo or
// hostile; validation refuses it, so no executor or interpreter tries to allocate it.
constexpr int64_t kMaxValueBytes = int64_t{1} << 38;

// Every problem found, in a stable order (values, then nodes, then outputs,
// then cycles); empty when the graph is valid. Never throws for a malformed
// graph: out-of-range ids, bad enums and overflowing shapes are reported, not read.
std::vector<std::string> validation_errors(const Graph& g);

// Throws GraphError with every message of validation_errors, one per line.
void validate(const Graph& g);

}  // namespace tg
