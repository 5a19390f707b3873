// The four shape strategies on the CPU: training with a batch that changes every
// iteration, against the interpreter run at each real shape with the parameters
// carried over (what the dynamic executor does).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "graph/errors.h"
#include "graph/init.h"
#include "graph/training.h"
#include "kernels/gemm/gemm_mode.h"
#include "kernels/interpreter.h"
#include "static/shape_strategy.h"
#include "tests/common/models.h"
#include "tests/static/static_test_util.h"

namespace tg {
namespace {

using testing::bitwise_diff;

constexpr uint64_t kSeed = 9;

ShapedModelFn mlp_at() { return testing::small_mlp_at(); }

Feeds feeds_for(const std::map<std::string, Shape>& shapes, int step) {
  Feeds f;
  uint64_t salt = 0;
  for (const auto& [name, s] : shapes) {
    std::vector<float> v(static_cast<size_t>(s.numel()));
    random_fill(v, 1000 + static_cast<uint64_t>(step) * 31 + salt++);
    f[name] = v;
  }
  return f;
}

struct Reference {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> state;  // parameters and velocities by name
  std::vector<std::vector<float>> predictions;
};

// The interpreter at each real shape, state carried by name between shapes.
Reference reference(const ShapedModelFn& model, const std::vector<int64_t>& extents,
                    const std::vector<Feeds>& feeds) {
  Reference r;
  for (size_t i = 0; i < extents.size(); ++i) {
    const Graph g = build_training_graph(model(extents[i]));
    std::vector<std::vector<float>> values = make_values(g, kSeed);
    for (size_t v = 0; v < g.values.size(); ++v) {
      const ValueInfo& info = g.values[v];
      if (info.role == Role::input) values[v] = feeds[i].at(info.name);
      auto it = r.state.find(info.name);
      if (it != r.state.end()) values[v] = it->second;
    }
    interpret(g, values);
    r.losses.push_back(values[static_cast<size_t>(g.outputs[0])][0]);
    r.predictions.push_back(values[static_cast<size_t>(g.outputs[1])]);
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].role == Role::parameter || g.values[v].role == Role::optimizer_state)
        r.state[g.values[v].name] = values[v];
  }
  return r;
}

// Equal bitwise (exact) or to f32 rounding; else prints the first difference.
bool same(const std::vector<float>& a, const std::vector<float>& b, bool exact) {
  const std::string diff = bitwise_diff(a, b);
  if (diff.empty()) return true;
  if (exact || a.size() != b.size()) {
    MESSAGE(diff);
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= 1e-5f + 1e-4f * std::fabs(b[i]))) {
      MESSAGE(fmt::format("element {}: {:.9g} vs {:.9g}", i, a[i], b[i]));
      return false;
    }
  return true;
}

// exact: bitwise; else to f32 rounding (bucket with the vendor BLAS).
void check_strategy(ShapeStrategy strategy, bool exact = true) {
  const std::vector<int64_t> extents = {5, 8, 3, 8, 5, 7, 3};
  ShapeStrategyOptions opt;
  opt.strategy = strategy;
  opt.compile.seed = kSeed;
  opt.compile.poison_arena = true;
  opt.cache_capacity = 2;
  opt.buckets = {4, 8};
  ShapeStrategyRunner runner(mlp_at(), opt);
  std::vector<Feeds> feeds;
  for (size_t i = 0; i < extents.size(); ++i) feeds.push_back(feeds_for(runner.input_shapes(extents[i]), static_cast<int>(i)));
  const Reference ref = reference(mlp_at(), extents, feeds);
  for (size_t i = 0; i < extents.size(); ++i) {
    const ShapeStepReport rep = runner.step(extents[i], feeds[i]);
    INFO(shape_strategy_name(strategy), " step ", i, " extent ", extents[i]);
    CHECK(rep.extent == extents[i]);
    CHECK(rep.iteration_ms >= rep.compile_ms);
    CHECK_MESSAGE(same({rep.loss}, {ref.losses[i]}, exact), shape_strategy_name(strategy));
    CHECK_MESSAGE(same(runner.prediction(), ref.predictions[i], exact), shape_strategy_name(strategy));
    switch (strategy) {
      case ShapeStrategy::recapture:
      case ShapeStrategy::update:
        CHECK(rep.graphs_cached == 1);
        CHECK(rep.compiled == (i == 0 || extents[i] != extents[i - 1]));
        break;
      case ShapeStrategy::cache: CHECK(rep.graphs_cached <= 2); break;
      case ShapeStrategy::bucket:
        CHECK(rep.padded_extent == (extents[i] <= 4 ? 4 : 8));
        CHECK(rep.padding_waste >= 0.0);
        CHECK(rep.padding_waste < 1.0);
        CHECK((rep.padding_waste > 0) == (rep.padded_extent != extents[i]));
        CHECK(rep.graphs_cached <= 2);
        CHECK(rep.cache_hit == (i != 0 && i != 2));
        break;
    }
    CHECK(rep.cached_bytes > 0);
  }
  for (const auto& [name, want] : ref.state) {
    INFO(shape_strategy_name(strategy), " final ", name);
    CHECK(same(runner.parameter(name), want, exact));
  }
}

TEST_CASE("shape strategies: recapture, cache, update equal the interpreter bitwise at every shape") {
  check_strategy(ShapeStrategy::recapture);
  check_strategy(ShapeStrategy::cache);
  check_strategy(ShapeStrategy::update);
}

TEST_CASE("shape strategies: bucket equals the interpreter bitwise with the batch-invariant matmul") {
  kernels::BatchInvariantMatmul on;
  check_strategy(ShapeStrategy::bucket);
}

TEST_CASE("shape strategies: bucket agrees to f32 rounding with OpenBLAS (which rounds rows by row count)") {
  check_strategy(ShapeStrategy::bucket, false);
}

TEST_CASE("shape strategies: cache is bounded LRU, by count and by bytes") {
  ShapeStrategyOptions opt;
  opt.strategy = ShapeStrategy::cache;
  opt.cache_capacity = 2;
  ShapeStrategyRunner runner(mlp_at(), opt);
  auto step = [&](int64_t e) { return runner.step(e, feeds_for(runner.input_shapes(e), 0)); };
  CHECK(step(3).compiled);
  CHECK(step(4).compiled);
  CHECK(step(3).cache_hit);   // 3 becomes most recent
  CHECK(step(5).compiled);    // evicts 4
  CHECK(runner.graphs_cached() == 2);
  CHECK(step(3).cache_hit);
  CHECK(step(4).compiled);
  ShapeStrategyOptions small = opt;
  small.cache_capacity = 100;
  small.cache_bytes = 1;  // nothing fits: only the plan in use is kept
  ShapeStrategyRunner tight(mlp_at(), small);
  tight.step(3, feeds_for(tight.input_shapes(3), 0));
  CHECK(tight.step(4, feeds_for(tight.input_shapes(4), 0)).graphs_cached == 1);
}

TEST_CASE("shape strategies: bucket refuses what it cannot mask, pad/crop round-trip") {
  ShapeStrategyOptions opt;
  opt.strategy = ShapeStrategy::bucket;
  opt.buckets = {4, 8};
  ShapedModelFn attn =
      testing::transformer_model_at(testing::transformer_config(1, /*seq: varies*/ 0, 8, 2), &TransformerConfig::seq);
  ShapeStrategyRunner r1(attn, opt);
  CHECK_THROWS_WITH_AS(r1.step(3, feeds_for(r1.input_shapes(3), 0)), doctest::Contains("leading axis"), GraphError);
  // The variable axis leading, but normalized or reduced over: padding would mix in.
  ShapedModelFn over_axis[] = {
      [](int64_t n) -> ModelFn {
        return [n](Builder& b) {
          const Value y = softmax(b, b.input("x", Shape{n}));
          return ModelOutputs{y, mse_loss(b, y, b.input("target", Shape{n}))};
        };
      },
      [](int64_t n) -> ModelFn {
        return [n](Builder& b) {
          const Value w = b.parameter("w", Shape{2});
          const Value y = add(b, reduce_mean(b, b.input("x", Shape{n, 2}), 0), w);
          return ModelOutputs{y, mse_loss(b, y, b.input("target", Shape{2}))};
        };
      }};
  for (const char* what : {"softmax", "reduce_mean"}) {
    ShapeStrategyRunner r(over_axis[std::string(what) == "softmax" ? 0 : 1], opt);
    CHECK_THROWS_WITH_AS(r.step(3, feeds_for(r.input_shapes(3), 0)), doctest::Contains(what), GraphError);
  }
  // cross_entropy's padded labels must be given ignore_index: computed labels cannot be.
  ShapedModelFn computed_labels = [](int64_t n) -> ModelFn {
    return [n](Builder& b) {
      const Value y = matmul(b, b.input("x", Shape{n, 2}), b.parameter("w", Shape{2, 3}));
      return ModelOutputs{y, cross_entropy(b, y, scale(b, b.input("labels", Shape{n}), 1.0f))};
    };
  };
  ShapeStrategyRunner r2(computed_labels, opt);
  CHECK_THROWS_WITH_AS(r2.step(3, feeds_for(r2.input_shapes(3), 0)), doctest::Contains("the labels of cross_entropy"),
                       GraphError);
  // Fused attention over the padded sequence without key lengths (nor causal) would see the padding.
  TransformerConfig fused = testing::transformer_config(1, 0, 8, 2);
  fused.fused_attention = true;
  fused.with_loss = false;
  ShapeStrategyRunner r3(testing::transformer_model_at(fused, &TransformerConfig::seq), opt);
  CHECK_THROWS_WITH_AS(r3.step(3, feeds_for(r3.input_shapes(3), 0)), doctest::Contains("without a key mask"),
                       GraphError);
  CHECK_THROWS_WITH_AS(r2.bucket_for(9), doctest::Contains("largest bucket"), std::invalid_argument);

  std::vector<float> src(2 * 3 * 2);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i + 1);
  const std::vector<float> padded = pad_to(src, {2, 3, 2}, {3, 4, 2});
  CHECK(padded.size() == 24);
  CHECK(padded[2 * 4 * 2 - 1] == 0.0f);  // row 3 of batch 0 is padding
  CHECK(padded[8] == 7.0f);              // batch 1 starts at 4*2
  CHECK(crop_to(padded, {3, 4, 2}, {2, 3, 2}) == src);
}

// A ResNet (batch norm) with a variable batch: training batch norm takes the padded batch's
// statistics, so bucket refuses it; in inference batch norm runs on its running statistics,
// one sample at a time, and the zero images padding the batch leave the real predictions as
// the unpadded runs give them (to the rounding of the convolutions at another batch). An
// image size is no batch: bucket refuses it.
TEST_CASE("shape strategies: a ResNet buckets its batch in inference only, never its image size") {
  ResNetConfig c;
  c.width = 4;
  c.blocks = 1;
  c.image = 8;
  c.classes = 3;
  auto at_batch = [c](bool training) -> ShapedModelFn {
    return [c, training](int64_t batch) -> ModelFn {
      ResNetConfig r = at_size(c, batch, c.image);
      r.with_loss = training;
      return [r](Builder& b) { return resnet_cifar(b, r); };
    };
  };
  auto options = [](ShapeStrategy s, bool training) {
    ShapeStrategyOptions opt;
    opt.strategy = s;
    opt.compile.seed = kSeed;
    opt.compile.training = training;
    opt.buckets = {2, 4};
    return opt;
  };
  auto labelled = [&](const std::map<std::string, Shape>& shapes, int step) {
    Feeds f = feeds_for(shapes, step);
    if (f.count("labels")) random_labels(f["labels"], 70 + static_cast<uint64_t>(step), c.classes);
    return f;
  };
  ShapeStrategyRunner train(at_batch(true), options(ShapeStrategy::bucket, true));
  CHECK_THROWS_WITH_AS(train.step(3, labelled(train.input_shapes(3), 0)), doctest::Contains("batch_norm"), GraphError);

  ShapeStrategyRunner bucket(at_batch(false), options(ShapeStrategy::bucket, false));
  ShapeStrategyRunner cache(at_batch(false), options(ShapeStrategy::cache, false));
  for (int64_t batch : {3, 1, 4, 2}) {
    INFO("batch ", batch);
    const Feeds f = labelled(cache.input_shapes(batch), static_cast<int>(batch));
    CHECK(bucket.step(batch, f).padded_extent == (batch <= 2 ? 2 : 4));
    cache.step(batch, f);
    const std::vector<float> want = cache.prediction();
    CHECK(want.size() == static_cast<size_t>(batch * c.classes));
    CHECK(same(bucket.prediction(), want, false));
  }

  ShapedModelFn at_image = [c](int64_t image) -> ModelFn {
    const ResNetConfig r = at_size(c, 2, image);
    return [r](Builder& b) { return resnet_cifar(b, r); };
  };
  ShapeStrategyOptions by_image = options(ShapeStrategy::bucket, true);
  by_image.buckets = {8, 16};
  ShapeStrategyRunner images(at_image, by_image);
  CHECK_THROWS_WITH_AS(images.step(8, labelled(images.input_shapes(8), 0)),
                       doctest::Contains("cannot be built at extents 1 and 2"), GraphError);
}

}  // namespace
// A GPT-2 bucketed along its sequence: ids and labels padded at the end of each sequence,
// the labels with ignore_index, the key lengths fed as each sequence's real length. Every
// step's loss and, at the end, every parameter equal the unpadded runs' (the cache
// strategy) to f32 rounding: the padded rows add zeros to the sums over rows, in another
// grouping of the terms.
TEST_CASE("shape strategies: GPT-2 bucketed along the sequence with key lengths equals the unpadded runs") {
  Gpt2Config base = testing::tiny_gpt2_config();
  base.padding = true;
  const ShapedModelFn at = testing::gpt2_model_at(base, &Gpt2Config::seq);
  const std::vector<int64_t> extents = {5, 8, 3, 8, 7, 2};
  auto feeds = [&](int64_t seq, int step) {
    // Sequence 0 fills the length; sequence 1 is itself right-padded (its labels ignored there).
    const std::vector<int64_t> lengths = {seq, std::max<int64_t>(1, seq - 2)};
    Feeds f;
    std::vector<float> ids(static_cast<size_t>(2 * seq)), labels(ids.size());
    random_labels(ids, 50 + static_cast<uint64_t>(step), base.vocab);
    random_labels(labels, 90 + static_cast<uint64_t>(step), base.vocab);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = lengths[static_cast<size_t>(b)]; t < seq; ++t)
        labels[static_cast<size_t>(b * seq + t)] = static_cast<float>(base.ignore_index);
    f["ids"] = ids;
    f["labels"] = labels;
    f["lengths"] = {static_cast<float>(lengths[0]), static_cast<float>(lengths[1])};
    return f;
  };
  auto runner = [&](ShapeStrategy s) {
    ShapeStrategyOptions opt;
    opt.strategy = s;
    opt.compile.seed = kSeed;
    opt.compile.poison_arena = true;
    opt.buckets = {4, 8};
    return std::make_unique<ShapeStrategyRunner>(at, opt);
  };
  const auto bucket = runner(ShapeStrategy::bucket), cache = runner(ShapeStrategy::cache);
  for (size_t i = 0; i < extents.size(); ++i) {
    INFO("step ", i, " length ", extents[i]);
    const Feeds f = feeds(extents[i], static_cast<int>(i));
    const ShapeStepReport rb = bucket->step(extents[i], f);
    const ShapeStepReport rc = cache->step(extents[i], f);
    CHECK(rb.padded_extent == (extents[i] <= 4 ? 4 : 8));
    CHECK(std::isfinite(rb.loss));
    CHECK(same({rb.loss}, {rc.loss}, false));
  }
  Graph g;
  {
    RecordingBuilder rb(g);
    at(8)(rb);
  }
  int checked = 0;
  for (int v : g.values_with_role(Role::parameter)) {
    const std::string& name = g.values[static_cast<size_t>(v)].name;
    INFO(name);
    CHECK(same(bucket->parameter(name), cache->parameter(name), false));
    ++checked;
  }
  CHECK(checked > 10);
  CHECK_THROWS_WITH_AS(bucket->prediction(), doctest::Contains("padded along axis 1"), std::logic_error);
}

}  // namespace tg
