#pragma once
// tg-graph run's files, safetensors of f32 tensors named as the graph names its values:
// --weights gives the parameters their values, --inputs the inputs theirs (integer ids and
// labels as f32 numbers), and --outputs receives the graph's outputs, so that a model can
// be run on the user's own data and its results compared with their framework's.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg::graph_tool {

struct RunFiles {
  std::string weights, inputs, outputs;  // empty: not given
};

// Gives g's parameters the tensors of `path` (attach_weights: every parameter, every shape,
// nothing left over, or GraphError naming what does not fit).
void apply_weights(Graph& g, const std::string& path);

// Sets the value of each input of g to the tensor of its name in `path`. GraphError, naming the
// input, when one has no tensor there or a shape differs. Returns the names of the file's
// tensors that name no input (a reference output kept beside the input, say): left unread.
std::vector<std::string> apply_inputs(const Graph& g, std::vector<std::vector<float>>& values,
                                      const std::string& path);

// The graph's outputs, each under its value's name, as safetensors bytes.
std::string outputs_safetensors(const Graph& g, const std::vector<std::vector<float>>& values);

}  // namespace tg::graph_tool
