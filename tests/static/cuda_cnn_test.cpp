// The convolutional models on CUDA: static (replayed as a CUDA Graph) == dynamic bit for
// bit, training and inference; the conv, pool and batch-norm kernels are deterministic, so
// nothing else is asked: the direct kernels sum each output element alone in a fixed order,
// and cuDNN's convolutions (the default where the build has it) run one deterministic
// algorithm per geometry, the same for both executors (kernels/cuda/conv_cudnn.h).
#include <doctest/doctest.h>

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

TEST_CASE("static == dynamic bitwise on CUDA with the direct conv kernels (conv_cudnn=0): the CIFAR ResNet") {
  TG_REQUIRE_GPU();
  const ResNetConfig r = testing::resnet_config(4, 16, 8, 1, 10);
  testing::check_static_vs_dynamic(gpu_direct_convs, testing::resnet_model(r), "resnet", true, r.classes);
}

}  // namespace
}  // namespace tg
#endif
