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
// with the same loss-scaling options; every loss compared bit for bit as it goes.
struct BothExecutors {
  BothExecutors(const std::function<std::shared_ptr<Backend>()>& make_backend, const ModelFn& model, Precision p,
                const LossScaleOptions& ls, bool use_cuda_graph = false, PassSet passes = PassSet::none())
      : be_static(make_backend()), be_dynamic(make_backend()) {
    CompileOptions co;
    co.backend = be_static;
    co.use_cuda_graph = use_cuda_graph;
    co.precision = p;
    co.passes = passes;
    co.train.loss_scale = ls;
    plan = compile(model, co);
    DynamicOptions d;
    d.precision = p;
    d.loss_scale = ls;
    dyn = std::make_unique<DynamicTrainer>(model, *be_dynamic, "caching", d);
  }
  // The loss (the unscaled one: what step() reads back).
  float step(const Feeds& f) {
    const float ls = plan.step(f);
    const float ld = dyn->step(f);
    CHECK(bitwise_diff({ls}, {ld}) == "");
    return ls;
  }
  // Every parameter and every state (velocities, the scaler) equal in both executors.
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

  std::shared_ptr<Backend> be_static, be_dynamic;
  CompiledPlan plan;
  std::unique_ptr<DynamicTrainer> dyn;
};

Feeds feeds_of(const CompiledPlan& plan, uint64_t seed) {
  return testing::random_feeds(testing::input_shapes_of(*plan.graph), seed);
}

}  // namespace tg::testing
