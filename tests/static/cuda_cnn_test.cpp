// The convolutional models on CUDA: static (replayed as a CUDA Graph) == dynamic bit for
// bit, training and inference; the conv, pool and batch-norm kernels are deterministic, so
// nothing else is asked: the direct kernels sum each output element alone in a fixed order,
// and cuDNN's convolutions (the default where the build has it) run one deterministic
// algorithm per geometry, the same for both executors (kernels/cuda/conv_cudnn.h).
#include <doctest/doctest.h>

#include <utility>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

std::shared_ptr<Backend> gpu_direct_convs() {
  CudaBackendOptions o;
  o.conv_cudnn = false;
  return std::shared_ptr<Backend>(make_cuda_backend(0, false, o));
}

TEST_CASE("static == dynamic bitwise on CUDA: the CIFAR ResNet and the VGG network, graph replay") {
  TG_REQUIRE_GPU();
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  testing::check_static_vs_dynamic(gpu, testing::resnet_model(r), "resnet", true, r.classes);
  const VggConfig v = testing::vgg_config(4, 16, 8, {1, 1, 2}, 32, 10);
  testing::check_static_vs_dynamic(gpu, testing::vgg_model(v), "vgg", true, v.classes);
}

TEST_CASE("static == dynamic bitwise on CUDA: ResNet-18, ResNet-50 and VGG-16 at 64 x 64, graph replay") {
  TG_REQUIRE_GPU();
  // The 224 x 224 networks' layers, at an image the test runs in seconds: the 7x7 stem, the
  // padded max pool, bottleneck blocks and projections, VGG's Linear layers.
  using testing::resnet_imagenet_model;
  for (const auto& [what, model] :
       {std::pair<const char*, ModelFn>{"resnet18", resnet_imagenet_model(at_size(resnet18_config(), 4, 64))},
        {"resnet50", resnet_imagenet_model(at_size(resnet50_config(), 4, 64))},
        {"vgg16", testing::vgg_model(at_size(vgg16_config(), 4, 64))}}) {
    CAPTURE(what);
    testing::check_static_vs_dynamic(gpu, model, what, true, 1000);
  }
}

// The rows pass fuses each batch norm's three gradients into batch_norm_grad, whose kernel
// writes what the three wrote: the static plan with it still has the dynamic executor's bits.
TEST_CASE("static with the fused batch norm gradients == dynamic bitwise on CUDA: CIFAR ResNet and ResNet-50") {
  TG_REQUIRE_GPU();
  const PassSet rows = PassSet::only(PassId::rows);
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    testing::check_static_vs_dynamic(gpu, testing::resnet_model(r), "resnet", true, r.classes, p, {}, rows);
  }
  testing::check_static_vs_dynamic(gpu, testing::resnet_imagenet_model(at_size(resnet50_config(), 4, 64)), "resnet50",
                                   true, 1000, Precision::fp32, {}, rows);
}

TEST_CASE("static == dynamic bitwise on CUDA with the direct conv kernels (conv_cudnn=0): the CIFAR ResNet") {
  TG_REQUIRE_GPU();
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  testing::check_static_vs_dynamic(gpu_direct_convs, testing::resnet_model(r), "resnet", true, r.classes);
}

// conv_benchmark on: the static executor times each shape when it compiles (Backend::prepare),
// and the dynamic one, on the same backend, finds the choice in the backend's cache: the same
// algorithms, so the same bits. (Two backends would each time, and may choose differently.)
TEST_CASE("static == dynamic bitwise on CUDA with benchmarked cuDNN algorithms on one backend: the CIFAR ResNet") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnn) return;
  CudaBackendOptions o;
  o.conv_benchmark = true;
  const auto shared = std::shared_ptr<CudaBackend>(new CudaBackend(0, false, o));
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  testing::check_static_vs_dynamic([&] { return std::static_pointer_cast<Backend>(shared); },
                                   testing::resnet_model(r), "resnet", true, r.classes);
  const auto chosen = shared->conv_choices();
  REQUIRE(!chosen.empty());
  for (const auto& c : chosen) {
    CAPTURE(c.algo);
    CHECK(c.benchmarked);
    CHECK(c.deterministic);  // conv_deterministic stays on by default
  }
}

// conv_workspace_mb=1024: the timed search reaches algorithms that need more than the
// backend's 32 MiB. The static plan gives each convolution its own workspace, planned like a
// value live at its step (static/planner.h: PlanOptions::node_workspace); the dynamic executor
// runs such a call in the cuDNN state's own buffer. Same algorithms, so the same bits.
TEST_CASE("static == dynamic bitwise on CUDA with a 1 GiB convolution workspace: ResNet-50 at 64 x 64") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnn) return;
  CudaBackendOptions o;
  o.conv_benchmark = true;
  o.conv_workspace_mb = 1024;
  const auto shared = std::shared_ptr<CudaBackend>(new CudaBackend(0, false, o));
  testing::check_static_vs_dynamic([&] { return std::static_pointer_cast<Backend>(shared); },
                                   testing::resnet_imagenet_model(at_size(resnet50_config(), 8, 64)), "resnet50",
                                   true, 1000);
  int past = 0;
  for (const auto& c : shared->conv_choices()) {
    CHECK(c.workspace <= size_t{1024} << 20);
    if (c.workspace > CudaBackend::kCublasWorkspaceBytes) ++past;
  }
  MESSAGE("convolutions choosing more than the backend's 32 MiB workspace: " << past);
}

}  // namespace
}  // namespace tg
#endif
