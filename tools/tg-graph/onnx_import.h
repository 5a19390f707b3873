#pragma once
// ONNX -> twograph IR. The ops the IR has map one to one or through a few IR ops
// (docs/bring-your-own-model.md lists each): MatMul (4-D attention products
// through reshapes to rank 3), Gemm, Add/Sub/Mul (broadcasting through reshape +
// broadcast, bias adds as bias_add), Div by a constant, Relu, Gelu (tanh, and the
// tanh formula the TorchScript exporter writes), Softmax (last axis),
// LayerNormalization (and the ReduceMean/Sub/Pow/Sqrt/Div formula of older
// opsets), Transpose, Reshape/Flatten/Squeeze/Unsqueeze, ReduceSum/ReduceMean,
// Conv/MaxPool/AveragePool/GlobalAveragePool/BatchNormalization (inference)/Concat/Sum
// over NCHW tensors.
// Constant subgraphs (Constant, Shape, Gather, Concat, Cast, Sqrt, ... of
// constants) are folded. Float initializers that feed compute become parameters
// holding their values (ParamInit::Kind::data). Anything else is refused with a
// GraphError naming the node, its op and why.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tools/tg-graph/onnx_model.h"

namespace tg::onnx {

// The newest opset of the default domain that ONNX defines (onnx 1.23:
// onnx.defs.onnx_opset_version()); a later one cannot be told from a corrupt file,
// and its ops may mean something else.
constexpr int64_t kLatestOpset = 28;

struct ImportOptions {
  std::map<std::string, int64_t> dims;  // values for symbolic input dims ("batch" -> 32)
  // A loss appended to the (single) output, for a graph that trains: mse against
  // a new input "target" of the output's shape, or cross_entropy of [n, classes]
  // logits against a new input "labels" [n] (class indices stored as f32).
  enum class Loss { none, mse, cross_entropy } loss = Loss::none;
  // The most bytes the constants the import computes may hold together: a weight
  // transposed, scaled or joined at import is a constant of a weight's size (VGG-16's
  // first classifier weight is 102.8M elements), while the model's initializers are read
  // as they are and count against nothing. A model over the limit is refused, naming the
  // node that would cross it.
  int64_t max_fold_bytes = int64_t{4} << 30;
};

struct Imported {
  Graph graph;                     // parameters hold the initializers' values
  std::vector<std::string> notes;  // what the mapping changed that a reader should know
};

// `source` prefixes every message (the .onnx path). GraphError for a model that is
// invalid or that the IR cannot express; std::logic_error for a graph the import
// built wrong (a bug: the graph file would not load back).
Imported import_model(const Model& m, const ImportOptions& opt, const std::string& source);

// What every pass may assume of the model: opsets that exist (one per domain);
// graph inputs, initializers and node outputs with non-empty UTF-8 names, each
// defined once; each supported op's node with the input and output counts and the
// attribute types ONNX defines for it; tensor data that matches its dims.
// GraphError naming the node or value otherwise. import_model runs it first.
void check_model(const Model& m, const std::string& source);

// The rewrites that run before the op-by-op mapping: the tanh formula of GELU
// becomes one Gelu(approximate=tanh) node, the ReduceMean/Sub/Pow/ReduceMean/
// Add/Sqrt/Div(/Mul/Add) formula one LayerNormalization node. Only where every
// intermediate value is used inside the formula alone. Appends a note per rewrite.
// Each rewrite is the first match in node order of the model as the rewrites before it
// left it: what calling fuse_first_pattern until it returns false gives, in one pass.
void fuse_patterns(Model& m, std::vector<std::string>& notes);
// One rewrite, the first match in node order, with its note; false when none matches.
bool fuse_first_pattern(Model& m, std::vector<std::string>& notes);
// Before the rewrites: a mask's -inf fill into a softmax as the lowest finite number, its
// NaN guard as a choice on the row's count of kept entries (onnx_infinite_fill.cpp).
// Appends a note per fill.
void lower_infinite_fills(Model& m, std::vector<std::string>& notes);

}  // namespace tg::onnx
