// The channels_last pass on CUDA: a CIFAR ResNet and a VGG network trained with NHWC
// activations against the NCHW step, and the NHWC step against the CPU's NHWC step. cuDNN
// may choose another algorithm for an NHWC key than for the NCHW one, and the CUDA
// reductions sum in their own order, so the comparisons carry the passes' loss tolerance
// (tg-train's loss_curve: 1e-4 relative in f32, one bf16 rounding more in bf16). With the
// direct conv kernels (conv_cudnn=0) every conv, pool and batch-norm element is summed in
// one order in either layout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "static/passes/pass.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> gpu(bool cudnn, bool frontend = false) {
  CudaBackendOptions o;
  o.conv_cudnn = cudnn && kBuiltWithCudnn;
  o.conv_frontend = frontend;
  return std::shared_ptr<Backend>(make_cuda_backend(0, false, o));
}

// The largest relative difference of the losses of `steps` training steps of `model`,
// compiled on `a` with passes `pa` and on `b` with `pb`, from the same parameters and batches.
double worst_loss_diff(const ModelFn& model, Precision precision, std::shared_ptr<Backend> a, PassSet pa,
                       std::shared_ptr<Backend> b, PassSet pb, int steps, int64_t classes) {
  CompileOptions oa;
  oa.backend = std::move(a);
  oa.precision = precision;
  oa.passes = pa;
  CompileOptions ob = oa;
  ob.backend = std::move(b);
  ob.passes = pb;
  CompiledPlan pa_plan = compile(model, oa);
  CompiledPlan pb_plan = compile(model, ob);
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    const Feeds f = testing::random_feeds(testing::input_shapes_of(*pa_plan.graph), 300 + static_cast<uint64_t>(s),
                                          classes);
    const double la = pa_plan.step(f), lb = pb_plan.step(f);
    REQUIRE(std::isfinite(la));
    REQUIRE(std::isfinite(lb));
    worst = std::max(worst, std::fabs(lb - la) / std::max(std::fabs(la), 1e-30));
  }
  return worst;
}

double loss_tolerance(Precision p) { return p == Precision::bf16 ? 1e-4 + 0x1p-8 : 1e-4; }

const PassSet kNhwc = PassSet::only(PassId::channels_last);

TEST_CASE("channels_last on CUDA: ResNet and VGG train NHWC as NCHW, f32 and bf16, cuDNN and direct kernels") {
  TG_REQUIRE_GPU();
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  const VggConfig v = testing::vgg_config(4, 16, 8, {1, 1, 2}, 32, 10);
  for (bool cudnn : {true, false})
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      const std::string label = std::string(cudnn ? "cuDNN " : "direct ") + precision_name(p);
      CAPTURE(label);
      CHECK(worst_loss_diff(testing::resnet_model(r), p, gpu(cudnn), PassSet::none(), gpu(cudnn), kNhwc, 3, r.classes) <=
            loss_tolerance(p));
      CHECK(worst_loss_diff(testing::resnet_model(r), p, gpu(cudnn), PassSet::all(), gpu(cudnn),
                            PassSet::all().with(PassId::channels_last), 3, r.classes) <= loss_tolerance(p));
      CHECK(worst_loss_diff(testing::vgg_model(v), p, gpu(cudnn), PassSet::none(), gpu(cudnn), kNhwc, 3, v.classes) <=
            loss_tolerance(p));
    }
}

// cuDNN's graph API (conv_frontend=1) in both layouts: the same steps as the legacy API's
// within the loss tolerance, NCHW and NHWC (its filter the KRSC copy, as the legacy path's).
TEST_CASE("channels_last on CUDA: convolutions through cuDNN's graph API train as through the legacy API") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnn || !kBuiltWithCudnnFrontend) {
    std::printf("TG_SKIP: this build has no cuDNN frontend\n");
    return;
  }
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    CHECK(worst_loss_diff(testing::resnet_model(r), p, gpu(true), PassSet::none(), gpu(true, true), PassSet::none(), 3,
                          r.classes) <= loss_tolerance(p));
    CHECK(worst_loss_diff(testing::resnet_model(r), p, gpu(true), PassSet::none(), gpu(true, true), kNhwc, 3,
                          r.classes) <= loss_tolerance(p));
  }
}

TEST_CASE("channels_last on CUDA: the NHWC step against the CPU's NHWC step") {
  TG_REQUIRE_GPU();
  const ResNetConfig r = testing::resnet_config(2, 8, 4, 1, 5);
  const auto cpu = std::shared_ptr<Backend>(make_cpu_backend());
  for (bool cudnn : {true, false}) {
    CAPTURE(cudnn);
    CHECK(worst_loss_diff(testing::resnet_model(r), Precision::fp32, cpu, kNhwc, gpu(cudnn), kNhwc, 3, r.classes) <=
          loss_tolerance(Precision::fp32));
  }
}

TEST_CASE("channels_last on CUDA: the NHWC convolutions run on cuDNN, and their keys are NHWC") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnn) return;
  const auto be = std::make_shared<CudaBackend>(0, false, CudaBackendOptions{});
  CompileOptions o;
  o.backend = be;
  o.passes = kNhwc;
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  CompiledPlan p = compile(testing::resnet_model(r), o);
  const auto chosen = be->conv_choices();
  REQUIRE(!chosen.empty());
  int on_cudnn = 0;
  for (const auto& c : chosen) {
    CAPTURE(c.algo);
    CHECK(c.key.g.nhwc);
    on_cudnn += c.algo != "direct";
  }
  // cuDNN offers an algorithm for NHWC activations with a KCRS filter (conv_cudnn.h).
  CHECK(on_cudnn == static_cast<int>(chosen.size()));
}

}  // namespace
}  // namespace tg
#endif
