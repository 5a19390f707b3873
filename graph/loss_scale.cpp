#include "graph/loss_scale.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "graph/errors.h"

namespace tg {

bool loss_scale_enabled(const LossScaleOptions& o, Precision p) { return o.enabled.value_or(p == Precision::fp16); }

Value scale_loss(Builder& b, const Value& loss, const LossScaleOptions& o, LossScaling& ls) {
  if (!(o.init_scale > 0.0f) || !std::isfinite(o.init_scale))
    graph_error("loss scaling: init_scale = {} must be finite and > 0 (65536 is usual)", o.init_scale);
  if (loss.shape != Shape{1} || loss.dtype != DType::F32)
    graph_error("loss scaling: the loss is {} {}; it must be one f32 element", dtype_name(loss.dtype), loss.shape.str());
  ParamInit init;
  init.kind = ParamInit::Kind::data;
  init.data = std::make_shared<const std::vector<float>>(std::vector<float>{o.init_scale, 0.0f, 0.0f});
  ls.scaler = b.training_state(kLossScalerName, Shape{3}, init);
  ls.scale = slice(b, ls.scaler, 0, 0, 1);
  return mul(b, loss, ls.scale);
}

std::vector<Value> unscale_gradients(Builder& b, const std::vector<Value>& grads, LossScaling& ls) {
  std::vector<Value> out;
  out.reserve(grads.size());
  ls.found = fill(b, Shape{1}, 0.0f);
  for (const Value& g : grads) {
    out.push_back(b.apply(OpKind::unscale, {g, ls.scale}));
    ls.found = b.apply(OpKind::found_inf, {out.back(), ls.found});
  }
  return out;
}

void update_loss_scale(Builder& b, const LossScaling& ls, const LossScaleOptions& o) {
  Attrs at;
  at.growth_factor = o.growth_factor;
  at.backoff_factor = o.backoff_factor;
  at.growth_interval = o.growth_interval;
  b.apply(OpKind::update_scale, {ls.scaler, ls.found}, at, "loss_scaler.update");
}

LossScaleStatus loss_scale_status(const std::vector<float>& scaler) {
  if (scaler.size() != 3)
    throw std::invalid_argument("loss_scale_status: the scaler holds " + std::to_string(scaler.size()) +
                                " numbers; it holds 3 (scale, growth tracker, skipped steps)");
  LossScaleStatus s;
  s.scale = scaler[0];
  s.growth_tracker = static_cast<int64_t>(scaler[1]);
  s.skipped_steps = static_cast<int64_t>(scaler[2]);
  return s;
}

}  // namespace tg
