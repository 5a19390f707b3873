#pragma once
// tg-memory's VGG table layer by layer, as the classic VGG-16 walk-through counts memory: for
// the input and each conv, pool and Linear layer, its parameters with their gradients and
// momentum, and its feature maps: the layer's output, every buffer its forward values own
// (twograph's conv with a bias is conv2d, the bias broadcast in three steps and an add, then the
// ReLU), and of those the buffers backward reads. Predicted from the config alone and measured
// from a graph and its memory plan.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/models.h"
#include "static/planner.h"

namespace tg::memory {

struct LayerBytes {
  std::string layer;  // "input", "s0.conv0", "s0.pool", "fc0", "fc1", "head": the parameters' names
  std::string kind;   // input, conv, pool, fc
  int64_t parameters = 0, gradients = 0, momentum = 0;
  int64_t output = 0;   // the layer's output at the batch: the ReLU's, the pool's, the logits, the images
  int64_t forward = 0;  // the buffers the layer's forward values own (an in-place ReLU owns none)
  int64_t saved = 0;    // of those, the ones that hold a value backward reads (an activation)
};

// The quantities a row compares, in report order, and each one's bytes.
inline constexpr const char* kLayerQuantities[] = {"parameters", "gradients", "momentum", "output", "forward", "saved"};
int64_t layer_quantity(const LayerBytes& l, const std::string& quantity);

// Bytes at c.batch, f32. With c.in_place_relu each ReLU writes over its input (the bias add's
// output), so a conv layer's forward owns 3 feature maps instead of 4. The last pool's output
// is saved too: it owns the buffer of the flattening reshape that fc0's weight gradient reads.
// The logits are the graph's output, not an activation.
std::vector<LayerBytes> predict_vgg_layers(const VggConfig& c, bool training, bool momentum);

// The same from a vgg() graph (training, build_training_graph, or inference) and a plan of it.
// Each forward node (those before the loss) belongs to the layer of the parameter it reads
// ("<layer>.w", "<layer>.b"), or, a pool, to "s<i>.pool" after its stage's convs; a node that
// reads no parameter stays in the layer before it. A buffer is the plan's storage root, so a
// planned plan with the in-place policy `flagged` gives in-place ReLUs their input's buffer.
// Gradients: the update node's gradient operand of each parameter; momentum: "<param>.velocity".
std::vector<LayerBytes> measure_vgg_layers(const Graph& g, const MemoryPlan& p);

}  // namespace tg::memory
