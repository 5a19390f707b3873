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
