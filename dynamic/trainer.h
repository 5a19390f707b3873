#pragma once
// The training loop of the dynamic executor, as the experiments use it: every
// step runs the model function on the eager builder (forward, taped), applies
// the shared gradient rules to the tape (tg::backward, eagerly), then the
// gradients clipped (when asked) and one sgd_momentum (sgd, adamw) per parameter,
// as graph/training.cpp records them, and reads the loss back.
#include <memory>
#include <string>
#include <vector>

#include "dynamic/allocator.h"
#include "dynamic/eager_builder.h"
#include "graph/data_parallel.h"
#include "graph/loss_scale.h"
#include "graph/models.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "kernels/backend.h"

namespace tg {

struct DynamicOptions {
  float lr = 0.01f;
  float momentum = 0.9f;
  bool use_momentum = true;    // as TrainOptions::use_momentum (graph/training.h)
  bool adamw = false;          // as TrainOptions::adamw, adam and clip_grad_norm
  AdamAttr adam;
  float clip_grad_norm = 0.0f;
  bool in_place_relu = false;  // every relu writes into its input
  bool inference = false;      // no tape: step() is refused, run_inference() frees at once
  bool free_early = true;      // free tensors after their last use (dynamic/README.md)
  Timing timing = Timing::off; // per-op host time breakdown (sampled is cheap enough to leave on)
  int sample_period = 16;
  uint64_t seed = 0;           // initial_values seed: use the interpreter's to start bit-identical
  Precision precision = Precision::fp32;  // as CompileOptions::precision (graph/precision.h)
  LossScaleOptions loss_scale;            // as TrainOptions::loss_scale; unset: on for fp16 only
  DataParallelOptions data_parallel;      // as TrainOptions::data_parallel: buckets reduced as backward makes them
};

// The options that train as `t` does in the static compiler: its update rule, clipping, loss
// scaling and data parallelism, the rest left at their defaults.
DynamicOptions dynamic_options_like(const TrainOptions& t);

// Host time of the last iteration. build + alloc + launch are apply()'s phases
// (scaled up from the sampled ops); other is the rest of the iteration: inputs'
// upload, parameter lookup, backward's bookkeeping, the loss read-back and sync.
struct IterationBreakdown {
  double total_s = 0, build_s = 0, alloc_s = 0, launch_s = 0, other_s = 0;
  int64_t ops = 0, timed_ops = 0;
};

class DynamicTrainer {
 public:
  DynamicTrainer(ModelFn model, Backend& backend, const std::string& allocator, DynamicOptions opt = {});
  ~DynamicTrainer();
  DynamicTrainer(const DynamicTrainer&) = delete;
  DynamicTrainer& operator=(const DynamicTrainer&) = delete;

  // One iteration: forward, backward, update. Returns the loss (synchronizes).
  float step(const Feeds& feeds);
  // The forward only, untaped; returns the prediction. Parameters are created
  // on first use exactly as in step(), so either may come first.
  std::vector<float> run_inference(const Feeds& feeds);
  // The same, the prediction read into `out`, which the caller keeps from call to call.
  void run_inference(const Feeds& feeds, std::vector<float>& out);

  // Host copies of the parameters (and optimizer state), in first-use order.
  std::vector<std::string> parameter_names() const;
  std::vector<float> parameter(const std::string& name);
  std::vector<std::string> state_names() const;  // "<param>.velocity", or adamw's (graph/optimizers.h)

  Allocator& allocator() { return *alloc_; }
  AllocatorStats allocator_stats() const { return alloc_->stats(); }
  const IterationBreakdown& last_breakdown() const { return last_; }
  EagerBuilder& builder() { return *builder_; }
  Backend& backend() { return backend_; }

 private:
  void finish(double total_s);

  ModelFn model_;
  Backend& backend_;
  DynamicOptions opt_;
  std::unique_ptr<Allocator> alloc_;      // declared before the builder: outlives it
  std::unique_ptr<EagerBuilder> builder_;
  std::vector<std::string> param_names_, velocity_names_;
  std::vector<Value> wrt_;
  bool loss_scaled_ = false;  // loss_scale_enabled(opt.loss_scale, opt.precision)
  IterationBreakdown last_;
};

}  // namespace tg
