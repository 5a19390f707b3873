// static == dynamic bit for bit on CUDA with the fused attention through cuDNN's flash
// attention (CudaBackendOptions::attention_cudnn=1, kernels/cuda/attention_cudnn.h): a small
// causal transformer block trained in bf16 and fp16, its heads of 64 dims and its sequence
// not a multiple of cuDNN's tiles. The static plan runs cuDNN in its arena's workspace inside
// a captured CUDA Graph (and in plain launches), the dynamic executor in the backend's own;
// both build the same cuDNN graph with the same heuristic, and the backward is cuDNN's
// deterministic one, so the bits agree. Each backend's engine list proves cuDNN ran. The
// static plan compiles with no graph pass, as the dynamic executor runs: the attention pass's
// attention_fwd_lse runs cuDNN's forward with statistics where attention runs its inference
// forward, whose output cuDNN does not promise bit for bit; tests/static/cuda_passes_test.cpp
// checks the pass against the unfused plan.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

TEST_CASE("static == dynamic bitwise on CUDA: transformer_block with attention through cuDNN, bf16 and fp16") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnnFrontend) {
    std::printf("TG_SKIP: this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)\n");
    return;
  }
  std::vector<std::shared_ptr<Backend>> made;
  auto dnn = [&] {
    CudaBackendOptions o;
    o.attention_cudnn = true;
    made.push_back(std::shared_ptr<Backend>(make_cuda_backend(0, false, o)));
    return made.back();
  };
  TransformerConfig c = testing::transformer_config(2, 40, 128, 2);  // heads of 64 dims
  c.fused_attention = true;
  c.causal = true;
  for (const Precision p : {Precision::bf16, Precision::fp16})
    for (const bool graph : {true, false}) {
      CAPTURE(precision_name(p));
      CAPTURE(graph);
      made.clear();
      testing::check_static_vs_dynamic(dnn, testing::transformer_model(c), "attention via cuDNN", graph, 0, p);
      REQUIRE(made.size() == 2);
      for (const auto& be : made) {
        const auto chosen = static_cast<const CudaBackend&>(*be).attention_choices();
        CHECK(chosen.size() >= 3);  // attention, attention_lse and attention_grad at least
        for (const auto& ch : chosen) {
          INFO(op_name(ch.key.op), " ", dtype_name(ch.key.dtype), ": engine ", ch.engine, "; why own: ", ch.why);
          CHECK(ch.cudnn);
        }
      }
    }
}

}  // namespace
}  // namespace tg
#endif
