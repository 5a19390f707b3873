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
// then cycles, then the data the graph fixes: graph/fixed_data.h); empty when the
// graph is valid. Names appear quoted and escaped (graph/quote.h). Never throws for a malformed
// graph: out-of-range ids, bad enums and overflowing shapes are reported, not read.
std::vector<std::string> validation_errors(const Graph& g);

// validate() lists this many errors and counts the rest: a generated file with
// 100k broken values gets a readable message, not megabytes of it.
constexpr size_t kMaxListedErrors = 20;

// Throws GraphError with the messages of validation_errors, one per line: the first
// kMaxListedErrors, then how many more were left out.
void validate(const Graph& g);

}  // namespace tg
