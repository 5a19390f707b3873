#pragma once
// A forward graph (a graph file, an imported ONNX model) as a model function
// (graph/models.h): each call replays the graph's inputs, parameters and nodes
// onto the Builder it is given, so the static executor records, differentiates
// and plans it, and the dynamic executor runs it eagerly, exactly as they do the
// built-in models. Parameters keep their names and their init (given weights
// included), so both executors start from the same bits.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/models.h"

namespace tg {

struct GraphModel {
  std::shared_ptr<const Graph> graph;
  ModelFn fn;        // everything the outputs need; the loss (when there is one) as ModelOutputs::loss
  ModelFn infer_fn;  // the prediction and what it depends on: what inference runs in either executor
  std::string prediction;  // value name
  std::string loss;        // value name; empty when the graph has no loss output
  // Outputs besides the prediction and the loss: fn computes them, infer_fn does not.
  std::vector<std::string> other_outputs;
  int64_t classes = 0;     // cross_entropy's classes (the logits' last dim); 0 without cross_entropy
};

// Loss ops: an output they produce is the graph's loss.
bool op_is_loss(OpKind op);

// The prediction is the first output that is not a loss; without one, the
// loss's first input. Throws GraphError for what is not a forward graph: no
// outputs, more than one loss output, update nodes or optimizer state (a
// training step written out by hand: give the forward graph and its loss, the
// compiler and the dynamic executor differentiate it themselves). A batch norm's
// running-statistics update (batch_norm_stats_update) belongs to the forward: it
// runs with the batch it reads, and in eval mode that batch norm normalizes with
// the statistics instead (batch_norm_inference) and nothing is updated.
GraphModel graph_model(Graph g);

// The graph at another batch: dim 0 of every input whose dim 0 is the graph's
// batch (the first input's dim 0) becomes `batch`, every reshape infers its dim 0
// (-1; the same shape at the original batch), and shapes are inferred again.
// Throws GraphError when the shapes do not follow (a dim that is not the batch
// but equals it, a fill or a reshape whose batch is not its leading dim).
Graph rebatch(const Graph& g, int64_t batch);
// What the outputs need and nothing else (dead nodes, unused inputs and
// parameters dropped), recorded again: ids renumbered, names, inits and shapes kept.
Graph prune_to_outputs(const Graph& g);
// The graph's batch: dim 0 of its first input (0 when it has none).
int64_t graph_batch(const Graph& g);

}  // namespace tg
