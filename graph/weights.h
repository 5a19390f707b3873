#pragma once
// Weights beside a graph file: named f32 tensors in the safetensors layout (an
// 8-byte little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the raw little-endian data), which numpy, PyTorch
// and the `safetensors` package read and write. A graph file says how each
// parameter starts (uniform, constant); weights say what it holds: attaching
// them sets the parameters' init to ParamInit::Kind::data, which every executor
// and the interpreter materialize through initial_values (graph/init.h).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

struct WeightTensor {
  Shape shape;
  std::vector<float> data;  // row-major, shape.numel() floats
};
using Weights = std::map<std::string, WeightTensor>;

// The file's bytes. Throws GraphError for a tensor whose data does not match its shape.
std::string weights_to_safetensors(const Weights& w);
// Parses what weights_to_safetensors writes (and any safetensors file of F32
// tensors of rank 0 to 4; rank 0 reads as [1]). Throws GraphError naming
// `source`, the tensor and the problem: a bad header, another dtype, byte ranges
// that overlap, leave gaps or run past the end.
Weights weights_from_safetensors(const std::string& bytes, const std::string& source);
// Reads a regular file and parses it.
Weights load_weights_file(const std::string& path);

// Every parameter and optimizer-state value of g that holds given values.
Weights weights_of(const Graph& g);
// Gives each parameter of g its tensor. Throws GraphError (naming `source`) when
// a parameter has no tensor, a shape differs, or a tensor names no parameter:
// weights that do not fit are never half applied.
void attach_weights(Graph& g, const Weights& w, const std::string& source);
// Replaces given values by the default init (uniform, 1/sqrt(fan_in)): what a
// graph file can say. save_graph_json refuses given values, so the importer
// writes the weights with weights_to_safetensors and the graph after this.
void strip_weights(Graph& g);

}  // namespace tg
