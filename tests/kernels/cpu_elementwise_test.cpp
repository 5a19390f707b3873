// Elementwise ops, bias_add and the activations.
#include <cmath>

#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

TEST_CASE("add, sub, mul: hand-computed") {
  const Tensor a = tensor({2, 2}, {1.0f, -2.0f, 3.5f, 0.25f});
  const Tensor b = tensor({2, 2}, {4.0f, 0.5f, -1.5f, 8.0f});
  CHECK(run_op(OpKind::add, {a, b}).data == std::vector<float>{5.0f, -1.5f, 2.0f, 8.25f});
  CHECK(run_op(OpKind::sub, {a, b}).data == std::vector<float>{-3.0f, -2.5f, 5.0f, -7.75f});
  CHECK(run_op(OpKind::mul, {a, b}).data == std::vector<float>{4.0f, -1.0f, -5.25f, 2.0f});
}

TEST_CASE("scale, fill, copy: hand-computed") {
  Attrs at;
  at.alpha = -2.0f;
  CHECK(run_op(OpKind::scale, {tensor({3}, {1.0f, -0.5f, 3.0f})}, at).data == std::vector<float>{-2.0f, 1.0f, -6.0f});
  Attrs f;
  f.shape = Shape{2, 3};
  f.value = 1.5f;
  const Tensor filled = run_op(OpKind::fill, {}, f);
  CHECK(filled.shape == Shape{2, 3});
  CHECK(filled.data == std::vector<float>(6, 1.5f));
  const Tensor x = random_tensor({3, 5}, 11);
  CHECK(bitwise_equal(run_op(OpKind::copy, {x}).data, x.data));
}

TEST_CASE("elementwise ops are alias-safe: out aliasing in0 or in1 equals out-of-place") {
  const Tensor a = random_tensor({7, 13}, 1);
  const Tensor b = random_tensor({7, 13}, 2);
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::relu_grad, OpKind::gelu_grad,
                    OpKind::softmax_grad}) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    const std::vector<float> ref = run_op(op, {a, b}).data;
    for (int which = 0; which < 2; ++which) {
      std::vector<float> x = a.data, y = b.data;
      kernels::OpCall c;
      Attrs at;
      c.op = op;
      c.attrs = &at;
      c.num_inputs = 2;
      c.in[0] = {x.data(), a.shape};
      c.in[1] = {y.data(), b.shape};
      c.out = {which == 0 ? x.data() : y.data(), a.shape};
      kernels::run_cpu(c);
      CHECK(bitwise_equal(which == 0 ? x : y, ref));
    }
  }
}

TEST_CASE("bias_add: hand-computed, rank 3") {
  const Tensor x = tensor({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = tensor({3}, {10, 20, 30});
  const Tensor y = run_op(OpKind::bias_add, {x, b});
  CHECK(y.shape == Shape{2, 1, 3});
  CHECK(y.data == std::vector<float>{11, 22, 33, 14, 25, 36});
}

TEST_CASE("relu: hand-computed, including -0, 0 and NaN") {
  const Tensor x = tensor({6}, {-1.0f, 0.0f, -0.0f, 2.5f, 1e-30f, NAN});
  const Tensor y = run_op(OpKind::relu, {x});
  CHECK(y.data == std::vector<float>{0.0f, 0.0f, 0.0f, 2.5f, 1e-30f, 0.0f});
  CHECK_FALSE(std::signbit(y.data[2]));
}

TEST_CASE("in-place relu equals out-of-place relu bit for bit") {
  const Tensor x = random_tensor({33, 17}, 5);
  const std::vector<float> ref = run_op(OpKind::relu, {x}).data;
  Attrs at;
  at.in_place = true;
  CHECK(bitwise_equal(run_in_place(OpKind::relu, x, at), ref));
}

TEST_CASE("relu_grad: dy where y > 0, else 0") {
  const Tensor dy = tensor({4}, {1.5f, -2.0f, 3.0f, 4.0f});
  const Tensor y = tensor({4}, {0.5f, 0.0f, 2.0f, -0.0f});
  CHECK(run_op(OpKind::relu_grad, {dy, y}).data == std::vector<float>{1.5f, 0.0f, 3.0f, 0.0f});
}

TEST_CASE("gelu: tanh approximation at known points") {
  const Tensor y = run_op(OpKind::gelu, {tensor({5}, {0.0f, 1.0f, -1.0f, 2.0f, 0.5f})});
  // 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))), evaluated in double.
  check_close(y.data, std::vector<double>{0.0, 0.8411919906082768, -0.15880800939172324, 1.954597694087775,
                                          0.34571400982514394},
              0.0, 1e-7, "gelu");
  // Far tails: identity and zero.
  const Tensor t = run_op(OpKind::gelu, {tensor({2}, {20.0f, -20.0f})});
  CHECK(t.data[0] == 20.0f);
  CHECK(std::fabs(t.data[1]) < 1e-30f);
}

TEST_CASE("gelu_grad matches a central difference of gelu") {
  const Tensor x = random_tensor({257}, 9, -4.0f, 4.0f);
  const Tensor dy = random_tensor({257}, 10);
  const Tensor dx = run_op(OpKind::gelu_grad, {dy, x});
  std::vector<double> want(x.data.size());
  auto g = [](double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
  for (size_t i = 0; i < want.size(); ++i) {
    const double h = 1e-5;
    want[i] = dy.data[i] * (g(x.data[i] + h) - g(x.data[i] - h)) / (2 * h);
  }
  check_close(dx.data, want, 1e-6, 1e-5, "gelu_grad");
}

TEST_CASE("tanh, sigmoid, exp, log, gelu_erf: known points") {
  auto at = [](OpKind op, std::vector<float> x) {
    const auto n = static_cast<int64_t>(x.size());
    return run_op(op, {tensor({n}, x)}).data;
  };
  check_close(at(OpKind::tanh, {0.0f, 0.5f, -1.0f}), std::vector<double>{0.0, 0.46211715726000974, -0.7615941559557649},
              0.0, 1e-7, "tanh");
  check_close(at(OpKind::sigmoid, {0.0f, 2.0f, -2.0f}), std::vector<double>{0.5, 0.8807970779778823, 0.11920292202211755},
              0.0, 1e-7, "sigmoid");
  check_close(at(OpKind::exp, {0.0f, 1.0f, -2.0f}), std::vector<double>{1.0, 2.718281828459045, 0.1353352832366127}, 0.0,
              1e-7, "exp");
  check_close(at(OpKind::log, {1.0f, 2.0f, 0.5f}), std::vector<double>{0.0, 0.6931471805599453, -0.6931471805599453},
              0.0, 1e-7, "log");
  // 0.5 x (1 + erf(x / sqrt 2)): x times the normal CDF, not the tanh approximation.
  check_close(at(OpKind::gelu_erf, {0.0f, 1.0f, -1.0f, 2.0f, 0.5f}),
              std::vector<double>{0.0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0.34573123063700656},
              0.0, 1e-7, "gelu_erf");
  // The domain's edges and the tails: log(0) = -inf, log(-1) NaN, sigmoid saturates.
  const std::vector<float> edges = at(OpKind::log, {0.0f, -1.0f});
  CHECK(std::isinf(edges[0]));
  CHECK(edges[0] < 0);
  CHECK(std::isnan(edges[1]));
  const std::vector<float> tails = at(OpKind::sigmoid, {100.0f, -100.0f});
  CHECK(tails[0] == 1.0f);
  CHECK((tails[1] > 0.0f && tails[1] < 1e-43f));  // exp(-100), a subnormal
  CHECK(at(OpKind::gelu_erf, {20.0f})[0] == 20.0f);
}

TEST_CASE("tanh_grad, sigmoid_grad, log_grad, gelu_erf_grad match a central difference of the forward") {
  struct Case {
    OpKind grad;
    double (*f)(double);
    bool reads_output;  // the backward op takes the forward's output y, not x
    float lo, hi;
  };
  const Case cases[] = {
      {OpKind::tanh_grad, [](double v) { return std::tanh(v); }, true, -4.0f, 4.0f},
      {OpKind::sigmoid_grad, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, true, -6.0f, 6.0f},
      {OpKind::log_grad, [](double v) { return std::log(v); }, false, 0.1f, 4.0f},
      {OpKind::gelu_erf_grad, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }, false, -4.0f, 4.0f},
  };
  for (const Case& c : cases) {
    CAPTURE(op_name(c.grad));
    const Tensor x = random_tensor({257}, 11, c.lo, c.hi);
    const Tensor dy = random_tensor({257}, 12);
    Tensor second = x;
    if (c.reads_output)
      for (float& v : second.data) v = static_cast<float>(c.f(v));
    const Tensor dx = run_op(c.grad, {dy, second});
    std::vector<double> want(x.data.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const double h = 1e-5;
      want[i] = dy.data[i] * (c.f(x.data[i] + h) - c.f(x.data[i] - h)) / (2 * h);
    }
    // Through y rounded to float, tanh_grad and sigmoid_grad see a relative error of ~1e-7 in y.
    check_close(dx.data, want, 1e-6, 1e-5, op_name(c.grad));
  }
}
