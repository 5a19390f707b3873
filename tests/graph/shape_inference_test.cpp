// The shape rule of every op: the valid case and each error it reports.
#include <doctest/doctest.h>

#include <string>

#include "graph/attrs.h"
#include "graph/errors.h"
#include "graph/shape_inference.h"

namespace {

using tg::Attrs;
using tg::OpKind;
using tg::Shape;

Shape infer(OpKind op, std::vector<Shape> in, Attrs at = {}) { return tg::infer_shape(op, in, at, "n1"); }

// The message of the GraphError that infer throws, or "" when it does not throw.
std::string error_of(OpKind op, std::vector<Shape> in, Attrs at = {}) {
  try {
    infer(op, in, at);
  } catch (const tg::GraphError& e) {
    return e.what();
  }
  return "";
}

#define CHECK_ERROR(msg, fragment) CHECK_MESSAGE((msg).find(fragment) != std::string::npos, (msg))

}  // namespace

TEST_CASE("matmul: plain, transposed and batched shapes") {
  CHECK(infer(OpKind::matmul, {{32, 512}, {512, 256}}) == Shape{32, 256});
  Attrs t;
  t.trans_a = true;
  t.trans_b = true;
  CHECK(infer(OpKind::matmul, {{512, 32}, {256, 512}}, t) == Shape{32, 256});
  CHECK(infer(OpKind::matmul, {{8, 4, 16}, {8, 16, 5}}) == Shape{8, 4, 5});
  CHECK(infer(OpKind::matmul, {{8, 4, 16}, {16, 5}}) == Shape{8, 4, 5});
}

TEST_CASE("matmul: errors name the shapes and the inner dims") {
  const std::string e = error_of(OpKind::matmul, {{32, 512}, {256, 10}});
  CHECK_ERROR(e, "matmul n1: cannot multiply [32,512] by [256,10]: inner dims 512 != 256");
  CHECK_ERROR(error_of(OpKind::matmul, {{32}, {32, 4}}), "A must have at least 2 dims");
  CHECK_ERROR(error_of(OpKind::matmul, {{4, 4}, {2, 4, 4, 4}}), "B must be a [k,n] matrix");
  CHECK_ERROR(error_of(OpKind::matmul, {{4, 4}, {2, 4, 4}}), "needs a batched A");
  CHECK_ERROR(error_of(OpKind::matmul, {{3, 4, 4}, {2, 4, 4}}), "batch dims differ");
}

TEST_CASE("matmul_heads: head views and packed operands, and each error") {
  auto heads = [](int64_t count, bool a, bool b, bool out, bool tb = false) {
    Attrs t;
    t.heads = tg::HeadView{count, a, b, out};
    t.trans_b = tb;
    return t;
  };
  // q k^T over 2 heads of 4 columns: 2 x 2 = 4 matrices [3, 3].
  CHECK(infer(OpKind::matmul_heads, {{2, 3, 8}, {2, 3, 8}}, heads(2, true, true, false, true)) == Shape{4, 3, 3});
  // p v, the context merged: [2, 3, 2 x 4].
  CHECK(infer(OpKind::matmul_heads, {{4, 3, 3}, {2, 3, 8}}, heads(2, false, true, true)) == Shape{2, 3, 8});
  CHECK(infer(OpKind::matmul_heads, {{4, 3, 5}, {4, 5, 4}}, heads(2, false, false, false)) == Shape{4, 3, 4});
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{2, 3, 8}, {2, 3, 8}}, heads(0, true, true, false, true)),
              "attrs.heads.count is not set");
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{2, 3, 9}, {2, 3, 8}}, heads(2, true, true, false, true)),
              "last dim is not a multiple of 2");
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{3, 3, 3}, {2, 3, 8}}, heads(2, false, true, true)),
              "hold 3 and 4 matrices");
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{4, 3, 5}, {2, 3, 8}}, heads(2, false, true, true)), "inner dims differ");
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{3, 3, 5}, {3, 5, 4}}, heads(2, false, false, false)),
              "do not split into 2 heads");
  CHECK_ERROR(error_of(OpKind::matmul_heads, {{4, 3}, {4, 3, 3}}, heads(2, false, false, false)), "must be rank 3");
}

TEST_CASE("elementwise binary ops need equal shapes") {
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::relu_grad, OpKind::gelu_grad, OpKind::softmax_grad}) {
    CHECK(infer(op, {{4, 5}, {4, 5}}) == Shape{4, 5});
    CHECK_ERROR(error_of(op, {{4, 5}, {4, 6}}), "shapes [4,5] and [4,6] differ");
  }
}

TEST_CASE("unary ops keep the shape") {
  for (OpKind op : {OpKind::scale, OpKind::relu, OpKind::gelu, OpKind::copy}) CHECK(infer(op, {{2, 3, 4}}) == Shape{2, 3, 4});
}

TEST_CASE("softmax: last axis only") {
  CHECK(infer(OpKind::softmax, {{4, 10}}) == Shape{4, 10});
  Attrs at;
  at.axis = 0;
  CHECK_ERROR(error_of(OpKind::softmax, {{4, 10}}, at), "only the last axis");
  at.axis = 5;
  CHECK_ERROR(error_of(OpKind::softmax, {{4, 10}}, at), "axis 5 is out of range");
}

TEST_CASE("bias_add: bias must match the last dim") {
  CHECK(infer(OpKind::bias_add, {{32, 10}, {10}}) == Shape{32, 10});
  CHECK_ERROR(error_of(OpKind::bias_add, {{32, 10}, {11}}), "the bias must be [10]");
  CHECK_ERROR(error_of(OpKind::bias_add, {{32, 10}, {1, 10}}), "does not match the last dim");
}

TEST_CASE("layernorm and its gradients") {
  CHECK(infer(OpKind::layernorm, {{2, 8, 16}, {16}, {16}}) == Shape{2, 8, 16});
  CHECK_ERROR(error_of(OpKind::layernorm, {{2, 16}, {8}, {8}}), "gamma must be [16]");
  CHECK_ERROR(error_of(OpKind::layernorm, {{2, 16}, {16}, {8}}), "beta [8] differs from gamma");
  Attrs at;
  at.eps = 0.0f;
  CHECK_ERROR(error_of(OpKind::layernorm, {{2, 16}, {16}, {16}}, at), "eps = 0 must be > 0");
  CHECK(infer(OpKind::layernorm_grad_x, {{2, 16}, {2, 16}, {16}}) == Shape{2, 16});
  CHECK_ERROR(error_of(OpKind::layernorm_grad_x, {{2, 16}, {3, 16}, {16}}), "differ");
  CHECK(infer(OpKind::layernorm_grad_gamma, {{2, 16}, {2, 16}}) == Shape{16});
}

TEST_CASE("reduce_sum and reduce_mean remove the axis") {
  Attrs at;
  at.axis = 1;
  CHECK(infer(OpKind::reduce_sum, {{2, 3, 4}}, at) == Shape{2, 4});
  at.axis = -1;
  CHECK(infer(OpKind::reduce_mean, {{2, 3, 4}}, at) == Shape{2, 3});
  CHECK(infer(OpKind::reduce_sum, {{7}}, at) == Shape{1});
  at.axis = 3;
  CHECK_ERROR(error_of(OpKind::reduce_sum, {{2, 3, 4}}, at), "axis 3 is out of range for a rank-3 input");
}

TEST_CASE("broadcast inserts an axis") {
  Attrs at;
  at.axis = 0;
  at.size = 16;
  CHECK(infer(OpKind::broadcast, {{5}}, at) == Shape{16, 5});
  at.axis = -1;
  CHECK(infer(OpKind::broadcast, {{5}}, at) == Shape{5, 16});
  at.size = 0;
  CHECK_ERROR(error_of(OpKind::broadcast, {{5}}, at), "size = 0 must be >= 1");
  at.size = 2;
  CHECK(infer(OpKind::broadcast, {{1, 2, 3, 4, 5}}, at) == Shape{1, 2, 3, 4, 5, 2});
  CHECK_ERROR(error_of(OpKind::broadcast, {{1, 2, 3, 4, 5, 6}}, at), "at most 6 are supported");
}

TEST_CASE("transpose: perm must be a permutation") {
  Attrs at;
  at.perm = {{0, 2, 1, 3}};
  CHECK(infer(OpKind::transpose, {{2, 3, 4, 5}}, at) == Shape{2, 4, 3, 5});
  at.perm = {{1, 0, 2, 3}};
  CHECK(infer(OpKind::transpose, {{3, 7}}, at) == Shape{7, 3});
  at.perm = {{0, 0, 2, 3}};
  const std::string e = error_of(OpKind::transpose, {{3, 7}}, at);
  CHECK_ERROR(e, "perm [0,0] is not a permutation of 0..1");
  CHECK_ERROR(e, "entry 1 = 0");
}

TEST_CASE("reshape: counts must match, one -1 is inferred") {
  Attrs at;
  at.shape = Shape{16, 1024};
  CHECK(infer(OpKind::reshape, {{32, 512}}, at) == Shape{16, 1024});
  at.shape = Shape{-1, 64};
  CHECK(infer(OpKind::reshape, {{32, 512}}, at) == Shape{256, 64});
  at.shape = Shape{100};
  CHECK_ERROR(error_of(OpKind::reshape, {{32, 512}}, at), "element counts must match");
  at.shape = Shape{-1, 7};
  CHECK_ERROR(error_of(OpKind::reshape, {{32, 512}}, at), "is not a multiple of 7");
  at.shape = Shape{};
  CHECK_ERROR(error_of(OpKind::reshape, {{32, 512}}, at), "target shape is empty");
  at.shape = Shape{0, 4};
  CHECK_ERROR(error_of(OpKind::reshape, {{32, 512}}, at), "dims must be >= 1");
}

TEST_CASE("reshape: a huge target does not overflow (fixed bug)") {
  Attrs at;
  at.shape = Shape{int64_t{1} << 40, int64_t{1} << 40, 16};
  CHECK_ERROR(error_of(OpKind::reshape, {{32, 512}}, at), "cannot reshape [32,512]");
}

TEST_CASE("losses") {
  CHECK(infer(OpKind::mse_loss, {{4, 2}, {4, 2}}) == Shape{1});
  CHECK_ERROR(error_of(OpKind::mse_loss, {{4, 2}, {2, 4}}), "differ");
  CHECK(infer(OpKind::mse_loss_grad, {{4, 2}, {4, 2}, {1}}) == Shape{4, 2});
  CHECK(infer(OpKind::padded_mse_loss, {{4, 2}, {4, 2}, {1}}) == Shape{1});
  CHECK(infer(OpKind::padded_mse_loss_grad, {{4, 2}, {4, 2}, {1}, {1}}) == Shape{4, 2});
  CHECK_ERROR(error_of(OpKind::padded_mse_loss, {{4, 2}, {4, 2}, {2}}), "count [2] must be [1]");
  CHECK_ERROR(error_of(OpKind::padded_mse_loss_grad, {{4, 2}, {4, 2}, {1}, {3}}), "dloss [3] must be [1]");
  CHECK_ERROR(error_of(OpKind::padded_mse_loss, {{4, 2}, {2, 4}, {1}}), "differ");
  CHECK_ERROR(error_of(OpKind::mse_loss_grad, {{4, 2}, {4, 2}, {2}}), "dloss [2] must be [1]");
  CHECK(infer(OpKind::cross_entropy, {{16, 5}, {16}}) == Shape{1});
  CHECK_ERROR(error_of(OpKind::cross_entropy, {{16, 5}, {15}}), "labels [15] must be [16]");
  CHECK_ERROR(error_of(OpKind::cross_entropy, {{2, 16, 5}, {16}}), "must be [n, classes]");
  CHECK(infer(OpKind::cross_entropy_grad, {{16, 5}, {16}, {1}}) == Shape{16, 5});
  CHECK_ERROR(error_of(OpKind::cross_entropy_grad, {{16, 5}, {16}, {3}}), "dloss [3] must be [1]");
}

TEST_CASE("fill needs a valid shape") {
  Attrs at;
  at.shape = Shape{3, 4};
  CHECK(infer(OpKind::fill, {}, at) == Shape{3, 4});
  at.shape = Shape{};
  CHECK_ERROR(error_of(OpKind::fill, {}, at), "fill n1: shape [] is empty");
  at.shape = Shape{-2};
  CHECK_ERROR(error_of(OpKind::fill, {}, at), "dim < 1");
}

TEST_CASE("sgd and sgd_momentum check shapes and hyperparameters") {
  CHECK(infer(OpKind::sgd, {{4}, {4}}).rank == 0);
  CHECK(infer(OpKind::sgd_momentum, {{4}, {4}, {4}}).rank == 0);
  CHECK_ERROR(error_of(OpKind::sgd_momentum, {{4}, {4}, {5}}), "differ");
  Attrs at;
  at.lr = -1.0f;
  CHECK_ERROR(error_of(OpKind::sgd, {{4}, {4}}, at), "lr = -1 must be > 0");
  at.lr = 0.1f;
  at.momentum = 1.0f;
  CHECK_ERROR(error_of(OpKind::sgd_momentum, {{4}, {4}, {4}}, at), "momentum = 1 must be in [0, 1)");
}

TEST_CASE("loss scaling: one-element scales and flags, update_scale's scaler and factors") {
  CHECK(infer(OpKind::sgd, {{4}, {4}, {1}}).rank == 0);
  CHECK(infer(OpKind::sgd_momentum_multi, {{4}, {4}, {4}, {2}, {2}, {2}, {1}}).rank == 0);
  CHECK_ERROR(error_of(OpKind::sgd_momentum, {{4}, {4}, {4}, {2}}), "found-inf flag (the last input) [2] must be [1]");
  CHECK_ERROR(error_of(OpKind::sgd_multi, {{4}, {4}, {3}}), "found-inf flag (the last input) [3] must be [1]");
  CHECK(infer(OpKind::unscale, {{2, 3}, {1}}) == Shape{2, 3});
  CHECK_ERROR(error_of(OpKind::unscale, {{2, 3}, {2}}), "scale [2] must be [1]");
  CHECK(infer(OpKind::found_inf, {{2, 3}, {1}}) == Shape{1});
  CHECK_ERROR(error_of(OpKind::found_inf, {{2, 3}, {2, 3}}), "found [2,3] must be [1]");
  CHECK(infer(OpKind::update_scale, {{3}, {1}}).rank == 0);
  CHECK_ERROR(error_of(OpKind::update_scale, {{2}, {1}}), "scaler [2] must be [3]");
  Attrs at;
  at.growth_factor = 0.5f;
  CHECK_ERROR(error_of(OpKind::update_scale, {{3}, {1}}, at), "growth_factor = 0.5 must be >= 1");
  at.growth_factor = 2.0f;
  at.backoff_factor = 0.0f;
  CHECK_ERROR(error_of(OpKind::update_scale, {{3}, {1}}, at), "backoff_factor = 0 in (0, 1]");
  at.backoff_factor = 0.5f;
  at.growth_interval = 0;
  CHECK_ERROR(error_of(OpKind::update_scale, {{3}, {1}}, at), "growth_interval = 0 >= 1");
}

TEST_CASE("every op: arity, dims and overflow are checked first") {
  for (int i = 0; i < tg::kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    const int arity = tg::op_num_inputs(op);
    // One too many, or none for a variadic op of groups of one (which takes any count >= 1);
    // an update that takes a found-inf flag takes one more, so one input, too few, there;
    // an attention op takes its key lengths as one more, so two more there.
    const bool lengths = (tg::op_traits(op).flags & tg::op_table::kKeyLengths) != 0;
    const int wrong = tg::op_can_be_guarded(op)                  ? 1
                      : tg::op_is_variadic(op) && arity == 1     ? 0
                      : lengths                                  ? arity + 2
                                                                 : arity + 1;
    std::vector<Shape> too_many(static_cast<size_t>(wrong), Shape{4});
    CHECK_ERROR(error_of(op, too_many), "takes");
    if (arity == 0) continue;
    std::vector<Shape> neg(static_cast<size_t>(arity), Shape{4, -1});
    CHECK_ERROR(error_of(op, neg), "every dim must be >= 1");
    const int64_t big = int64_t{1} << 31;
    std::vector<Shape> huge(static_cast<size_t>(arity), Shape{big, big, big});
    CHECK_ERROR(error_of(op, huge), "overflows int64");
  }
}

TEST_CASE("an output whose element count overflows is rejected (fixed bug)") {
  const int64_t big = int64_t{1} << 31;
  CHECK_ERROR(error_of(OpKind::matmul, {{big, 2}, {2, big}}), "output shape");
  Attrs at;
  at.axis = 0;
  at.size = int64_t{1} << 40;
  CHECK_ERROR(error_of(OpKind::broadcast, {{int64_t{1} << 30}}, at), "overflows int64");
}
