// The static executor on the CUDA backend (label gpu; skipped without a device):
// capture failures name the op, graph replay equals plain launches bitwise, and
// every shape strategy equals a fresh plan at each shape bitwise.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cmath>

#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/interpreter.h"
#include "kernels/parallel_memcpy.h"
#include "static/compiler.h"
#include "static/cuda_graph.h"
#include "static/shape_strategy.h"
#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#include "tests/static/static_test_util.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#define TG_TEST_HAVE_CUDA_BACKEND 1
#include "tests/static/vs_dynamic_test.h"
#endif

namespace tg {
namespace {

using testing::bitwise_diff;
using testing::feeds_from;

TEST_CASE("capture: an illegal call inside the captured schedule is reported with its op") {
  TG_REQUIRE_GPU();
  cuda::Stream stream = cuda::Stream::create();
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 1024) == cudaSuccess);
  auto names = [](int i) { return fmt::format("'op{}' (test)", i); };
  for (int kind = 0; kind < 2; ++kind) {
    auto issue = [&](int i) {
      if (i == 2) {
        if (kind == 0) {
          void* p = nullptr;
          TG_CUDA_CHECK(cudaMalloc(&p, 256));  // not allowed while capturing
          cudaFree(p);
        } else {
          TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));  // nor is a sync
        }
      } else {
        TG_CUDA_CHECK(cudaMemsetAsync(dev, 0, 1024, stream.get()));
      }
    };
    try {
      capture_steps(stream.get(), 4, issue, names);
      FAIL("the capture should have failed");
    } catch (const CaptureError& e) {
      CHECK(e.step() == 2);
      CHECK(std::string(e.what()).find("'op2'") != std::string::npos);
      MESSAGE(e.what());
    }
    cudaStreamCaptureStatus st;
    REQUIRE(cudaStreamIsCapturing(stream.get(), &st) == cudaSuccess);
    CHECK(st == cudaStreamCaptureStatusNone);  // the guard ended the capture
  }
  // The stream still works after a failed capture.
  cuda::CudaGraph g = capture_steps(stream.get(), 3, [&](int) { TG_CUDA_CHECK(cudaMemsetAsync(dev, 1, 1024, stream.get())); }, names);
  cuda::GraphExec ex = cuda::GraphExec::instantiate(g);
  ex.launch(stream.get());
  stream.synchronize();
  CHECK(update_or_instantiate(ex, g));  // the same topology: the update is accepted
  cudaFree(dev);
}

#ifdef TG_TEST_HAVE_CUDA_BACKEND
std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

ModelFn mlp_fn(int64_t batch) { return testing::mlp_model(testing::mlp_config(batch, 64, 64, 4, 10)); }

TEST_CASE("static on CUDA: graph replay == plain launches bitwise, 5 training steps, close to the CPU") {
  TG_REQUIRE_GPU();
  std::vector<float> losses[2];
  std::vector<float> w[2];
  for (int graph = 0; graph < 2; ++graph) {
    CompileOptions opt;
    opt.backend = gpu();
    opt.use_cuda_graph = graph == 1;
    opt.poison_arena = true;
    CompiledPlan p = compile(mlp_fn(32), opt);
    CHECK(p.exec->uses_cuda_graph() == (graph == 1));
    const Feeds f = feeds_from(*p.graph, make_values(*p.graph, 0));
    for (int s = 0; s < 5; ++s) losses[graph].push_back(p.step(s == 0 ? f : Feeds{}));
    w[graph] = p.read("mlp.l0.w");
    if (graph == 1) MESSAGE("CUDA compile: ", p.timings.str());
  }
  CHECK(bitwise_diff(losses[1], losses[0]) == "");
  CHECK(bitwise_diff(w[1], w[0]) == "");
  // And it trains like the CPU reference (different reduction order: a tolerance).
  CompiledPlan cpu = compile(mlp_fn(32), CompileOptions{});
  const Feeds f = feeds_from(*cpu.graph, make_values(*cpu.graph, 0));
  for (int s = 0; s < 5; ++s) {
    const float l = cpu.step(s == 0 ? f : Feeds{});
    CHECK(std::fabs(l - losses[1][static_cast<size_t>(s)]) <= 1e-5f + 1e-4f * std::fabs(l));
  }
}

// Two inference plans of mlp_fn(batch) on one GPU and one parameter store, the
// second compiled with `vary` applied to its options; `runs` sets of new feeds,
// each run through both, whose predictions must have the same bits. Returns the
// first plan's last feeds and its read-back of input x, for further checks.
std::pair<Feeds, std::vector<float>> compare_inference_plans(int64_t batch, void (*vary)(CompileOptions&),
                                                            uint64_t seed, int runs) {
  auto be = gpu();
  CompileOptions opt;
  opt.backend = be;
  opt.params = std::make_shared<ParameterStore>(be, 0);
  opt.training = false;
  CompiledPlan a = compile(mlp_fn(batch), opt);
  CompileOptions varied = opt;
  vary(varied);
  CompiledPlan b = compile(mlp_fn(batch), varied);
  Feeds f;
  for (int i = 0; i < runs; ++i) {
    f = feeds_from(*a.graph, make_values(*a.graph, seed + static_cast<uint64_t>(i)));
    a.run(f);
    b.run(f);
    INFO("run ", i);
    CHECK(bitwise_diff(a.read(a.prediction), b.read(b.prediction)) == "");
  }
  return {f, a.read("x")};
}

TEST_CASE("static on CUDA: inference replays with new inputs each time == plain launches") {
  TG_REQUIRE_GPU();
  compare_inference_plans(16, [](CompileOptions& o) { o.use_cuda_graph = false; }, 100, 4);
}

TEST_CASE("static on CUDA: large feeds copied into staging on the shared threads arrive whole, == one memcpy") {
  TG_REQUIRE_GPU();
  // x is 8192 x 64 floats = 2 MiB: above the 1 MiB where ParallelMemcpy splits a batch.
  // The first plan copies with the default (threads_streaming), the second one memcpy per feed.
  const auto [feeds, x] = compare_inference_plans(8192, [](CompileOptions& o) { o.feed_copy = FeedCopy::serial; }, 200, 3);
  REQUIRE(feeds.at("x").size() * sizeof(float) > ParallelMemcpy::kMinParallelBytes);
  CHECK(bitwise_diff(x, feeds.at("x")) == "");
  // Cached stores on the threads: the same predictions.
  compare_inference_plans(8192, [](CompileOptions& o) { o.feed_copy = FeedCopy::threads; }, 300, 2);
}

TEST_CASE("shape strategies on CUDA: recapture, cache, update, bucket equal each other bitwise") {
  TG_REQUIRE_GPU();
  const std::vector<int64_t> extents = {8, 16, 8, 12, 16, 12};
  ShapedModelFn at = [](int64_t batch) { return mlp_fn(batch); };
  int updates = 0;
  auto run = [&](ShapeStrategy s, bool use_graph) {
    ShapeStrategyOptions opt;
    opt.strategy = s;
    opt.compile.backend = gpu();
    opt.compile.use_cuda_graph = use_graph;
    opt.buckets = {8, 16};
    ShapeStrategyRunner r(at, opt);
    std::vector<float> out;
    for (size_t i = 0; i < extents.size(); ++i) {
      Feeds f;
      uint64_t salt = 0;
      for (const auto& [name, shape] : r.input_shapes(extents[i])) {
        std::vector<float> v(static_cast<size_t>(shape.numel()));
        random_fill(v, 50 + i * 7 + salt++);
        f[name] = v;
      }
      const ShapeStepReport rep = r.step(extents[i], f);
      out.push_back(rep.loss);
      updates += rep.graph_updated ? 1 : 0;
      const std::vector<float> pred = r.prediction();
      out.insert(out.end(), pred.begin(), pred.end());
    }
    const std::vector<float> w = r.parameter("mlp.l0.w");
    out.insert(out.end(), w.begin(), w.end());
    return out;
  };
  const std::vector<float> ref = run(ShapeStrategy::cache, false);  // plain launches, one plan per shape
  CHECK(bitwise_diff(run(ShapeStrategy::cache, true), ref) == "");
  CHECK(bitwise_diff(run(ShapeStrategy::recapture, true), ref) == "");
  CHECK(bitwise_diff(run(ShapeStrategy::update, true), ref) == "");
  MESSAGE("update strategy: ", updates, " of ", extents.size() - 1, " shape changes used cudaGraphExecUpdate");
  CHECK(bitwise_diff(run(ShapeStrategy::bucket, true), ref) == "");
}

TEST_CASE("static == dynamic bitwise on CUDA (graph replay and plain launches): mlp, transformer_block") {
  TG_REQUIRE_GPU();
  const ModelFn transformer = testing::transformer_model(testing::transformer_config(2, 16, 32, 2));
  for (bool graph : {true, false}) {
    testing::check_static_vs_dynamic(gpu, mlp_fn(32), "mlp", graph);
    testing::check_static_vs_dynamic(gpu, transformer, "transformer", graph);
  }
}

TEST_CASE("static == dynamic bitwise on CUDA: transformer_block with fused attention, causal and not, fp32 and bf16") {
  TG_REQUIRE_GPU();
  for (const bool causal : {false, true}) {
    TransformerConfig c = testing::transformer_config(2, 40, 64, 2);  // two key tiles, dh 32
    c.fused_attention = true;
    c.causal = causal;
    for (bool graph : {true, false}) {
      testing::check_static_vs_dynamic(gpu, testing::transformer_model(c), "fused attention", graph);
      testing::check_static_vs_dynamic(gpu, testing::transformer_model(c), "fused attention bf16", graph, 0,
                                       Precision::bf16);
    }
  }
}

TEST_CASE("static == dynamic bitwise on CUDA: transformer_block with dropout, fp32, bf16 and f16, and replays advance it") {
  TG_REQUIRE_GPU();
  TransformerConfig c = testing::transformer_config(2, 16, 32, 2);
  c.dropout = 0.2f;
  for (bool graph : {true, false}) {
    testing::check_static_vs_dynamic(gpu, testing::transformer_model(c), "dropout", graph);
    testing::check_static_vs_dynamic(gpu, testing::transformer_model(c), "dropout bf16", graph, 0, Precision::bf16);
    testing::check_static_vs_dynamic(gpu, testing::transformer_model(c), "dropout f16", graph, 0, Precision::fp16);
  }
  // lr 1e-30 (0 is refused): a loss that moves by more than 1e-4 moved because the masks did;
  // each CUDA-graph replay advances the rng state on the device.
  CompileOptions co;
  co.backend = gpu();
  co.train.lr = 1e-30f;
  co.train.use_momentum = false;
  CompiledPlan plan = compile(testing::transformer_model(c), co);
  REQUIRE(plan.exec->uses_cuda_graph());
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*plan.graph), 3);
  const float first = plan.step(f), second = plan.step(f);
  CHECK(std::fabs(first - second) > 1e-4f);
  CHECK(plan.read(kRngStateName) == std::vector<float>{0.0f, 2.0f});
}

TEST_CASE("static == dynamic bitwise on CUDA: a token model with i64 ids and labels, embedding, ignore_index") {
  TG_REQUIRE_GPU();
  for (bool graph : {true, false}) {
    testing::check_static_vs_dynamic(gpu, testing::token_model(11, 3), "tokens", graph, 11);
    testing::check_static_vs_dynamic(gpu, testing::token_model(11, 3), "tokens bf16", graph, 11, Precision::bf16);
  }
}

TEST_CASE("shape strategies == dynamic bitwise at every shape on CUDA: mlp, transformer_block (variable batch)") {
  TG_REQUIRE_GPU();
  testing::check_strategies_vs_dynamic(gpu, [](int64_t b) { return mlp_fn(b); }, "mlp", {8, 16, 5, 12, 16, 12, 1},
                                       {8, 16}, true);
  testing::check_strategies_vs_dynamic(gpu, testing::small_transformer_at(), "transformer", {3, 1, 4, 2, 3}, {2, 4},
                                       true);
}
#endif

}  // namespace
}  // namespace tg
