// The imported PyTorch models on the GPU (label gpu; skipped without a device): both
// executors give the same bits, within the stated tolerance of onnxruntime's CPU
// outputs (cuBLAS in f32, no TF32), inference and training steps alike.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>

#include "dynamic/trainer.h"
#include "graph/builder.h"
#include "kernels/cuda/cuda_backend.h"
#include "static/compiler.h"
#include "tests/gpu_skip.h"
#include "tests/onnx/onnx_fixture.h"

namespace tg::testing {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("onnx fixtures on the GPU: static and dynamic agree bitwise and with onnxruntime") {
  TG_REQUIRE_GPU();
  auto be = std::shared_ptr<Backend>(make_cuda_backend(0));
  for (const std::string name : {"mlp", "transformer", "transformer_ts14"}) {
    CAPTURE(name);
    const OnnxFixture f = load_fixture(name);
    const GraphModel gm = graph_model(f.graph);
    const Predictions pr = predict_both(gm, be, f.x);
    CHECK(same_bits(pr.static_y, pr.dynamic_y));
    const Agreement a = agreement(pr.static_y, f.y);
    MESSAGE(fmt::format("{} on the GPU vs onnxruntime: max |diff| {:.3g}", name, a.max_abs));
    CHECK(a.bad == 0);

    // Training steps with an mse loss appended: the same losses, bit for bit.
    const ModelFn train = [gm](Builder& b) {
      ModelOutputs out = gm.fn(b);
      out.loss = mse_loss(b, out.prediction, b.input("target", out.prediction.shape));
      return out;
    };
    CompileOptions ct;
    ct.backend = be;
    CompiledPlan ps = compile(train, ct);
    DynamicTrainer dt(train, *be, "caching", DynamicOptions{});
    const Feeds feeds{{"x", f.x}, {"target", f.y}};
    for (int step = 0; step < 3; ++step) {
      const float a_loss = ps.step(feeds), b_loss = dt.step(feeds);
      CHECK(std::memcmp(&a_loss, &b_loss, sizeof a_loss) == 0);
    }
  }
}

}  // namespace
}  // namespace tg::testing
