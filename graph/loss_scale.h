#pragma once
// Dynamic loss scaling, as torch.amp.GradScaler does it, for fp16 training in both
// executors. f16 holds magnitudes down to 6e-8 (subnormal) and up to 65504: small
// gradients vanish before the f32 master weights see them. So the loss is multiplied by a
// scale before backward (every gradient grows with it), each parameter gradient is
// multiplied by 1 / scale (unscale) and checked for an inf or a nan (found_inf), and every
// update of the step takes the found-inf flag as its last input and writes nothing when it
// is set: a step that overflowed is skipped. update_scale then halves the scale after such
// a step, or doubles it after growth_interval clean steps in a row.
//
// The scaler is optimizer state on the device, named kLossScalerName, [3] f32: the scale,
// the growth tracker (clean steps since the scale last changed) and the skipped steps
// (held exactly up to 2^24). The flag and the scale are only read on the device, so the
// step has no host synchronization and the static executor still captures it into one CUDA
// graph. bf16 has f32's exponent range and needs none of this.
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/builder.h"
#include "graph/precision.h"

namespace tg {

struct LossScaleOptions {
  std::optional<bool> enabled;   // unset: on for fp16 only (loss_scale_enabled)
  float init_scale = 65536.0f;   // 2^16, GradScaler's
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
};

constexpr const char* kLossScalerName = "loss_scaler";

// Whether a step in precision p scales its loss: `enabled` when set, else p == fp16.
bool loss_scale_enabled(const LossScaleOptions& o, Precision p);

// The values one step's loss scaling passes between its phases.
struct LossScaling {
  Value scaler;  // [3], the state
  Value scale;   // [1], this step's scale
  Value found;   // [1], set by unscale_gradients
};

// Before backward, while the forward is still taped: the scaler (made on first use, with
// o.init_scale) and loss * scale, the value to differentiate.
Value scale_loss(Builder& b, const Value& loss, const LossScaleOptions& o, LossScaling& ls);
// After backward: each gradient unscaled, in order, and ls.found whether any holds an
// inf or a nan. Every gradient must be valid.
std::vector<Value> unscale_gradients(Builder& b, const std::vector<Value>& grads, LossScaling& ls);
// After the guarded updates: update_scale with o's factors and interval.
void update_loss_scale(Builder& b, const LossScaling& ls, const LossScaleOptions& o);

// The scaler's three numbers, from its host copy.
struct LossScaleStatus {
  float scale = 0;
  int64_t growth_tracker = 0, skipped_steps = 0;
};
LossScaleStatus loss_scale_status(const std::vector<float>& scaler);

}  // namespace tg
