#pragma once
// What static graphs pay for shapes that change between iterations. Four
// strategies, driven one iteration at a time by ShapeStrategyRunner::step:
//
//  recapture  compile (record, autodiff, plan, capture, instantiate) again whenever
//             the shape differs from the previous iteration's;
//  cache      one compiled plan per shape, least recently used evicted beyond
//             `cache_capacity` plans or `cache_bytes` of device memory;
//  bucket     pad the variable extent up to the next bucket and mask the padding,
//             one plan per bucket (see below for what "exact" means here);
//  update     compile the new shape's schedule and capture it, then
//             cudaGraphExecUpdate the existing instance (cheap when only kernel
//             parameters changed), re-instantiating when the topology changed.
//             On the CPU there is no instance: it behaves as recapture.
//
// Every plan binds the same ParameterStore, so training continues across shapes
// exactly as it does in the dynamic executor.
//
// Bucket padding: the variable extent is one axis of the inputs, the same for every
// input that varies, and each input is padded at the end of that axis.
//
// With an mse loss the axis must be the leading one of every input (a batch), so that
// the padding is the tail of every tensor in row-major order. The mse_loss of the
// model is recorded as padded_mse_loss(pred, target, count) with one extra [1] input
// "__count", the number of real elements of pred: the loss and its gradient see only
// those, and padded rows get exactly zero gradient (so does everything backpropagated
// from them). The result is bit for bit the unpadded run's: padded_mse_loss groups its
// sum by element position only (so the real elements sum as they would alone), the
// rows of every row-wise op are independent, and the sums over the padded axis (weight
// and bias gradients) only gain exact zeros at their end. What the bits also need, and
// is measured rather than guaranteed, is that the BLAS computes one output element the
// same way for both row counts (tests/static checks it for the CPU's OpenBLAS and for
// cuBLAS on the shapes tested; docs/shapes.md).
//
// With cross_entropy (a language model, padded along its sequence axis), the labels
// input is padded with the loss's ignore_index, so padded positions count neither in
// the loss nor in its mean, and get zero gradient. Fused attention over the padded axis
// must keep real queries off the padded keys: with key lengths (graph/attention.h: the
// feed gives each sequence's real length, which padding does not change) or causal.
// Models that reduce or normalize over the padded axis (softmax over padded keys, a
// mean over the batch, batch norm with the batch's statistics: in training) or record a
// different graph per extent are rejected for bucketing. prediction() crops only a prediction that keeps the padded axis apart.
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "static/compiler.h"

namespace tg {

enum class ShapeStrategy : uint8_t { recapture, cache, bucket, update };
const char* shape_strategy_name(ShapeStrategy s);
bool parse_shape_strategy(const std::string& s, ShapeStrategy& out);

// The model at one value of the variable extent (a batch size, a sequence length).
using ShapedModelFn = std::function<ModelFn(int64_t extent)>;

struct ShapeStrategyOptions {
  ShapeStrategy strategy = ShapeStrategy::cache;
  CompileOptions compile;            // backend, training or inference, planner, graph on/off
  size_t cache_capacity = 16;        // cache: plans kept at most
  int64_t cache_bytes = 0;           // cache: device bytes kept at most (0: no byte limit)
  std::vector<int64_t> buckets;      // bucket: ascending extents; empty = powers of two
};

// One iteration, as the tg-shapes experiment reports it.
struct ShapeStepReport {
  int64_t extent = 0;         // the requested one
  int64_t padded_extent = 0;  // what ran (bucket), else == extent
  double iteration_ms = 0;    // wall time of step(): compile/update if any + run + sync
  double compile_ms = 0;      // part of it spent compiling (and capturing / updating)
  bool compiled = false;      // a new plan was built this iteration
  bool cache_hit = false;     // an existing plan for this shape (or bucket) was reused
  bool graph_updated = false; // update: cudaGraphExecUpdate accepted
  float loss = 0;             // training only
  double padding_waste = 0;   // fraction of the input elements that are padding
  size_t graphs_cached = 0;   // plans alive after this iteration
  int64_t cached_bytes = 0;   // their device memory (arenas + input buffers)
};

class ShapeStrategyRunner {
 public:
  ShapeStrategyRunner(ShapedModelFn model, ShapeStrategyOptions opt);
  ~ShapeStrategyRunner();

  // One iteration at `extent`, fed with data of the UNPADDED shapes (the runner
  // pads for bucket). Training: one step (returns its loss in the report);
  // inference: one forward. Synchronizes before it returns.
  ShapeStepReport step(int64_t extent, const Feeds& feeds);
  // The last iteration's prediction, at the unpadded shape.
  std::vector<float> prediction() const;
  // A parameter's (or optimizer state's) current value.
  std::vector<float> parameter(const std::string& name) const;
  // The unpadded shape of each input at `extent` (for making feeds).
  std::map<std::string, Shape> input_shapes(int64_t extent);

  size_t graphs_cached() const;
  int64_t cached_bytes() const;
  int64_t bucket_for(int64_t extent) const;  // bucket strategy; throws when none fits
  const ShapeStrategyOptions& options() const { return opt_; }
  ParameterStore& parameters() const { return *params_; }

 private:
  struct Entry {
    int64_t key;
    CompiledPlan plan;
  };
  struct Shapes {
    std::map<std::string, Shape> inputs;
    Shape prediction;
  };
  CompiledPlan build(int64_t key, bool instantiate);
  const Shapes& real_shapes(int64_t extent);
  Feeds pad_feeds(const Feeds& feeds, int64_t extent, const CompiledPlan& plan);
  void evict();

  ShapedModelFn model_;
  ShapeStrategyOptions opt_;
  int pad_axis_ = 0;                      // bucket: the axis the inputs vary along
  std::map<std::string, float> pad_fill_; // bucket: inputs padded with other than 0 (labels: ignore_index)
  std::shared_ptr<ParameterStore> params_;
  std::list<Entry> plans_;  // most recently used first
  Entry* current_ = nullptr;
  int64_t current_extent_ = -1;
  std::map<int64_t, Shapes> shapes_;
};

// Copies `src` of shape `from` into the leading corner of a zero tensor of shape
// `to` (same rank, every dim of `to` >= that of `from`).
std::vector<float> pad_to(const std::vector<float>& src, const Shape& from, const Shape& to, float fill = 0.0f);
// The inverse: the leading `to` corner of `src` of shape `from`.
std::vector<float> crop_to(const std::vector<float>& src, const Shape& from, const Shape& to);

// The masked-loss wrapper the bucket strategy compiles (exposed for tests).
ModelFn masked_model(const ModelFn& model);

}  // namespace tg
