#pragma once
// From a model function to the graphs the static executor compiles.
#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/data_parallel.h"
#include "graph/loss_scale.h"
#include "graph/models.h"

namespace tg {

struct TrainOptions {
  float lr = 0.01f;
  float momentum = 0.9f;
  bool use_momentum = true;  // sgd_momentum with a "<param>.velocity" state, else plain sgd
  // Dynamic loss scaling (graph/loss_scale.h). build_training_graph scales when `enabled`
  // is set and true; compile() sets it from the precision when it is unset.
  LossScaleOptions loss_scale;
  // adamw instead of SGD (use_momentum and momentum unused), with the state of
  // adamw_update (graph/optimizers.h); adam holds torch.optim.AdamW's defaults.
  bool adamw = false;
  AdamAttr adam;
  // > 0: the gradients are clipped to this global norm before the update
  // (clip_grad_norm, graph/optimizers.h); 0: not clipped.
  float clip_grad_norm = 0.0f;
  // Data parallelism (graph/data_parallel.h): the gradients all-reduced in buckets as backward
  // produces them, before loss scaling's checks, the clipping and the updates.
  DataParallelOptions data_parallel;
};

// "sgd", "momentum" or "adamw": the update rule of o (tg-train's --optimizer).
const char* optimizer_name(const TrainOptions& o);
// Sets use_momentum and adamw from such a name; false for another name.
bool parse_optimizer(const std::string& name, TrainOptions& o);

// The forward only, with the prediction marked output. Nodes and values that
// the prediction does not depend on (the loss, its target or labels) are
// pruned, so the graph is what a user would run for inference.
Graph build_inference_graph(const ModelFn& model);

// Forward (recorded with a RecordingBuilder), backward (backward() on
// tape_from_graph with the same builder: parameter gradients get
// Role::gradient, other backward values Role::temporary), the gradients clipped
// when opt.clip_grad_norm > 0 (clipped gradients get Role::gradient too), then
// one update per parameter (sgd_momentum with b.optimizer_state(param, name +
// ".velocity"), sgd, or adamw_update), named "<param>.update". With loss scaling
// (opt.loss_scale.enabled), backward differentiates loss * scale, each gradient is unscaled
// and checked before the clipping, every update (sgd, sgd_momentum or adamw) takes the
// found-inf flag, and update_scale closes the step (graph/loss_scale.h). With
// opt.data_parallel.enabled, every gradient is all-reduced first, in buckets recorded among
// the backward nodes as the gradients become final (graph/data_parallel.h).
// Forward values that a backward node reads get
// Role::activation; the loss and the prediction are marked outputs (the loss
// first). Throws GraphError when the model has no loss or a parameter does not
// influence it.
Graph build_training_graph(const ModelFn& model, const TrainOptions& opt = {});

// Value ids with Role::parameter, in id order.
std::vector<int> parameter_ids(const Graph& g);

// The parameters the optimizer trains, in params' order: every one but those an update of
// the forward pass writes itself (batch norm's running statistics, which
// batch_norm_stats_update writes). Those persist as parameters but get no gradient, no
// optimizer state and no optimizer update.
std::vector<Value> trained_parameters(const std::vector<Value>& params, const std::vector<TapeEntry>& tape);

}  // namespace tg
