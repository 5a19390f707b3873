// The low_copies pass (static/passes/low_copies.cpp) on the CUDA backend: the updates'
// kernels write each weight's bf16 or f16 copy in the launch that updates it, and the
// static plan (graph replay and plain launches, with the side stream of the lanes pass)
// stays bitwise equal to the dynamic executor, which casts the weights every step; so does
// the optimizer pass's multi update, which reads bf16 gradients without the casts to f32.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/precision.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

}  // namespace

TEST_CASE("low_copies on CUDA: static == dynamic bitwise in bf16 and fp16, SGD with momentum and AdamW") {
  TG_REQUIRE_GPU();
  const PassSet multi = PassSet::only(PassId::optimizer).with(PassId::low_copies);
  testing::for_each_low_precision_rule([&](Precision p, const TrainOptions& t) {
    // The optimizer pass alone: the multi updates read bf16 gradients without their casts.
    for (PassSet passes : {PassSet::only(PassId::low_copies), PassSet::only(PassId::optimizer), multi,
                           multi.with(PassId::lanes)}) {
      const std::string set = passes.str();
      CAPTURE(set);
      for (bool graph : {true, false}) {
        testing::check_static_vs_dynamic(gpu, testing::mlp_model(testing::mlp_config(8, 24, 32, 4, 6)), "mlp", graph, 0,
                                         p, t, passes);
        testing::check_static_vs_dynamic(gpu, testing::transformer_model(testing::transformer_config(2, 16, 32, 2)),
                                         "transformer", graph, 0, p, t, passes);
      }
    }
  });
}

TEST_CASE("low_copies on CUDA: weights written through the store refresh the copies") {
  TG_REQUIRE_GPU();
  const ModelFn model = testing::mlp_model(testing::mlp_config(8, 24, 32, 4, 6));
  CompiledPlan plans[2];
  for (int i = 0; i < 2; ++i) {
    CompileOptions co;
    co.backend = gpu();
    co.precision = Precision::bf16;
    co.passes = i == 0 ? PassSet::only(PassId::optimizer).with(PassId::low_copies) : PassSet::only(PassId::optimizer);
    plans[i] = compile(model, co);
  }
  REQUIRE(!plans[0].exec->parameters().copies().empty());
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*plans[0].graph), 5);
  for (int i = 0; i < 2; ++i) CHECK(testing::bitwise_diff({plans[0].step(f)}, {plans[1].step(f)}) == "");
  for (int id : plans[0].graph->values_with_role(Role::parameter)) {
    const ValueInfo& v = plans[0].graph->values[static_cast<size_t>(id)];
    std::vector<float> w(static_cast<size_t>(v.shape.numel()));
    random_fill(w, 40 + static_cast<uint64_t>(id), -0.3f, 0.3f);
    for (CompiledPlan& plan : plans) plan.exec->parameters().write(v.name, w);
  }
  for (int i = 0; i < 3; ++i) CHECK(testing::bitwise_diff({plans[0].step(f)}, {plans[1].step(f)}) == "");
}

TEST_CASE("vocab_pad on CUDA: a GPT-2 head of an odd vocabulary, padded in the graph, steps as the dynamic executor") {
  TG_REQUIRE_GPU();
  // Large enough that the backend pads the head's three products per call (1024 x 5008 x
  // 256 multiply-adds each, kStagingMinProduct), so the pass pads them in the graph.
  Gpt2Config c;
  c.batch = 1;
  c.seq = 1024;
  c.context = 1024;
  c.vocab = 5001;
  c.d_model = 256;
  c.heads = 2;
  c.layers = 1;
  const ModelFn model = testing::gpt2_model(c);
  const PassSet passes = PassSet::only(PassId::optimizer).with(PassId::low_copies).with(PassId::vocab_pad);
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    CompileOptions co;
    co.backend = gpu();
    co.precision = p;
    co.passes = passes;
    const CompiledPlan plan = compile(model, co);
    REQUIRE(plan.graph->find_value(std::string("gpt2.wte.") + dtype_name(precision_dtype(p)) + ".padded") >= 0);
    testing::check_static_vs_dynamic(gpu, model, "gpt2 head", true, c.vocab, p, TrainOptions{}, passes);
  }
}

}  // namespace tg
