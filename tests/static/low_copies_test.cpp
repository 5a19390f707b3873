// The low_copies pass (static/passes/low_copies.cpp) on the CPU backend: the per-step casts
// of the weights become persistent copies written by the updates, and the static plan
// stays bitwise equal to the dynamic executor (which casts every step) in bf16 and fp16,
// under SGD with momentum and AdamW, over several steps; the copies are right before the
// first step and after every write to the parameters from outside a step.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/float_formats.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "kernels/dtype_copy.h"
#include "kernels/interpreter.h"
#include "tests/common/models.h"
#include "tests/static/loss_scale_util.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }
using testing::count_op;

ModelFn small_mlp() { return testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6)); }
ModelFn small_transformer() { return testing::transformer_model(testing::transformer_config(2, 8, 16, 2)); }

const PassSet kMultiCopies = PassSet::only(PassId::optimizer).with(PassId::low_copies);

// Every copy the plan's updates write equals its parameter rounded to the copy's dtype.
void check_copies_match(const CompiledPlan& plan) {
  const Graph& g = *plan.graph;
  int copies = 0;
  for (const Node& n : g.nodes)
    for (const auto& [param, copy] : weight_copies_of(n)) {
      const ValueInfo& c = g.values[static_cast<size_t>(copy)];
      INFO("copy ", c.name);
      std::vector<float> want = plan.read(param);
      for (float& x : want) x = round_to_dtype(x, c.dtype);
      CHECK(testing::bitwise_diff(plan.read(copy), want) == "");
      ++copies;
    }
  CHECK(copies > 0);
}

}  // namespace

TEST_CASE("low_copies: every cast weight becomes a copy its update writes, nothing else changes") {
  testing::for_each_low_precision_rule([](Precision p, TrainOptions t) {
    t.loss_scale.enabled = false;
    const Graph g = run_passes(build_training_graph(with_precision(small_transformer(), p), t),
                               PassSet::only(PassId::optimizer));
    const Graph c = pass_low_copies(g);
    CHECK(validation_errors(c).empty());
    // No cast reads a parameter any more; each copy is optimizer state in the GEMM dtype.
    for (const Node& n : c.nodes)
      if (n.op == OpKind::cast) CHECK(c.values[static_cast<size_t>(n.inputs[0])].role != Role::parameter);
    REQUIRE(count_op(c, t.adamw ? OpKind::adamw_multi_cast : OpKind::sgd_momentum_multi_cast) == 1);
    int copies = 0;
    for (const Node& n : c.nodes)
      for (const auto& [param, copy] : weight_copies_of(n)) {
        CHECK(c.values[static_cast<size_t>(param)].role == Role::parameter);
        CHECK(c.values[static_cast<size_t>(copy)].role == Role::optimizer_state);
        CHECK(c.values[static_cast<size_t>(copy)].dtype == precision_dtype(p));
        CHECK(is_weight_copy(c, copy));
        ++copies;
      }
    CHECK(copies == count_op(g, OpKind::cast) - count_op(c, OpKind::cast));
    // The layernorm parameters are never cast: their updates stay in the plain multi node.
    CHECK(count_op(c, t.adamw ? OpKind::adamw_multi : OpKind::sgd_momentum_multi) == 1);
    // fp32 has no casts: the pass gives the graph back.
    const Graph f32 = run_passes(build_training_graph(small_transformer(), t), PassSet::only(PassId::optimizer));
    CHECK(pass_low_copies(f32).nodes.size() == f32.nodes.size());
  });
}

TEST_CASE("low_copies: static == dynamic bitwise in bf16 and fp16, SGD with momentum and AdamW") {
  testing::for_each_low_precision_rule([](Precision p, const TrainOptions& t) {
    // The single updates turned into one-group *_multi_cast nodes, and the multi updates split.
    for (PassSet passes : {PassSet::only(PassId::low_copies), kMultiCopies}) {
      const std::string set = passes.str();
      CAPTURE(set);
      testing::check_static_vs_dynamic(cpu, small_mlp(), "mlp", false, 0, p, t, passes);
      testing::check_static_vs_dynamic(cpu, small_transformer(), "transformer", false, 0, p, t, passes);
    }
  });
}

TEST_CASE("low_copies: the copies equal their rounded parameters before the first step and after each") {
  CompileOptions co;
  co.precision = Precision::bf16;
  co.passes = kMultiCopies;
  CompiledPlan plan = compile(small_mlp(), co);
  REQUIRE(count_op(*plan.graph, OpKind::sgd_momentum_multi_cast) == 1);
  check_copies_match(plan);  // filled from the initial parameters when the plan was built
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*plan.graph), 3);
  for (int i = 0; i < 3; ++i) {
    plan.step(f);
    check_copies_match(plan);
  }
}

TEST_CASE("low_copies: the reference interpreter runs the multi_cast updates as the static plan does") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    CompileOptions co;
    co.precision = p;
    co.passes = kMultiCopies;
    co.seed = 5;
    co.train.loss_scale.enabled = false;
    CompiledPlan plan = compile(small_mlp(), co);
    const Graph& g = *plan.graph;
    std::vector<std::vector<float>> want = make_values(g, 5);
    const Feeds feeds = testing::feeds_from(g, want);
    for (int s = 0; s < 3; ++s) {
      const float loss = plan.step(s == 0 ? feeds : Feeds{});
      interpret(g, want);
      CHECK(testing::bitwise_diff({loss}, want[static_cast<size_t>(plan.loss)]) == "");
    }
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].role == Role::parameter || g.values[v].role == Role::optimizer_state) {
        INFO("value ", g.values[v].name);
        CHECK(testing::bitwise_diff(plan.read(static_cast<int>(v)), want[v]) == "");
      }
  }
}

// Two plans side by side on the same feeds: with the pass (persistent copies) and without
// (the casts), each with its own store; after the same writes from outside a step both
// must step to the same bits.
struct WithAndWithout {
  explicit WithAndWithout(Precision p) {
    for (int i = 0; i < 2; ++i) {
      CompileOptions co;
      co.precision = p;
      co.passes = i == 0 ? kMultiCopies : PassSet::only(PassId::optimizer);
      co.train.loss_scale.enabled = false;
      plans[i] = compile(small_mlp(), co);
    }
    REQUIRE(count_op(*plans[0].graph, OpKind::sgd_momentum_multi_cast) == 1);
    REQUIRE(count_op(*plans[1].graph, OpKind::sgd_momentum_multi_cast) == 0);
    feeds = testing::random_feeds(testing::input_shapes_of(*plans[0].graph), 21);
  }
  void check_steps(int n) {
    for (int i = 0; i < n; ++i) {
      INFO("step ", i);
      CHECK(testing::bitwise_diff({plans[0].step(feeds)}, {plans[1].step(feeds)}) == "");
    }
    check_copies_match(plans[0]);
  }
  CompiledPlan plans[2];
  Feeds feeds;
};

std::vector<float> new_weights(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  random_fill(v, seed, -0.3f, 0.3f);
  return v;
}

TEST_CASE("low_copies: ParameterStore::write refreshes the copies of the parameter it writes") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    WithAndWithout run(p);
    run.check_steps(2);
    for (int id : run.plans[0].graph->values_with_role(Role::parameter)) {
      const ValueInfo& v = run.plans[0].graph->values[static_cast<size_t>(id)];
      const std::vector<float> w = new_weights(v.shape.numel(), 100 + static_cast<uint64_t>(id));
      for (CompiledPlan& plan : run.plans) plan.exec->parameters().write(v.name, w);
    }
    check_copies_match(run.plans[0]);
    run.check_steps(3);
    // A copy follows its parameter: writing one directly is refused, as is an unknown name.
    ParameterStore& store = run.plans[0].exec->parameters();
    REQUIRE(!store.copies().empty());
    const auto& [copy, master] = *store.copies().begin();
    CHECK_THROWS_AS(store.write(copy, std::vector<float>(run.plans[0].read(master).size(), 0.0f)), std::invalid_argument);
    CHECK_THROWS_AS(store.write("no such parameter", {1.0f}), std::invalid_argument);
    CHECK_THROWS_AS(store.write(master, {1.0f}), std::invalid_argument);
  }
}

TEST_CASE("low_copies: a write through find()'s pointer is seen after refresh_copies") {
  WithAndWithout run(Precision::bf16);
  run.check_steps(1);
  for (int id : run.plans[0].graph->values_with_role(Role::parameter)) {
    const ValueInfo& v = run.plans[0].graph->values[static_cast<size_t>(id)];
    const std::vector<float> w = new_weights(v.shape.numel(), 300 + static_cast<uint64_t>(id));
    for (CompiledPlan& plan : run.plans) {
      ParameterStore& store = plan.exec->parameters();
      copy_to_device_as(store.backend(), store.find(v.name), w, v.dtype);
    }
  }
  run.plans[0].exec->parameters().refresh_copies();
  run.check_steps(2);
}

TEST_CASE("low_copies: weights given to the graph (ParamInit data) start the copies too") {
  // A parameter that starts from given values (graph/weights.h's attach_weights) is rounded
  // into its copy when the store binds it, as the cast would round it at the first step.
  const ModelFn given = [](Builder& b) {
    const Value x = b.input("x", {4, 6});
    const Value y = b.input("y", {4, 5});
    std::vector<float> w(30);
    random_fill(w, 9, -0.7f, 0.7f);
    ParamInit init(ParamInit::Kind::data, 0.0f);
    init.data = std::make_shared<const std::vector<float>>(std::move(w));
    const Value wv = b.parameter("w", {6, 5}, init);
    const Value pred = matmul(b, x, wv);
    return ModelOutputs{pred, mse_loss(b, pred, y)};
  };
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    for (PassSet passes : {PassSet::only(PassId::low_copies), kMultiCopies})
      testing::check_static_vs_dynamic(cpu, given, "given weights", false, 0, p, {}, passes);
  }
}

TEST_CASE("low_copies: a plan compiled later on the same store binds the copies as they are") {
  // Shape strategies compile a plan per shape over one store: the second plan must read the
  // copies the first kept up to date, not fill them again from an older state.
  auto store_of = [](const std::shared_ptr<Backend>& be) { return std::make_shared<ParameterStore>(be, 0); };
  const std::shared_ptr<Backend> be = cpu();
  std::shared_ptr<ParameterStore> stores[2] = {store_of(be), store_of(be)};
  auto plan = [&](int i) {
    CompileOptions co;
    co.backend = be;
    co.params = stores[i];
    co.precision = Precision::bf16;
    co.passes = i == 0 ? kMultiCopies : PassSet::only(PassId::optimizer);
    return compile(small_mlp(), co);
  };
  CompiledPlan first[2] = {plan(0), plan(1)};
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*first[0].graph), 8);
  for (int i = 0; i < 2; ++i) CHECK(testing::bitwise_diff({first[0].step(f)}, {first[1].step(f)}) == "");
  CompiledPlan second[2] = {plan(0), plan(1)};
  for (int i = 0; i < 2; ++i) CHECK(testing::bitwise_diff({second[0].step(f)}, {second[1].step(f)}) == "");
  check_copies_match(second[0]);
}

TEST_CASE("low_copies: a plan without the pass on the same store keeps the copies of what it updates") {
  // Store 0: a plan with the pass and one without, stepping in turns; store 1: two plans
  // without. The steps without the pass update the masters and leave the copies to the
  // store, which must refresh them before the plan with the pass reads them.
  const std::shared_ptr<Backend> be = cpu();
  std::shared_ptr<ParameterStore> stores[2] = {std::make_shared<ParameterStore>(be, 0),
                                               std::make_shared<ParameterStore>(be, 0)};
  auto plan = [&](int store, bool pass) {
    CompileOptions co;
    co.backend = be;
    co.params = stores[store];
    co.precision = Precision::bf16;
    co.passes = pass ? kMultiCopies : PassSet::only(PassId::optimizer);
    return compile(small_mlp(), co);
  };
  CompiledPlan with[2] = {plan(0, true), plan(1, false)};
  CompiledPlan without[2] = {plan(0, false), plan(1, false)};
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*with[0].graph), 12);
  for (int round = 0; round < 2; ++round) {
    INFO("round ", round);
    CHECK(testing::bitwise_diff({without[0].step(f)}, {without[1].step(f)}) == "");
    check_copies_match(with[0]);
    CHECK(testing::bitwise_diff({with[0].step(f)}, {with[1].step(f)}) == "");
  }
}

TEST_CASE("low_copies: fp16 loss scaling skips the copy with the step it skips, in both update rules") {
  for (bool adamw : {false, true}) {
    CAPTURE(adamw);
    LossScaleOptions ls;
    ls.enabled = true;
    ls.init_scale = 1024.0f;
    testing::BothExecutors run(cpu, small_mlp(), Precision::fp16, ls, false, kMultiCopies, adamw);
    REQUIRE(count_op(*run.plan.graph, adamw ? OpKind::adamw_multi_cast : OpKind::sgd_momentum_multi_cast) == 1);
    for (const Node& n : run.plan.graph->nodes)
      if (op_update_writes_copy(n.op)) CHECK(op_update_guarded(n.op, static_cast<int>(n.inputs.size())));
    for (uint64_t i = 0; i < 2; ++i) run.step(testing::feeds_of(run.plan, 40 + i));
    // trained_state holds the copies (optimizer state): a skipped step leaves them as they were.
    run.check_skipped_step(7);
    check_copies_match(run.plan);
    for (uint64_t i = 0; i < 2; ++i) run.step(testing::feeds_of(run.plan, 60 + i));
    run.check_same();
    check_copies_match(run.plan);
  }
}

TEST_CASE("ParameterStore::assign_from: a plan steps from another plan's state to the same bits") {
  // The check tg-train makes of the passes (experiments/train/passes_bench.cpp): two plans of
  // one model with different passes, one moved to the other's weights, momentum and copies.
  const std::shared_ptr<Backend> be = cpu();
  auto plan = [&](PassSet passes, bool adamw) {
    CompileOptions co;
    co.backend = be;
    co.precision = Precision::bf16;
    co.passes = passes;
    co.train.adamw = adamw;
    co.train.loss_scale.enabled = false;
    return compile(small_mlp(), co);
  };
  CompiledPlan with = plan(kMultiCopies, false), without = plan(PassSet::only(PassId::optimizer), false);
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*with.graph), 31);
  for (int i = 0; i < 3; ++i) without.step(f);  // the two states differ now
  CHECK(testing::bitwise_diff({with.step(f)}, {without.step(f)}) != "");
  CHECK(with.exec->parameters().assign_from(without.exec->parameters()).empty());
  check_copies_match(with);
  for (int i = 0; i < 3; ++i) CHECK(testing::bitwise_diff({with.step(f)}, {without.step(f)}) == "");
  // Back the other way: the copies of the source are not state to copy.
  for (int i = 0; i < 2; ++i) with.step(f);
  CHECK(without.exec->parameters().assign_from(with.exec->parameters()).empty());
  for (int i = 0; i < 2; ++i) CHECK(testing::bitwise_diff({with.step(f)}, {without.step(f)}) == "");
  // AdamW's plan holds moments the momentum plan lacks: named, and left as they were.
  CompiledPlan adamw = plan(PassSet::only(PassId::optimizer), true);
  const std::vector<std::string> missing = adamw.exec->parameters().assign_from(without.exec->parameters());
  CHECK(!missing.empty());
  CHECK(std::is_sorted(missing.begin(), missing.end()));
  // Stores on two backends are refused (device buffers are copied on the device).
  CompileOptions other;
  other.passes = PassSet::only(PassId::optimizer);
  other.precision = Precision::bf16;
  other.train.loss_scale.enabled = false;
  CompiledPlan elsewhere = compile(small_mlp(), other);
  CHECK_THROWS_AS(elsewhere.exec->parameters().assign_from(without.exec->parameters()), std::invalid_argument);
}

}  // namespace tg
