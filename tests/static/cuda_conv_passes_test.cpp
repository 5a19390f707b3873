// The convolution passes on CUDA (static/passes/conv.cpp), against the same graph unfused on
// the same GPU, with cuDNN's convolutions (its fused conv-bias-activation call where cuDNN
// defines it, kernels/cuda/conv_cudnn.h) and with the direct kernels: the conv pass alone on
// the VGG network (a bias and a ReLU after every convolution), and every pass on ResNet-20
// (batch norms folded, residuals and ReLUs fused), in f32, bf16 and f16.
#include <doctest/doctest.h>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "tests/static/conv_passes_util.h"
#include "tests/static/static_test_util.h"

namespace tg::testing {
namespace {

std::shared_ptr<Backend> gpu(bool cudnn) {
  CudaBackendOptions o;
  o.conv_cudnn = cudnn;
  return std::shared_ptr<Backend>(make_cuda_backend(0, false, o));
}

int count_of(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& x : g.nodes) n += x.op == op;
  return n;
}

// Runs both plans of r on one batch: the folded prediction's excess over the tolerance
// (factor times t's, of the output's scale in 16-bit).
double folded_excess(FoldRun& r, const FoldTol& t, double factor) {
  const Feeds f = feeds_from(*r.plain.graph, make_values(*r.plain.graph, 30));
  r.plain.run(f);
  r.folded.run(f);
  const std::vector<float> want = r.plain.read(r.plain.prediction);
  const double s = t.precision == Precision::fp32 ? 1.0 : scale_of(want);
  return excess(r.folded.read(r.folded.prediction), want, factor * t.atol * s, factor * t.rtol);
}

}  // namespace

TEST_CASE("conv pass on CUDA: the VGG network's fused convolutions vs the unfused ops") {
  TG_REQUIRE_GPU();
  const VggConfig c = without_loss(vgg_config(2, 16, 8, {1, 2}, 16, 10));
  for (const bool cudnn : {true, false})
    for (const FoldTol& t : kFoldTols) {
      INFO("conv_cudnn ", cudnn, ", precision ", std::string(precision_name(t.precision)));
      FoldRun r = compile_pair(vgg_model(c), t.precision, PassSet::only(PassId::conv), 3, gpu(cudnn));
      CHECK(count_of(*r.folded.graph, OpKind::conv2d) == 0);
      CHECK(count_of(*r.folded.graph, OpKind::conv2d_bias_act) == count_of(*r.plain.graph, OpKind::conv2d));
      // The direct kernels in f32 compute the unfused ops' values in their order: bit for bit.
      if (!cudnn && t.precision == Precision::fp32) {
        const Feeds f = feeds_from(*r.plain.graph, make_values(*r.plain.graph, 31));
        r.plain.run(f);
        r.folded.run(f);
        CHECK(bitwise_diff(r.folded.read(r.folded.prediction), r.plain.read(r.plain.prediction)) == "");
      } else {
        CHECK(folded_excess(r, t, 1) <= 0);
      }
    }
}

TEST_CASE("bn_fold and conv on CUDA: ResNet-20 inference with every pass vs unfused") {
  TG_REQUIRE_GPU();
  const ResNetConfig c = without_loss(resnet_config(2, 16, 8, 3, 10));
  for (const bool cudnn : {true, false})
    for (const FoldTol& t : kFoldTols) {
      INFO("conv_cudnn ", cudnn, ", precision ", std::string(precision_name(t.precision)));
      FoldRun r = compile_pair(resnet_model(c), t.precision, PassSet::all(), 5, gpu(cudnn));
      CHECK(count_of(*r.folded.graph, OpKind::batch_norm_inference) == 0);
      CHECK(count_of(*r.folded.graph, OpKind::conv2d_bias_add_act) == 3 * c.blocks);
      CHECK(folded_excess(r, t, kNetworkFoldTolFactor) <= 0);
    }
}

}  // namespace tg::testing
#endif
