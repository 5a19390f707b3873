// Dynamic loss scaling (graph/loss_scale.h) on the CUDA backend (label gpu; skipped
// without a device): the scale and the found-inf flag are read on the device, so the step
// stays one CUDA graph, and graph replay, plain launches and the dynamic executor agree bit
// for bit. The SGD runs force loss scaling on in fp32; the AdamW run trains fp16, where it is
// on by default, and checks that a skipped step leaves the moments and step counts too.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#define TG_TEST_HAVE_CUDA_BACKEND 1
#include "tests/static/loss_scale_util.h"
#endif

namespace tg {
namespace {

#ifdef TG_TEST_HAVE_CUDA_BACKEND
std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

ModelFn small_mlp() { return testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6)); }

TEST_CASE("loss scaling on CUDA: static (graph replay, plain launches, optimizer pass) == dynamic, scale grows") {
  TG_REQUIRE_GPU();
  LossScaleOptions ls;
  ls.enabled = true;
  ls.growth_interval = 3;
  for (bool graph : {true, false}) {
    for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
      CAPTURE(graph);
      CAPTURE(passes.str());
      testing::BothExecutors run(gpu, small_mlp(), Precision::fp32, ls, graph, passes);
      for (uint64_t i = 0; i < 7; ++i) run.step(testing::feeds_of(run.plan, 90 + i * 17));
      run.check_same();
      for (const LossScaleStatus& s : {run.status_static(), run.status_dynamic()}) {
        CHECK(s.scale == 65536.0f * 4.0f);
        CHECK(s.skipped_steps == 0);
        CHECK(s.growth_tracker == 1);
      }
    }
  }
}

TEST_CASE("loss scaling on CUDA: a step with an inf loss is skipped inside the captured graph") {
  TG_REQUIRE_GPU();
  LossScaleOptions ls;
  ls.enabled = true;
  for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
    CAPTURE(passes.str());
    testing::BothExecutors run(gpu, small_mlp(), Precision::fp32, ls, true, passes);
    run.step(testing::feeds_of(run.plan, 3));  // one clean step: the velocities are nonzero from here
    // Inputs of 1e30: the squared error is past f32's range, so every gradient is an inf or a nan.
    CHECK(std::isinf(run.check_skipped_step(4)));
    CHECK(run.status_static().scale == 32768.0f);
  }
}

TEST_CASE("loss scaling on CUDA with AdamW in fp16: static (replay, plain, optimizer pass) == dynamic, a skip moves nothing") {
  TG_REQUIRE_GPU();
  LossScaleOptions ls;
  ls.init_scale = 256.0f;  // no clean step of the run overflows f16
  ls.growth_interval = 3;
  for (bool graph : {true, false}) {
    for (PassSet passes : {PassSet::none(), PassSet::only(PassId::optimizer)}) {
      CAPTURE(graph);
      CAPTURE(passes.str());
      testing::BothExecutors run(gpu, small_mlp(), Precision::fp16, ls, graph, passes, /*adamw=*/true);
      for (uint64_t i = 0; i < 4; ++i) run.step(testing::feeds_of(run.plan, 90 + i * 17));
      run.check_same();
      CHECK(run.status_static().skipped_steps == 0);
      CHECK(run.status_static().scale == 512.0f);
      // An overflowing step inside the captured graph: no parameter, moment or step count moves.
      run.check_skipped_step(4);
      CHECK(run.status_static().scale == 256.0f);
      run.step(testing::feeds_of(run.plan, 5));
      for (float count : testing::adamw_step_counts(run.plan)) CHECK(count == 5.0f);
      run.check_same();
    }
  }
}
#endif

}  // namespace
}  // namespace tg
