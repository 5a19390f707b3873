// batch_norm, batch_norm_inference and batch_norm_stats_update against their definitions: per
// channel, over N and the dims after C.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "graph/float_formats.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// batch_norm_stats_update on views (stats, x), in place.
void stats_update(kernels::TensorView stats, kernels::TensorView x, const Attrs& at) {
  kernels::OpCall c;
  c.op = OpKind::batch_norm_stats_update;
  c.attrs = &at;
  c.num_inputs = 2;
  c.in[0] = stats;
  c.in[1] = x;
  kernels::run_cpu(c);
}

}  // namespace

TEST_CASE("batch_norm: every channel of the output has mean beta and standard deviation gamma") {
  const Shape s{3, 2, 4, 5};
  const Tensor x = random_tensor(s, 11, -2.0f, 5.0f);
  const Tensor y = run_op(OpKind::batch_norm, {x, tensor({2}, {1.5f, 0.5f}), tensor({2}, {0.25f, -1.0f})});
  const float gamma[2] = {1.5f, 0.5f}, beta[2] = {0.25f, -1.0f};
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0, sq = 0;
    int64_t n = 0;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 20; ++i, ++n) sum += y.data[static_cast<size_t>((b * 2 + c) * 20 + i)];
    const double mean = sum / static_cast<double>(n);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 20; ++i) {
        const double d = y.data[static_cast<size_t>((b * 2 + c) * 20 + i)] - mean;
        sq += d * d;
      }
    CHECK(mean == doctest::Approx(beta[c]).epsilon(1e-5));
    // The variance of the normalized values is var / (var + eps), a hair under 1.
    CHECK(std::sqrt(sq / static_cast<double>(n)) == doctest::Approx(gamma[c]).epsilon(1e-4));
  }
}

TEST_CASE("batch_norm_inference: hand-computed with the running statistics") {
  Attrs at;
  at.eps = 0.0625f;
  // Channel 0: mean 1, var 4 - 0.0625 so that sqrt(var + eps) = 2; channel 1: mean -1, var 1 - 0.0625.
  const Tensor stats = tensor({2, 2}, {1.0f, -1.0f, 4.0f - 0.0625f, 1.0f - 0.0625f});
  const Tensor x = tensor({1, 2, 1, 2}, {3, 5, 0, 1});
  const Tensor y = run_op(OpKind::batch_norm_inference, {x, tensor({2}, {1, 2}), tensor({2}, {0, 10}), stats}, at);
  CHECK(y.data == std::vector<float>{1, 2, 12, 14});
}

TEST_CASE("batch_norm_stats_update: hand-computed, PyTorch's rule with the unbiased variance") {
  Attrs at;
  at.momentum = 0.25f;
  // Channel 0: 1, 3, 5, 7 (mean 4, squared deviations 20, unbiased variance 20/3); channel 1: all 2.
  std::vector<Tensor> ins = {tensor({2, 2}, {0.0f, 1.0f, 1.0f, 3.0f}), tensor({2, 2, 2}, {1, 3, 2, 2, 5, 7, 2, 2})};
  stats_update({ins[0].data.data(), ins[0].shape}, {ins[1].data.data(), ins[1].shape}, at);
  check_close(ins[0].data, std::vector<double>{0.75 * 0.0 + 0.25 * 4.0, 0.75 * 1.0 + 0.25 * 2.0, 0.75 * 1.0 + 0.25 * 20.0 / 3.0, 0.75 * 3.0},
              1e-7, 1e-6, "stats");
  CHECK(ins[1].data == std::vector<float>{1, 3, 2, 2, 5, 7, 2, 2});  // x is only read
}

TEST_CASE("batch_norm_stats_update on 16-bit x updates its f32 statistics in place, as on x widened") {
  Attrs at;
  at.momentum = 0.25f;
  const Shape s{3, 2, 4, 5};
  for (DType dt : {DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(dt));
    Tensor x = random_tensor(s, 23, -2.0f, 5.0f);
    for (float& v : x.data) v = round_to_dtype(v, dt);
    std::vector<uint16_t> low(x.data.size());
    store_as_dtype(x.data.data(), x.data.size(), dt, low.data());
    const std::vector<float> start = {0.5f, -1.0f, 2.0f, 3.0f};
    std::vector<float> want = start, stats = start;
    stats_update({want.data(), Shape{2, 2}}, {x.data.data(), s}, at);
    stats_update({stats.data(), Shape{2, 2}}, {reinterpret_cast<float*>(low.data()), s, dt}, at);
    CHECK(stats != start);
    CHECK(bitwise_equal(stats, want));
  }
}

TEST_CASE("batch_norm_grad: dx, dgamma and dbeta with the bits of the three gradient ops, NCHW and NHWC") {
  auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (bool channels_last : {false, true}) {
    CAPTURE(channels_last);
    const Shape s = channels_last ? Shape{3, 4, 5, 2} : Shape{3, 2, 4, 5};
    const Tensor dy = random_tensor(s, 21, -1.0f, 1.0f), x = random_tensor(s, 22, -2.0f, 5.0f);
    const Tensor gamma = tensor({2}, {1.5f, -0.5f});
    Attrs at;
    at.channels_last = channels_last;
    at.eps = 0.01f;
    std::vector<Tensor> ins = {dy, x, gamma};
    kernels::OpCall c;
    std::vector<kernels::TensorView> more;
    set_inputs(c, ins, more);
    c.op = OpKind::batch_norm_grad;
    c.attrs = &at;
    std::vector<float> dx(static_cast<size_t>(s.numel()), NAN), params(4, NAN);
    c.out = {dx.data(), s};
    c.out2 = {params.data(), Shape{2, 2}};
    kernels::run_cpu(c);
    CHECK(same_bits(dx, run_op(OpKind::batch_norm_grad_x, {dy, x, gamma}, at).data));
    std::vector<float> want = run_op(OpKind::batch_norm_grad_gamma, {dy, x}, at).data;
    const std::vector<float> dbeta = run_op(OpKind::batch_norm_grad_beta, {dy}, at).data;
    want.insert(want.end(), dbeta.begin(), dbeta.end());
    CHECK(same_bits(params, want));
  }
  CHECK(shape_rule_message(OpKind::batch_norm_grad, {{2, 3, 4}, {2, 3, 4}, {4}}, {}, "'g'").find("gamma is [4]") !=
        std::string::npos);
}

TEST_CASE("the batch_norm shape rules name the input and the fix") {
  CHECK(shape_rule_message(OpKind::batch_norm_stats_update, {{3}, {2, 3, 4}}, {}, "'up'")
            .find("stats is [3]; it must be [2, 3]") != std::string::npos);
  CHECK(shape_rule_message(OpKind::batch_norm_stats_update, {{2, 3}, {1, 3}}, {}, "'up'")
            .find("the running variance needs at least 2") != std::string::npos);
  Attrs big;
  big.momentum = 1.5f;
  CHECK(shape_rule_message(OpKind::batch_norm_stats_update, {{2, 3}, {2, 3}}, big, "'up'")
            .find("momentum = 1.5 must be in [0, 1]") != std::string::npos);
  CHECK(shape_rule_message(OpKind::batch_norm, {{2, 3, 4, 4}, {4}, {3}}, {}, "'bn'") ==
        "batch_norm 'bn': gamma is [4] but x [2,3,4,4] has 3 channels (dim 1); it must be [3]");
  CHECK(shape_rule_message(OpKind::batch_norm_inference, {{2, 3}, {3}, {3}, {3}}, {}, "'bn'")
            .find("stats is [3]; it must be [2, 3]: the running mean, then the running variance") != std::string::npos);
  CHECK(shape_rule_message(OpKind::batch_norm, {{5}, {5}, {5}}, {}, "'bn'").find("must be [N, C, ...]") !=
        std::string::npos);
}
