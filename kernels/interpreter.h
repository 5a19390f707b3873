#pragma once
// The plain interpreter: the slowest, simplest way to run a graph. Every value
// gets its own host vector and every node runs through the CPU reference
// kernels (run_cpu) in topological order. Executors and tools compare against it.
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace tg {

// One host vector per value id, sized by the value's shape:
//  - parameters and optimizer state: initial_values(v, seed) (graph/init.h), so
//    they start with the same bits as in either executor;
//  - inputs: random_fill uniform in [-1, 1), seeded by `seed` mixed with the
//    value id; an input that a cross_entropy / cross_entropy_grad node reads as
//    its labels (input 1) gets random_labels in [0, classes) instead, and one that a
//    padded_mse_loss / padded_mse_loss_grad node reads as its count (input 2) whole
//    numbers in [1, numel of pred];
//  - every other value: NaN (poison), so a value that is read before it is
//    written shows up in the results instead of passing as zeros.
// Throws GraphError when a value's shape is invalid (dim < 1 or too large).
std::vector<std::vector<float>> make_values(const Graph& g, uint64_t seed);

// Runs every node of g.topo_order() through run_cpu. `values` is indexed by
// value id (as make_values returns it). Reshape copies into its own vector, an
// in-place relu writes its output vector, update ops (sgd, sgd_momentum) mutate
// the parameter and velocity vectors. Throws GraphError when `values` does not
// match the graph (count or sizes) or a node is malformed, and InputError naming
// the node when an op cannot use the data it reads (labels that are not class
// indices, a count outside [1, n]: graph/errors.h).
void interpret(const Graph& g, std::vector<std::vector<float>>& values);

// FNV-1a over the bit patterns: equal checksums mean bitwise equal vectors.
uint64_t checksum(const std::vector<float>& v);
// Sum in double, for a quick human-readable fingerprint.
double sum(const std::vector<float>& v);

}  // namespace tg
