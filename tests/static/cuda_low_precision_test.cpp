// bf16 and f16 values on CUDA in both executors, on a model of the ops whose 16-bit
// kernels exist (kernels/cuda/dtype_support.cpp): static == dynamic bitwise, with graph
// replay and with plain launches, in inference and over training steps, and every
// parameter after them. The model: x in the low dtype; an f32 parameter cast down, added,
// gelu, times x, tanh, transposed and cast back to f32 for the loss.
#include <doctest/doctest.h>

#include <string>

#include "graph/builder.h"
#include "graph/models.h"
#include "tests/gpu_skip.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

ModelFn low_model(DType dt) {
  return [dt](Builder& b) {
    const Value x = b.input("x", Shape{16, 72}, dt);
    const Value target = b.input("target", Shape{72, 16});
    const Value w = b.parameter("w", Shape{16, 72});
    Value h = add(b, x, cast(b, w, dt));
    h = mul(b, gelu(b, h), x);
    h = b.apply(OpKind::tanh, {h});
    h = transpose(b, h, {1, 0, 2, 3});
    const Value prediction = cast(b, h, DType::F32);
    return ModelOutputs{prediction, mse_loss(b, prediction, target)};
  };
}

TEST_CASE("bf16 and f16 elementwise and layout ops on CUDA: static == dynamic bitwise, replay and plain launches") {
  TG_REQUIRE_GPU();
  for (DType dt : {DType::BF16, DType::F16}) {
    const std::string label = dtype_name(dt);
    CAPTURE(label);
    for (bool graph : {true, false}) testing::check_static_vs_dynamic(gpu, low_model(dt), label.c_str(), graph);
  }
}

}  // namespace
}  // namespace tg
#endif
