#pragma once
// Loss scaling's tests on any backend (tests/static/loss_scale_test.cpp on the CPU,
// cuda_loss_scale_test.cpp on CUDA): one model trained by both executors side by side.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/loss_scale.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg::testing {

// One model trained `steps` steps by both executors on the same feeds, in one precision
// with the same loss-scaling options and update rule (SGD with momentum, or AdamW);
// every loss compared bit for bit as it goes.
struct BothExecutors {
  BothExecutors(const std::function<std::shared_ptr<Backend>()>& make_backend, const ModelFn& model, Precision p,
                const LossScaleOptions& ls, bool use_cuda_graph = false, PassSet passes = PassSet::none(),
                bool adamw = false)
      : be_static(make_backend()), be_dynamic(make_backend()) {
    CompileOptions co;
    co.backend = be_static;
    co.use_cuda_graph = use_cuda_graph;
    co.precision = p;
    co.passes = passes;
    co.train.loss_scale = ls;
    co.train.adamw = adamw;
    plan = compile(model, co);
    DynamicOptions d;
    d.precision = p;
    d.loss_scale = ls;
    d.adamw = adamw;
    dyn = std::make_unique<DynamicTrainer>(model, *be_dynamic, "caching", d);
    options = ls;
  }
  // The loss (the unscaled one: what step() reads back).
  float step(const Feeds& f) {
    const float ls = plan.step(f);
    const float ld = dyn->step(f);
    CHECK(bitwise_diff({ls}, {ld}) == "");
    return ls;
  }
  // Every parameter and every state (velocities or AdamW's moments and step counts, the
  // scaler) equal in both executors.
  void check_same() {
    for (const std::string& name : dyn->parameter_names()) {
      INFO("parameter ", name);
      CHECK(bitwise_diff(plan.read(name), dyn->parameter(name)) == "");
    }
    for (const std::string& name : dyn->state_names()) {
      INFO("state ", name);
      CHECK(bitwise_diff(plan.read(name), dyn->parameter(name)) == "");
    }
  }
  LossScaleStatus status_static() { return loss_scale_status(plan.read(kLossScalerName)); }
  LossScaleStatus status_dynamic() { return loss_scale_status(dyn->parameter(kLossScalerName)); }
  // One step on feeds past f16's range (overflowing_feeds_of): in both executors it moves no
  // parameter and no optimizer state, backs the scale off and counts the skip. Returns the loss.
  float check_skipped_step(uint64_t seed);

  std::shared_ptr<Backend> be_static, be_dynamic;
  CompiledPlan plan;
  std::unique_ptr<DynamicTrainer> dyn;
  LossScaleOptions options;
};

inline Feeds feeds_of(const CompiledPlan& plan, uint64_t seed) {
  return testing::random_feeds(testing::input_shapes_of(*plan.graph), seed);
}

// Feeds of 1e30 times random values: past f16's range (and, squared in the loss, past f32's),
// so that every gradient of the step holds an inf or a nan and the step is skipped.
inline Feeds overflowing_feeds_of(const CompiledPlan& plan, uint64_t seed) {
  Feeds huge = feeds_of(plan, seed);
  for (auto& [name, data] : huge)
    for (float& v : data) v *= 1e30f;
  return huge;
}

// What a skipped step must leave as it is: every parameter and optimizer state of the static
// plan but the loss scaler, by name.
inline std::map<std::string, std::vector<float>> trained_state(const CompiledPlan& plan) {
  std::map<std::string, std::vector<float>> state;
  for (Role r : {Role::parameter, Role::optimizer_state})
    for (int id : plan.graph->values_with_role(r)) {
      const std::string& name = plan.graph->values[static_cast<size_t>(id)].name;
      if (name != kLossScalerName) state[name] = plan.read(id);
    }
  return state;
}

// The step counts of AdamW's parameters ("<param>.step", graph/optimizers.h) in the static
// plan; none under SGD.
inline std::vector<float> adamw_step_counts(const CompiledPlan& plan) {
  std::vector<float> counts;
  for (int id : plan.graph->values_with_role(Role::optimizer_state)) {
    const std::string& name = plan.graph->values[static_cast<size_t>(id)].name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".step") == 0) counts.push_back(plan.read(id).at(0));
  }
  return counts;
}

inline float BothExecutors::check_skipped_step(uint64_t seed) {
  const LossScaleStatus was = status_static();
  const std::map<std::string, std::vector<float>> before = trained_state(plan);
  const float loss = step(overflowing_feeds_of(plan, seed));
  CHECK_FALSE(std::isfinite(loss));
  for (const auto& [name, values] : before) {
    INFO(name);
    CHECK(bitwise_diff(plan.read(name), values) == "");
  }
  check_same();
  for (const LossScaleStatus& s : {status_static(), status_dynamic()}) {
    CHECK(s.scale == was.scale * options.backoff_factor);
    CHECK(s.skipped_steps == was.skipped_steps + 1);
    CHECK(s.growth_tracker == 0);
  }
  return loss;
}

}  // namespace tg::testing
