#pragma once
// The data a graph fixes itself: a fill's value, a parameter's or optimizer state's
// initializer. Where an op reads such data with a domain (cross_entropy's labels must
// be class indices, padded_mse_loss's count a whole number in [1, n]), validation
// checks it, so a graph file cannot pass `tg-graph check` and then fail when it runs.
// Data fed at run time (inputs) is the kernels' to check: they throw InputError
// (graph/errors.h), which the executors rethrow naming the node.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

// Appends one message per node whose labels or count the graph fixes to values
// outside the op's domain. Needs a structurally valid graph (ids and shapes in range,
// no cycle): validation_errors calls it when it found nothing else.
void fixed_data_errors(const Graph& g, std::vector<std::string>& errs);

}  // namespace tg
