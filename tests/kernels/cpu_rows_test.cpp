// Row-wise ops over the last axis: softmax and layernorm with their gradients.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "graph/float_formats.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

TEST_CASE("softmax: hand-computed row") {
  // exp(log k) = k, so the row [0, log 2, log 5] gives [1, 2, 5] / 8.
  const Tensor x = tensor({1, 3}, {0.0f, std::log(2.0f), std::log(5.0f)});
  check_close(run_op(OpKind::softmax, {x}).data, std::vector<double>{0.125, 0.25, 0.625}, 1e-7, 0.0, "softmax");
}

TEST_CASE("softmax: rows sum to 1, large logits do not overflow, shift invariant") {
  const Tensor x = random_tensor({9, 31}, 3, -5.0f, 5.0f);
  const Tensor y = run_op(OpKind::softmax, {x});
  for (int r = 0; r < 9; ++r) {
    double s = 0.0;
    for (int j = 0; j < 31; ++j) s += y.data[static_cast<size_t>(r * 31 + j)];
    CHECK(std::fabs(s - 1.0) < 1e-6);
  }
  Tensor big = x;
  for (float& v : big.data) v += 1000.0f;
  const Tensor yb = run_op(OpKind::softmax, {big});
  check_close(yb.data, y.data, 1e-4, 1e-3, "softmax(x + 1000)");  // x + 1000 rounds x in float
  const Tensor two = run_op(OpKind::softmax, {tensor({2}, {1000.0f, 1000.0f})});
  CHECK(two.data == std::vector<float>{0.5f, 0.5f});
}

TEST_CASE("softmax in place equals out of place") {
  const Tensor x = random_tensor({5, 8}, 4);
  const std::vector<float> ref = run_op(OpKind::softmax, {x}).data;
  CHECK(bitwise_equal(run_in_place(OpKind::softmax, x), ref));
}

TEST_CASE("softmax_grad: hand-computed") {
  // y = [0.25, 0.75], dy = [1, 0]: sum(dy*y) = 0.25, dx = y*(dy - 0.25).
  const Tensor dx = run_op(OpKind::softmax_grad, {tensor({2}, {1.0f, 0.0f}), tensor({2}, {0.25f, 0.75f})});
  CHECK(dx.data == std::vector<float>{0.1875f, -0.1875f});
}

TEST_CASE("softmax_grad matches finite differences of softmax") {
  const Tensor x = random_tensor({3, 6}, 21, -2.0f, 2.0f);
  const Tensor dy = random_tensor({3, 6}, 22);
  const Tensor y = run_op(OpKind::softmax, {x});
  const Tensor dx = run_op(OpKind::softmax_grad, {dy, y});
  check_close(dx.data, numeric_grad(OpKind::softmax, {x}, 0, dy.data, {}, 1e-2f), 2e-4, 2e-3, "softmax_grad");
}

TEST_CASE("layernorm: hand-computed row") {
  // x = [1, 2, 3, 4]: mean 2.5, biased var 1.25.
  Attrs at;
  at.eps = 1e-5f;
  const Tensor y = run_op(OpKind::layernorm, {tensor({1, 4}, {1, 2, 3, 4}), tensor({4}, {1, 1, 2, 1}),
                                              tensor({4}, {0, 0, 0, 10})},
                          at);
  const double rstd = 1.0 / std::sqrt(1.25 + static_cast<double>(1e-5f));
  check_close(y.data, std::vector<double>{-1.5 * rstd, -0.5 * rstd, 2 * 0.5 * rstd, 1.5 * rstd + 10}, 1e-6, 1e-6,
              "layernorm");
}

TEST_CASE("layernorm: each row has mean 0 and variance 1 with gamma 1, beta 0, even at a large offset") {
  const int rows = 6, cols = 129;
  Tensor x = random_tensor({rows, cols}, 31, -3.0f, 3.0f);
  for (float& v : x.data) v += 1000.0f;  // two-pass statistics keep the variance
  Attrs at;
  at.eps = 1e-12f;
  const Tensor y = run_op(OpKind::layernorm, {x, tensor({cols}, std::vector<float>(cols, 1.0f)),
                                              tensor({cols}, std::vector<float>(cols, 0.0f))},
                          at);
  for (int r = 0; r < rows; ++r) {
    double m = 0.0, v = 0.0;
    for (int j = 0; j < cols; ++j) m += y.data[static_cast<size_t>(r * cols + j)];
    m /= cols;
    for (int j = 0; j < cols; ++j) v += std::pow(y.data[static_cast<size_t>(r * cols + j)] - m, 2);
    v /= cols;
    CHECK(std::fabs(m) < 1e-6);
    CHECK(std::fabs(v - 1.0) < 1e-5);
  }
}

TEST_CASE("layernorm_grad_x matches finite differences of layernorm") {
  const Tensor x = random_tensor({4, 10}, 41, -2.0f, 2.0f);
  const Tensor gamma = random_tensor({10}, 42, 0.5f, 1.5f);
  const Tensor beta = random_tensor({10}, 43);
  const Tensor dy = random_tensor({4, 10}, 44);
  Attrs at;
  const Tensor dx = run_op(OpKind::layernorm_grad_x, {dy, x, gamma}, at);
  check_close(dx.data, numeric_grad(OpKind::layernorm, {x, gamma, beta}, 0, dy.data, at, 1e-2f), 5e-4, 5e-3,
              "layernorm_grad_x");
  // Each row of dx sums to 0: layernorm is invariant to a shift of its row.
  for (int r = 0; r < 4; ++r) {
    double s = 0.0;
    for (int j = 0; j < 10; ++j) s += dx.data[static_cast<size_t>(r * 10 + j)];
    CHECK(std::fabs(s) < 1e-5);
  }
}

TEST_CASE("layernorm_grad_gamma: sum over rows of dy times xhat, and finite differences") {
  // Two rows [1, 3] and [0, 4]: xhat = [-1, 1] each (eps tiny). dy = [[1, 2], [3, 5]]
  // gives dgamma = [-1 - 3, 2 + 5] = [-4, 7].
  Attrs at;
  at.eps = 1e-12f;
  const Tensor dg = run_op(OpKind::layernorm_grad_gamma, {tensor({2, 2}, {1, 2, 3, 5}), tensor({2, 2}, {1, 3, 0, 4})}, at);
  check_close(dg.data, std::vector<double>{-4.0, 7.0}, 1e-6, 1e-6, "dgamma hand");

  Attrs d;
  const Tensor x = random_tensor({2, 3, 7}, 51, -2.0f, 2.0f);
  const Tensor gamma = random_tensor({7}, 52, 0.5f, 1.5f);
  const Tensor beta = random_tensor({7}, 53);
  const Tensor dy = random_tensor({2, 3, 7}, 54);
  const Tensor dgamma = run_op(OpKind::layernorm_grad_gamma, {dy, x}, d);
  check_close(dgamma.data, numeric_grad(OpKind::layernorm, {x, gamma, beta}, 1, dy.data, d, 1e-2f), 5e-4, 5e-3,
              "layernorm_grad_gamma");
}

TEST_CASE("layernorm_grad_gamma: wide rows past the accumulator block") {
  const int rows = 3, cols = 4096 + 5;
  const Tensor x = random_tensor({rows, cols}, 61);
  const Tensor dy = random_tensor({rows, cols}, 62);
  Attrs at;
  const Tensor dg = run_op(OpKind::layernorm_grad_gamma, {dy, x}, at);
  std::vector<double> want(cols, 0.0);
  for (int r = 0; r < rows; ++r) {
    double m = 0.0, v = 0.0;
    for (int j = 0; j < cols; ++j) m += x.data[static_cast<size_t>(r * cols + j)];
    m /= cols;
    for (int j = 0; j < cols; ++j) v += std::pow(x.data[static_cast<size_t>(r * cols + j)] - m, 2);
    const double rstd = 1.0 / std::sqrt(v / cols + static_cast<double>(at.eps));
    for (int j = 0; j < cols; ++j)
      want[static_cast<size_t>(j)] += dy.data[static_cast<size_t>(r * cols + j)] * (x.data[static_cast<size_t>(r * cols + j)] - m) * rstd;
  }
  check_close(dg.data, want, 1e-6, 1e-6, "dgamma wide");
}

namespace {
// dgamma and dbeta in double from the definitions, row statistics two-pass in double.
void reference_grad_params(const Tensor& dy, const Tensor& x, int64_t rows, int64_t cols, float eps,
                           std::vector<double>& dgamma, std::vector<double>& dbeta) {
  dgamma.assign(static_cast<size_t>(cols), 0.0);
  dbeta.assign(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data.data() + r * cols;
    const float* gr = dy.data.data() + r * cols;
    double m = 0.0, v = 0.0;
    for (int64_t j = 0; j < cols; ++j) m += xr[j];
    m /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) v += (xr[j] - m) * (xr[j] - m);
    const double rstd = 1.0 / std::sqrt(v / static_cast<double>(cols) + static_cast<double>(eps));
    for (int64_t j = 0; j < cols; ++j) {
      dgamma[static_cast<size_t>(j)] += static_cast<double>(gr[j]) * (xr[j] - m) * rstd;
      dbeta[static_cast<size_t>(j)] += gr[j];
    }
  }
}
}  // namespace

TEST_CASE("layernorm_grad_gamma_beta: a double-precision reference, and layernorm_grad_gamma's bits") {
  const float eps = 1e-5f;
  // Widths on both sides of the 2048-column accumulator block.
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {64, 100}, {17, 2051},
                                                                         {5, 4101}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    const Tensor x = random_tensor({rows, cols}, 71, -2.0f, 2.0f);
    const Tensor dy = random_tensor({rows, cols}, 72);
    std::vector<float> dg(static_cast<size_t>(cols), NAN), db(static_cast<size_t>(cols), NAN);
    kernels::cpu_layernorm_grad_gamma_beta(dy.data.data(), x.data.data(), dg.data(), db.data(), rows, cols, eps);
    std::vector<double> want_g, want_b;
    reference_grad_params(dy, x, rows, cols, eps, want_g, want_b);
    check_close(dg, want_g, 1e-6, 1e-6, "dgamma");
    check_close(db, want_b, 1e-6, 1e-6, "dbeta");
    // A null dbeta is layernorm_grad_gamma, and both give the dgamma above bit for bit.
    std::vector<float> only(static_cast<size_t>(cols), NAN), op(static_cast<size_t>(cols), NAN);
    kernels::cpu_layernorm_grad_gamma_beta(dy.data.data(), x.data.data(), only.data(), nullptr, rows, cols, eps);
    kernels::cpu_layernorm_grad_gamma(dy.data.data(), x.data.data(), op.data(), rows, cols, eps);
    CHECK(bitwise_equal(only, dg));
    CHECK(bitwise_equal(op, dg));
  }
}

TEST_CASE("layernorm_grad_gamma_beta: zero rows appended leave dgamma and dbeta bit for bit") {
  // The bucket-padding contract (docs/architecture.md): the padded batch's zero rows are
  // the tail of the summed axis and may not change the rounding of what came before.
  const int64_t rows = 37, cols = 2051;
  const Tensor x = random_tensor({rows, cols}, 81);
  const Tensor dy = random_tensor({rows, cols}, 82);
  std::vector<float> dg(static_cast<size_t>(cols)), db(static_cast<size_t>(cols));
  kernels::cpu_layernorm_grad_gamma_beta(dy.data.data(), x.data.data(), dg.data(), db.data(), rows, cols, 1e-5f);
  for (int64_t k : {1, 63}) {
    CAPTURE(k);
    std::vector<float> xp = x.data, dyp = dy.data, pg(static_cast<size_t>(cols)), pb(static_cast<size_t>(cols));
    xp.resize(static_cast<size_t>((rows + k) * cols), 0.0f);
    dyp.resize(xp.size(), 0.0f);
    kernels::cpu_layernorm_grad_gamma_beta(dyp.data(), xp.data(), pg.data(), pb.data(), rows + k, cols, 1e-5f);
    CHECK(bitwise_equal(pg, dg));
    CHECK(bitwise_equal(pb, db));
  }
}

// graph/op.h kTypeLowGrad: an autocast step's layernorm gradients read dy in bf16 or f16
// beside f32 x, gamma and acc, widened exactly: the bits of the f32 op on dy cast to f32.
TEST_CASE("layernorm gradients of a bf16 or f16 dy beside f32 inputs: the f32 op's bits on the widened dy") {
  for (DType dt : {DType::BF16, DType::F16})
    for (OpKind op : {OpKind::layernorm_grad_x, OpKind::layernorm_grad_x_acc, OpKind::layernorm_grad_gamma,
                      OpKind::layernorm_grad_params}) {
      const std::string label = std::string(op_name(op)) + " dy in " + dtype_name(dt);
      CAPTURE(label);
      const int64_t rows = 7, cols = 37;
      const Shape xs{rows, cols}, vs{cols};
      std::vector<float> dy = random_tensor(xs, 5).data, x = random_tensor(xs, 6).data;
      std::vector<float> gamma = random_tensor(vs, 7).data, acc = random_tensor(xs, 8).data;
      for (float& v : dy) v = round_to_dtype(v, dt);  // the 16-bit values, exact in f32
      std::vector<uint16_t> dy16(dy.size());
      store_as_dtype(dy.data(), dy.size(), dt, dy16.data());
      const bool params = op == OpKind::layernorm_grad_gamma || op == OpKind::layernorm_grad_params;
      const Shape os = params ? vs : xs;
      Attrs at;
      at.eps = 1e-5f;
      auto run = [&](kernels::TensorView dy_view) {
        std::vector<float> out(static_cast<size_t>(os.numel()), -1.0f), out2(static_cast<size_t>(cols), -1.0f);
        kernels::OpCall c;
        c.op = op;
        c.attrs = &at;
        c.num_inputs = op_num_inputs(op);
        c.in[0] = dy_view;
        c.in[1] = {x.data(), xs, DType::F32};
        if (!params) c.in[2] = {gamma.data(), vs, DType::F32};
        if (op == OpKind::layernorm_grad_x_acc) c.in[3] = {acc.data(), xs, DType::F32};
        c.out = {out.data(), os, DType::F32};
        if (op == OpKind::layernorm_grad_params) c.out2 = {out2.data(), vs, DType::F32};
        kernels::run_cpu(c);
        if (op == OpKind::layernorm_grad_params) out.insert(out.end(), out2.begin(), out2.end());
        return out;
      };
      const std::vector<float> low = run(view(dy16, xs, dt));
      const std::vector<float> wide = run({dy.data(), xs, DType::F32});
      CHECK(std::memcmp(low.data(), wide.data(), low.size() * sizeof(float)) == 0);
      CHECK(std::any_of(low.begin(), low.end(), [](float v) { return v != -1.0f && v != 0.0f; }));
    }
}
