#pragma once
// static == dynamic bitwise, on any backend: the same model, the same feeds, the
// same kernels in the same order. Shared by the CPU and GPU suites.
#include <doctest/doctest.h>

#include <cmath>

#include "dynamic/trainer.h"
#include "graph/init.h"
#include "kernels/gemm/gemm_mode.h"
#include "static/compiler.h"
#include "static/shape_strategy.h"
#include "tests/static/static_test_util.h"

namespace tg::testing {

inline Feeds random_feeds(const std::map<std::string, Shape>& shapes, uint64_t seed, int64_t classes = 0) {
  Feeds f;
  uint64_t salt = 0;
  for (const auto& [name, s] : shapes) {
    std::vector<float> v(static_cast<size_t>(s.numel()));
    if (name == "labels" || name == "ids") random_labels(v, seed + salt++, classes);
    else random_fill(v, seed + salt++);
    f[name] = v;
  }
  return f;
}

// A token model: ids [4,6] i64 -> embedding of a [vocab, 8] table -> [24, 8] -> a linear
// layer to vocab logits -> cross_entropy with i64 labels, the rows labelled
// ignore_index counting nowhere. Its ids and labels are both in [0, vocab): feed
// random_feeds with classes = vocab.
inline ModelFn token_model(int64_t vocab, int64_t ignore_index) {
  return [vocab, ignore_index](Builder& b) {
    const Value ids = b.input("ids", {4, 6}, DType::I64);
    const Value labels = b.input("labels", {24}, DType::I64);
    const Value table = b.parameter("table", {vocab, 8});
    const Value w = b.parameter("w", {8, vocab});
    const Value logits = matmul(b, reshape(b, embedding(b, table, ids), Shape{24, 8}), w);
    return ModelOutputs{logits, cross_entropy(b, logits, labels, ignore_index)};
  };
}

inline std::map<std::string, Shape> input_shapes_of(const Graph& g) {
  std::map<std::string, Shape> m;
  for (int v : g.values_with_role(Role::input)) m[g.values[static_cast<size_t>(v)].name] = g.values[static_cast<size_t>(v)].shape;
  return m;
}

// The loss of each of `steps` training steps on fixed feeds, static executor, under a
// precision policy; `be` null: the CPU backend.
inline std::vector<float> train_losses(const ModelFn& model, Precision p, PassSet passes, int steps,
                                       std::shared_ptr<Backend> be = nullptr, int64_t classes = 0) {
  CompileOptions co;
  co.backend = std::move(be);
  co.precision = p;
  co.passes = passes;
  co.train.lr = 0.05f;
  CompiledPlan plan = compile(model, co);
  const Feeds f = random_feeds(input_shapes_of(*plan.graph), 11, classes);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(plan.step(f));
  return losses;
}

// f(precision, train) for bf16 and fp16, each with SGD with momentum and with AdamW.
template <typename F>
void for_each_low_precision_rule(const F& f) {
  for (Precision p : {Precision::bf16, Precision::fp16})
    for (bool adamw : {false, true}) {
      const std::string label = std::string(precision_name(p)) + (adamw ? " adamw" : " sgd momentum");
      CAPTURE(label);
      TrainOptions t;
      t.adamw = adamw;
      if (adamw) t.lr = 0.01f;
      f(p, t);
    }
}

// Inference, then 5 training steps with new feeds each, both executors with the update
// rule of `train` (the static plan with `passes`: only passes that keep the bits); every loss, the prediction and every parameter and optimizer state
// compared bit for bit.
inline void check_static_vs_dynamic(const std::function<std::shared_ptr<Backend>()>& make_backend, const ModelFn& model,
                                    const char* what, bool use_cuda_graph, int64_t classes = 0,
                                    Precision precision = Precision::fp32, const TrainOptions& train = {},
                                    PassSet passes = PassSet::none()) {
  auto be_static = make_backend();
  auto be_dynamic = make_backend();
  // The same choices for both executors, in training or inference.
  auto static_options = [&](bool training) {
    CompileOptions co;
    co.backend = be_static;
    co.training = training;
    co.use_cuda_graph = use_cuda_graph;
    co.precision = precision;
    co.train = train;
    co.passes = passes;
    return co;
  };
  auto dynamic_options = [&](bool training) {
    DynamicOptions d;
    d.inference = !training;
    d.precision = precision;
    d.lr = train.lr;
    d.momentum = train.momentum;
    d.use_momentum = train.use_momentum;
    d.adamw = train.adamw;
    d.adam = train.adam;
    d.clip_grad_norm = train.clip_grad_norm;
    d.loss_scale = train.loss_scale;
    return d;
  };
  {
    CompiledPlan p = compile(model, static_options(false));
    DynamicTrainer dyn(model, *be_dynamic, "caching", dynamic_options(false));
    // The model's inputs (the inference graph pruned the loss's target, which
    // the dynamic executor still wants fed: the static plan accepts and ignores it).
    Graph fwd;
    {
      RecordingBuilder rb(fwd);
      model(rb);
    }
    // The kept vectors of read_into: the same bits as read(), in the same storage every time.
    std::vector<float> kept_static, kept_dynamic;
    const float* static_data = nullptr;
    const float* dynamic_data = nullptr;
    for (uint64_t i = 0; i < 3; ++i) {
      const Feeds f = random_feeds(input_shapes_of(fwd), 70 + i * 13, classes);
      p.run(f);
      INFO(std::string(what), " inference ", i);
      const std::vector<float> got = p.read(p.prediction);
      CHECK(bitwise_diff(got, dyn.run_inference(f)) == "");
      p.read_into(p.prediction, kept_static);
      dyn.run_inference(f, kept_dynamic);
      CHECK(bitwise_diff(got, kept_static) == "");
      CHECK(bitwise_diff(got, kept_dynamic) == "");
      if (i > 0) {
        CHECK(kept_static.data() == static_data);
        CHECK(kept_dynamic.data() == dynamic_data);
      }
      static_data = kept_static.data();
      dynamic_data = kept_dynamic.data();
    }
  }
  CompiledPlan p = compile(model, static_options(true));
  DynamicTrainer dyn(model, *be_dynamic, "caching", dynamic_options(true));
  for (uint64_t i = 0; i < 5; ++i) {
    const Feeds f = random_feeds(input_shapes_of(*p.graph), 90 + i * 17, classes);
    const float ls = p.step(f);
    const float ld = dyn.step(f);
    INFO(std::string(what), " training step ", i);
    CHECK(bitwise_diff({ls}, {ld}) == "");
  }
  for (const std::string& name : dyn.parameter_names()) {
    INFO(std::string(what), " parameter ", name);
    CHECK(bitwise_diff(p.read(name), dyn.parameter(name)) == "");
  }
  for (const std::string& name : dyn.state_names()) {
    INFO(std::string(what), " state ", name);
    CHECK(bitwise_diff(p.read(name), dyn.parameter(name)) == "");
  }
}

// Each shape strategy against the dynamic executor stepping at the real shapes, bit
// for bit: every loss, the last prediction, every parameter and velocity. bucket runs
// twice: with the batch-invariant matmul (kernels/gemm/gemm_mode.h) on both sides it is
// bitwise too (padded_mse_loss sees the real elements alone, see shape_strategy.h);
// with the vendor BLAS, which may round a row differently for another row count, it
// agrees to f32 rounding.
inline void check_strategies_vs_dynamic(const std::function<std::shared_ptr<Backend>()>& make_backend,
                                        const ShapedModelFn& model, const char* what,
                                        const std::vector<int64_t>& extents, const std::vector<int64_t>& buckets,
                                        bool use_cuda_graph) {
  struct Run {
    ShapeStrategy strategy;
    bool invariant;
  };
  for (Run run : {Run{ShapeStrategy::recapture, false}, Run{ShapeStrategy::cache, false},
                  Run{ShapeStrategy::update, false}, Run{ShapeStrategy::bucket, true}, Run{ShapeStrategy::bucket, false}}) {
    const ShapeStrategy s = run.strategy;
    const bool exact = s != ShapeStrategy::bucket || run.invariant;
    kernels::BatchInvariantMatmul mode(run.invariant);
    auto same = [&](const std::vector<float>& got, const std::vector<float>& want) {
      if (exact) {
        CHECK(bitwise_diff(got, want) == "");
        return;
      }
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < got.size(); ++k) CHECK(std::fabs(got[k] - want[k]) <= 1e-5f + 1e-4f * std::fabs(want[k]));
    };
    ShapeStrategyOptions opt;
    opt.strategy = s;
    opt.compile.backend = make_backend();
    opt.compile.use_cuda_graph = use_cuda_graph;
    opt.cache_capacity = 2;
    opt.buckets = buckets;
    ShapeStrategyRunner runner(model, opt);
    auto be_dynamic = make_backend();
    // The dynamic executor re-runs the model function every iteration; the
    // extent is read through this variable, as a user's data loader would set it.
    auto extent = std::make_shared<int64_t>(extents[0]);
    ModelFn varying = [model, extent](Builder& b) { return model(*extent)(b); };
    DynamicTrainer dyn(varying, *be_dynamic, "caching", DynamicOptions{});
    for (size_t i = 0; i < extents.size(); ++i) {
      *extent = extents[i];
      const Feeds f = random_feeds(runner.input_shapes(extents[i]), 300 + i * 11);
      const ShapeStepReport r = runner.step(extents[i], f);
      const float ld = dyn.step(f);
      INFO(what, " ", shape_strategy_name(s), " invariant=", run.invariant, " step ", i, " extent ", extents[i]);
      same({r.loss}, {ld});
      CHECK(r.padded_extent >= extents[i]);
    }
    for (const std::string& name : dyn.parameter_names()) {
      INFO(what, " ", shape_strategy_name(s), " invariant=", run.invariant, " parameter ", name);
      same(runner.parameter(name), dyn.parameter(name));
    }
    for (const std::string& name : dyn.state_names()) {
      INFO(what, " ", shape_strategy_name(s), " invariant=", run.invariant, " state ", name);
      same(runner.parameter(name), dyn.parameter(name));
    }
    // Inference at every extent: the prediction (cropped back for bucket).
    ShapeStrategyOptions iopt = opt;
    iopt.compile.backend = make_backend();
    iopt.compile.training = false;
    iopt.compile.params = nullptr;
    ShapeStrategyRunner infer(model, iopt);
    DynamicOptions dio;
    dio.inference = true;
    auto be_infer = make_backend();
    DynamicTrainer dyn_infer(varying, *be_infer, "caching", dio);
    for (size_t i = 0; i < extents.size(); ++i) {
      *extent = extents[i];
      const Feeds f = random_feeds(infer.input_shapes(extents[i]), 500 + i * 7);
      infer.step(extents[i], f);
      INFO(what, " ", shape_strategy_name(s), " invariant=", run.invariant, " inference ", i, " extent ", extents[i]);
      same(infer.prediction(), dyn_infer.run_inference(f));
    }
  }
}

}  // namespace tg::testing
