#pragma once
// The optimizer steps that end a training step, written against Builder so that the static
// compiler records them (graph/training.cpp) and the dynamic trainer runs them
// (dynamic/trainer.cpp) as the same ops in the same order: the two executors' parameters
// then keep the same bits on the CPU.
#include <string>
#include <vector>

#include "graph/builder.h"

namespace tg {

// torch.nn.utils.clip_grad_norm_: every gradient times min(1, max_norm / (norm + 1e-6)),
// where norm is the L2 norm of all of them together. The norm is global_norm's over groups
// of at most five gradients in order, then over those norms, until one is left: a
// fixed tree (torch takes the norm of the per-tensor norms), of ops the dynamic executor
// can apply one by one. Returns the clipped gradients, in order; the nodes are named
// "grad_norm" and "<name>.clip" for names[i].
std::vector<Value> clip_grad_norm(Builder& b, const std::vector<Value>& grads, const std::vector<std::string>& names,
                                  float max_norm);

// One adamw of `param` (torch.optim.AdamW's step) with its state "<name>.exp_avg" and
// "<name>.exp_avg_sq" (param's shape) and "<name>.step" ([1]: the updates made so far),
// zeros at the start; the node is named node_name. A valid `found` (loss scaling's found-inf
// flag, graph/loss_scale.h) guards the update: a step that sets it changes none of these.
void adamw_update(Builder& b, const Value& param, const Value& grad, const std::string& name, float lr,
                  const AdamAttr& adam, const std::string& node_name = "", const Value& found = {});

}  // namespace tg
