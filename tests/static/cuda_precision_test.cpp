// The precision policy (graph/precision.h) on the CUDA backend: bf16 and fp16 autocast run
// both executors bit for bit alike (graph replay and plain launches), learn, stay near the
// CPU's curve of the same precision, and every graph pass tracks the unfused graph.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "graph/precision.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

double worst_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / std::fabs(want[i]));
  return worst;
}

}  // namespace

TEST_CASE("precision on CUDA: static == dynamic bitwise in bf16 and fp16 (replay and plain): mlp, transformer") {
  TG_REQUIRE_GPU();
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const MlpConfig m = testing::mlp_config(8, 24, 32, 4, 6);
    MlpConfig ce = m;
    ce.loss = MlpConfig::Loss::cross_entropy;
    for (bool graph : {true, false}) {
      testing::check_static_vs_dynamic(gpu, testing::mlp_model(m), "mlp", graph, 0, p);
      testing::check_static_vs_dynamic(gpu, testing::mlp_model(ce), "mlp ce", graph, ce.out, p);
      testing::check_static_vs_dynamic(gpu, testing::transformer_model(testing::transformer_config(2, 16, 32, 2)),
                                       "transformer", graph, 0, p);
    }
  }
}

TEST_CASE("precision on CUDA: bf16 and fp16 learn, near the CPU's curve of the same precision") {
  TG_REQUIRE_GPU();
  const ModelFn model = testing::mlp_model(testing::mlp_config(16, 24, 32, 3, 6));
  auto cpu = std::shared_ptr<Backend>(make_cpu_backend());
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const std::vector<float> ref = testing::train_losses(model, p, PassSet::none(), 40, cpu);
    const std::vector<float> got = testing::train_losses(model, p, PassSet::none(), 40, gpu());
    CHECK(got.back() < 0.5f * got.front());
    // The same ops and roundings; the GEMMs sum in another order (cuBLASLt's tiles against
    // OpenBLAS) before the one rounding to the low type, so a product can land one unit of
    // the low type apart: bf16 keeps 8 significant bits, f16 11.
    const double worst = worst_relative(got, ref);
    MESSAGE(label, ": largest relative loss difference to the CPU over 40 steps ", worst);
    CHECK(worst < (p == Precision::bf16 ? 0.02 : 0.002));
  }
}

TEST_CASE("precision on CUDA: every graph pass on a bf16 and an fp16 autocast graph tracks the unfused graph") {
  TG_REQUIRE_GPU();
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    for (const ModelFn& model : {testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6)),
                                 testing::transformer_model(testing::transformer_config(2, 16, 32, 2))}) {
      const std::vector<float> plain = testing::train_losses(model, p, PassSet::none(), 6, gpu());
      const std::vector<float> fused = testing::train_losses(model, p, PassSet::all(), 6, gpu());
      for (size_t i = 0; i < plain.size(); ++i) {
        CAPTURE(i);
        // A fused chain rounds once where the unfused ops round after each: half a unit of
        // the low type per op, a few of them per layer.
        CHECK(std::fabs(fused[i] - plain[i]) <= 0.02 * std::fabs(plain[i]) + 1e-3);
      }
    }
  }
}

}  // namespace tg
