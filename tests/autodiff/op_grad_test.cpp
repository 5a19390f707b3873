// One finite-difference gradient check per differentiable op (matmul has its
// own file). Subcases cover the ranks and attributes each rule distinguishes.
#include <doctest/doctest.h>

#include "tests/autodiff/gradcheck.h"

namespace tg::testing {
namespace {

Value wrt_input(Builder& b, std::vector<Value>& wrt, const std::string& name, const Shape& s) {
  wrt.push_back(b.input(name, s));
  return wrt.back();
}

// The check for a unary op applied to one [shape] input.
void check_unary(const Shape& s, const std::function<Value(Builder&, Value)>& op, GradCheckOptions opt = {}) {
  check_op_gradients([&](Builder& b, std::vector<Value>& wrt) { return op(b, wrt_input(b, wrt, "x", s)); }, opt);
}

void check_binary(const Shape& sx, const Shape& sy, const std::function<Value(Builder&, Value, Value)>& op) {
  check_op_gradients([&](Builder& b, std::vector<Value>& wrt) {
    const Value x = wrt_input(b, wrt, "x", sx);
    return op(b, x, wrt_input(b, wrt, "y", sy));
  });
}

TEST_CASE("grad add") {
  check_binary({3, 4}, {3, 4}, [](Builder& b, Value x, Value y) { return add(b, x, y); });
}

TEST_CASE("grad conv2d_bias and global_avg_pool: the builder helpers over broadcast and reduce_mean") {
  ConvAttr a;
  a.pads = {1, 1, 1, 1};
  a.stride = {2, 1};
  check_op_gradients([&](Builder& b, std::vector<Value>& wrt) {
    const Value x = wrt_input(b, wrt, "x", {2, 3, 5, 4});
    const Value w = wrt_input(b, wrt, "w", {4, 3, 3, 3});
    const Value y = conv2d_bias(b, x, w, wrt_input(b, wrt, "bias", {4}), a);
    const Value pooled = global_avg_pool(b, y);
    CHECK(pooled.shape == Shape{2, 4, 1, 1});
    return pooled;
  });
}

TEST_CASE("grad sub") {
  check_binary({3, 4}, {3, 4}, [](Builder& b, Value x, Value y) { return sub(b, x, y); });
}

TEST_CASE("grad mul") {
  SUBCASE("two inputs") { check_binary({2, 3, 2}, {2, 3, 2}, [](Builder& b, Value x, Value y) { return mul(b, x, y); }); }
  SUBCASE("the same input twice: gradients accumulate") {
    check_unary({7}, [](Builder& b, Value x) { return mul(b, x, x); });
  }
}

TEST_CASE("grad scale") {
  check_unary({2, 3, 2}, [](Builder& b, Value x) { return scale(b, x, -1.5f); });
}

TEST_CASE("grad bias_add") {
  SUBCASE("rank 1") { check_binary({4}, {4}, [](Builder& b, Value x, Value y) { return bias_add(b, x, y); }); }
  SUBCASE("rank 2") { check_binary({3, 4}, {4}, [](Builder& b, Value x, Value y) { return bias_add(b, x, y); }); }
  SUBCASE("rank 3") { check_binary({2, 3, 4}, {4}, [](Builder& b, Value x, Value y) { return bias_add(b, x, y); }); }
}

TEST_CASE("grad relu") {
  GradCheckOptions opt;
  opt.away_from_zero = true;
  SUBCASE("out of place") { check_unary({4, 5}, [](Builder& b, Value x) { return relu(b, x); }, opt); }
  SUBCASE("in place") { check_unary({4, 5}, [](Builder& b, Value x) { return relu(b, x, true); }, opt); }
}

TEST_CASE("grad gelu") {
  GradCheckOptions opt;
  opt.eps = 2e-3f;  // gelu's curvature makes the O(eps^2) term matter at 1e-2
  check_unary({4, 5}, [](Builder& b, Value x) { return gelu(b, scale(b, x, 3.0f)); }, opt);
}

TEST_CASE("grad softmax") {
  SUBCASE("rank 2") { check_unary({3, 5}, [](Builder& b, Value x) { return softmax(b, scale(b, x, 2.0f)); }); }
  SUBCASE("rank 3") { check_unary({2, 2, 4}, [](Builder& b, Value x) { return softmax(b, x); }); }
}

TEST_CASE("grad layernorm") {
  for (const Shape& s : {Shape{3, 6}, Shape{2, 2, 5}}) {
    CAPTURE(s.str());
    check_op_gradients([&](Builder& b, std::vector<Value>& wrt) {
      const Value x = wrt_input(b, wrt, "x", s);
      const Value gamma = wrt_input(b, wrt, "gamma", Shape{s.last()});
      const Value beta = wrt_input(b, wrt, "beta", Shape{s.last()});
      return layernorm(b, x, gamma, beta);
    });
  }
}

void check_reduce(bool mean) {
  auto op = [mean](int axis) {
    return [mean, axis](Builder& b, Value x) { return mean ? reduce_mean(b, x, axis) : reduce_sum(b, x, axis); };
  };
  for (int axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    check_unary({2, 3, 4}, op(axis));
  }
  check_unary({5}, op(0));
  check_unary({3, 2}, op(-2));
}

TEST_CASE("grad reduce_sum") { check_reduce(false); }

TEST_CASE("grad reduce_mean") { check_reduce(true); }

TEST_CASE("grad broadcast") {
  for (int axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    check_unary({3, 4}, [axis](Builder& b, Value x) { return broadcast(b, x, axis, 3); });
  }
  check_unary({4}, [](Builder& b, Value x) { return broadcast(b, x, 1, 2); });
}

TEST_CASE("grad transpose") {
  check_unary({3, 4}, [](Builder& b, Value x) { return transpose(b, x, {1, 0, 2, 3}); });
  check_unary({2, 3, 4}, [](Builder& b, Value x) { return transpose(b, x, {2, 0, 1, 3}); });
  check_unary({2, 3, 2, 2}, [](Builder& b, Value x) { return transpose(b, x, {0, 2, 3, 1}); });
}

TEST_CASE("grad reshape") {
  check_unary({2, 6}, [](Builder& b, Value x) { return reshape(b, x, Shape{3, 4}); });
  check_unary({2, 3, 2}, [](Builder& b, Value x) { return reshape(b, x, Shape{-1, 2}); });
}

TEST_CASE("grad mse_loss") {
  check_binary({3, 4}, {3, 4}, [](Builder& b, Value p, Value t) { return mse_loss(b, p, t); });
}

TEST_CASE("grad padded_mse_loss") {
  // 7 of the 12 elements are real: the 5 padded ones get no gradient (checked too).
  check_op_gradients([](Builder& b, std::vector<Value>& wrt) {
    const Value p = wrt_input(b, wrt, "p", Shape{3, 4});
    return padded_mse_loss(b, p, wrt_input(b, wrt, "t", Shape{3, 4}), fill(b, Shape{1}, 7.0f));
  });
}

TEST_CASE("grad cross_entropy") {
  check_op_gradients([](Builder& b, std::vector<Value>& wrt) {
    const Value logits = scale(b, wrt_input(b, wrt, "logits", Shape{4, 5}), 2.0f);
    return cross_entropy(b, logits, b.input("labels", Shape{4}));
  });
}

TEST_CASE("grad copy") {
  check_unary({3, 4}, [](Builder& b, Value x) { return copy(b, x); });
}

}  // namespace
}  // namespace tg::testing
