// Dynamic loss scaling (graph/loss_scale.h) on the CPU backend, both executors: what the
// training graph records per precision, static == dynamic bitwise in fp16 (with and without
// the optimizer pass), a step that overflows f16 skipped (parameters and velocities
// unchanged, the scale backed off, the skip counted), the same two under AdamW (its moments
// and step counts unchanged by a skipped step), and the scale growing after
// growth_interval clean steps.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/loss_scale.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "tests/common/models.h"
#include "tests/static/loss_scale_util.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

using testing::bitwise_diff;
using testing::count_op;

ModelFn small_mlp() { return testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6)); }


}  // namespace

TEST_CASE("loss scaling: on for fp16 only unless forced, with its ops in the training graph") {
  auto scaled = [](Precision p, std::optional<bool> enabled) {
    CompileOptions co;
    co.precision = p;
    co.train.loss_scale.enabled = enabled;
    const CompiledPlan plan = compile(small_mlp(), co);
    const Graph& g = *plan.graph;
    CHECK(validation_errors(g).empty());
    const int updates = count_op(g, OpKind::update_scale);
    CHECK(updates <= 1);
    if (updates == 1) {
      // One unscale and one check per parameter; every update takes the flag.
      const int params = static_cast<int>(parameter_ids(g).size());
      CHECK(count_op(g, OpKind::unscale) == params);
      CHECK(count_op(g, OpKind::found_inf) == params);
      for (const Node& n : g.nodes)
        if (n.op == OpKind::sgd_momentum) CHECK(op_update_guarded(n.op, static_cast<int>(n.inputs.size())));
    }
    return updates == 1;
  };
  CHECK(scaled(Precision::fp16, std::nullopt));
  CHECK_FALSE(scaled(Precision::bf16, std::nullopt));
  CHECK_FALSE(scaled(Precision::fp32, std::nullopt));
  CHECK_FALSE(scaled(Precision::fp16, false));
  CHECK(scaled(Precision::bf16, true));
  CHECK(scaled(Precision::fp32, true));
  CHECK(loss_scale_enabled({}, Precision::fp16));
  CHECK_FALSE(loss_scale_enabled({}, Precision::tf32));
}

TEST_CASE("loss scaling: static == dynamic bitwise in fp16, unfused and with the optimizer pass") {
  LossScaleOptions ls;
  // A scale small enough that no gradient of this model overflows f16 even after it grows
  // twice within the run (at 65536 the first steps may be skipped, as with GradScaler).
  ls.init_scale = 256.0f;
  ls.growth_interval = 3;
  for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
    CAPTURE(passes.str());
    testing::BothExecutors run(cpu, small_mlp(), Precision::fp16, ls, false, passes);
    if (!passes.empty()) {
      // The multi update takes the flag once, last.
      CHECK(count_op(*run.plan.graph, OpKind::sgd_momentum) == 0);
      for (const Node& n : run.plan.graph->nodes)
        if (n.op == OpKind::sgd_momentum_multi) CHECK(op_update_guarded(n.op, static_cast<int>(n.inputs.size())));
    }
    for (uint64_t i = 0; i < 7; ++i) {
      CAPTURE(i);
      run.step(testing::feeds_of(run.plan, 90 + i * 17));
    }
    run.check_same();
    CHECK(run.status_static().skipped_steps == 0);
    CHECK(run.status_static().scale == 256.0f * 4.0f);  // grown after steps 3 and 6
    CHECK(run.status_static().growth_tracker == 1);
  }
  // The transformer block and the cross-entropy MLP, through the shared check.
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(testing::transformer_config(2, 8, 16, 2)),
                                   "transformer fp16", false, 0, Precision::fp16);
}

TEST_CASE("loss scaling: a step whose gradients overflow f16 is skipped, in both executors") {
  LossScaleOptions ls;
  ls.init_scale = std::ldexp(1.0f, 40);  // any gradient of the f16 backward times 2^40 is past 65504
  testing::BothExecutors run(cpu, small_mlp(), Precision::fp16, ls);
  const Feeds f = testing::feeds_of(run.plan, 5);
  // First use creates the parameters: the state before any update, from the static plan.
  std::map<std::string, std::vector<float>> before;
  for (int id : run.plan.graph->values_with_role(Role::parameter))
    before[run.plan.graph->values[static_cast<size_t>(id)].name] = run.plan.read(id);
  const float first_loss = run.step(f);
  CHECK(std::isfinite(first_loss));  // the loss read back is the unscaled one: only the gradients overflow
  CHECK(first_loss < 1e6f);
  for (const auto& [name, values] : before) {
    INFO("parameter ", name);
    CHECK(bitwise_diff(run.plan.read(name), values) == "");
  }
  for (int id : run.plan.graph->values_with_role(Role::optimizer_state)) {
    const std::string& name = run.plan.graph->values[static_cast<size_t>(id)].name;
    if (name == kLossScalerName) continue;
    INFO("velocity ", name);
    for (float v : run.plan.read(id)) CHECK(v == 0.0f);
  }
  run.check_same();
  for (const LossScaleStatus& s : {run.status_static(), run.status_dynamic()}) {
    CHECK(s.scale == std::ldexp(1.0f, 39));
    CHECK(s.skipped_steps == 1);
    CHECK(s.growth_tracker == 0);
  }
  // The scale halves on every overflowing step until the gradients fit; then training goes on.
  int steps = 1;
  while (run.status_static().skipped_steps == steps && steps < 45) {
    run.step(f);
    ++steps;
  }
  run.check_same();
  const LossScaleStatus s = run.status_static();
  CHECK(s.skipped_steps == steps - 1);  // the last step went through
  CHECK(s.skipped_steps >= 8);          // 2^32 times these gradients is still past f16's 65504
  CHECK(s.scale == std::ldexp(1.0f, 40 - static_cast<int>(s.skipped_steps)));
  CHECK(s.growth_tracker == 1);
  bool moved = false;
  for (const auto& [name, values] : before) moved = moved || bitwise_diff(run.plan.read(name), values) != "";
  CHECK(moved);
}

TEST_CASE("loss scaling with AdamW: static == dynamic bitwise in fp16, unfused and with the optimizer pass") {
  LossScaleOptions ls;
  ls.init_scale = 256.0f;  // as above: no step of the run overflows
  ls.growth_interval = 3;
  for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
    CAPTURE(passes.str());
    testing::BothExecutors run(cpu, small_mlp(), Precision::fp16, ls, false, passes, /*adamw=*/true);
    // Every update takes the flag: each adamw, or the one adamw_multi, last.
    const Graph& g = *run.plan.graph;
    const int params = static_cast<int>(parameter_ids(g).size());
    CHECK(count_op(g, passes.empty() ? OpKind::adamw : OpKind::adamw_multi) == (passes.empty() ? params : 1));
    CHECK(count_op(g, passes.empty() ? OpKind::adamw_multi : OpKind::adamw) == 0);
    for (const Node& n : g.nodes)
      if (n.op == OpKind::adamw || n.op == OpKind::adamw_multi)
        CHECK(op_update_guarded(n.op, static_cast<int>(n.inputs.size())));
    for (uint64_t i = 0; i < 7; ++i) {
      CAPTURE(i);
      run.step(testing::feeds_of(run.plan, 90 + i * 17));
    }
    run.check_same();
    CHECK(run.status_static().skipped_steps == 0);
    CHECK(run.status_static().scale == 256.0f * 4.0f);
    for (float count : testing::adamw_step_counts(run.plan)) CHECK(count == 7.0f);
  }
  TrainOptions adamw;
  adamw.adamw = true;
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(testing::transformer_config(2, 8, 16, 2)),
                                   "transformer fp16 adamw", false, 0, Precision::fp16, adamw);
}

TEST_CASE("loss scaling with AdamW: an overflowing step moves no parameter, moment or step count") {
  LossScaleOptions ls;
  ls.init_scale = 256.0f;
  for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
    CAPTURE(passes.str());
    testing::BothExecutors run(cpu, small_mlp(), Precision::fp16, ls, false, passes, /*adamw=*/true);
    run.step(testing::feeds_of(run.plan, 3));  // a clean step: the moments are nonzero from here
    REQUIRE(run.status_static().skipped_steps == 0);
    const std::map<std::string, std::vector<float>> before = testing::trained_state(run.plan);
    run.check_skipped_step(4);
    CHECK(run.status_static().scale == 128.0f);
    const std::vector<float> counts = testing::adamw_step_counts(run.plan);
    CHECK(counts.size() == parameter_ids(*run.plan.graph).size());
    for (float count : counts) CHECK(count == 1.0f);
    // The next clean step is the second the optimizer counts, and moves the parameters again.
    run.step(testing::feeds_of(run.plan, 5));
    CHECK(run.status_static().skipped_steps == 1);
    for (float count : testing::adamw_step_counts(run.plan)) CHECK(count == 2.0f);
    bool moved = false;
    for (const auto& [name, values] : before) moved = moved || bitwise_diff(run.plan.read(name), values) != "";
    CHECK(moved);
    run.check_same();
  }
}

TEST_CASE("loss scaling: every graph pass on an fp16 loss-scaled step tracks the unfused one") {
  for (const ModelFn& model : {small_mlp(), testing::transformer_model(testing::transformer_config(2, 8, 16, 2))}) {
    std::vector<float> losses[2];
    LossScaleStatus status[2];
    const PassSet sets[2] = {PassSet::none(), PassSet::all()};
    for (int k = 0; k < 2; ++k) {
      CompileOptions co;
      co.precision = Precision::fp16;
      co.passes = sets[k];
      co.train.loss_scale.init_scale = 256.0f;
      co.train.loss_scale.growth_interval = 4;
      CompiledPlan plan = compile(model, co);
      for (uint64_t i = 0; i < 6; ++i) losses[k].push_back(plan.step(testing::feeds_of(plan, 700 + i)));
      status[k] = loss_scale_status(plan.read(kLossScalerName));
    }
    // The same steps skipped (none) and grown; a fused chain rounds once where the unfused
    // ops round after each, f16's half ulp.
    CHECK(status[1].skipped_steps == status[0].skipped_steps);
    CHECK(status[1].scale == status[0].scale);
    CHECK(status[0].scale == 512.0f);
    for (size_t i = 0; i < losses[0].size(); ++i) {
      CAPTURE(i);
      CHECK(std::fabs(losses[1][i] - losses[0][i]) <= 0.01f * std::fabs(losses[0][i]) + 1e-3f);
    }
  }
}

TEST_CASE("loss scaling: the scale doubles after growth_interval clean steps, and is forced on in fp32") {
  LossScaleOptions ls;
  ls.enabled = true;
  ls.init_scale = 8.0f;
  ls.growth_interval = 2;
  testing::BothExecutors run(cpu, small_mlp(), Precision::fp32, ls);
  const float want[] = {8.0f, 16.0f, 16.0f, 32.0f, 32.0f};  // after steps 1..5
  const int64_t tracker[] = {1, 0, 1, 0, 1};
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    run.step(testing::feeds_of(run.plan, 300 + static_cast<uint64_t>(i)));
    CHECK(run.status_static().scale == want[i]);
    CHECK(run.status_dynamic().scale == want[i]);
    CHECK(run.status_static().growth_tracker == tracker[i]);
  }
  CHECK(run.status_static().skipped_steps == 0);
  run.check_same();
}

}  // namespace tg
