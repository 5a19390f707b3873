#pragma once
// Closed formulas for the bytes each role needs, from a model's config alone
// (no graph is built). docs/memory.md derives them; measure_memory.cpp checks
// them against the static planner (naive mode: one buffer per value, so a
// role's bytes are the plain sum of its values) and the dynamic allocator.
#include <array>
#include <cstdint>
#include <string>

#include "graph/models.h"

namespace tg::memory {

// The roles tg-memory reports, in report order. workspace = every other value
// that owns storage: forward temporaries that backward does not read, the
// backward's temporaries, the prediction and the loss.
enum class MemRole : int { parameters, gradients, momentum, activations, workspace, inputs };
constexpr int kNumMemRoles = 6;
const char* mem_role_name(MemRole r);
using RoleBytes = std::array<int64_t, kNumMemRoles>;

struct Predicted {
  RoleBytes bytes{};
  int64_t total() const;
  int64_t at(MemRole r) const { return bytes[static_cast<size_t>(r)]; }
};

// training = false: the inference graph (forward only, no loss): no gradients,
// momentum or saved activations; everything but parameters and inputs is workspace.
Predicted predict_mlp(const MlpConfig& c, bool training, bool momentum);
Predicted predict_transformer(const TransformerConfig& c, bool training, bool momentum);
// The same training step under AdamW (graph/optimizers.h): the optimizer-state role holds
// exp_avg and exp_avg_sq for every trained parameter element (those with a gradient: not batch
// norm's running statistics) and a step count [1] for each of the param_tensors trained
// parameters, in place of momentum's one velocity per element.
Predicted with_adamw_state(Predicted p, int64_t param_tensors);

// The convolutional models (cnn_formulas.cpp).
Predicted predict_resnet(const ResNetConfig& c, bool training, bool momentum);
Predicted predict_vgg(const VggConfig& c, bool training, bool momentum);
Predicted predict_resnet_imagenet(const ImageNetResNetConfig& c, bool training, bool momentum);

// GPT-2 (gpt2_formula.cpp): f32 values, the i64 ids and labels at 8 bytes an element.
Predicted predict_gpt2(const Gpt2Config& c, bool training, bool momentum);

}  // namespace tg::memory
