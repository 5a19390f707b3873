// Reductions, broadcast, transpose, reshape, concat and slice.
#include <algorithm>
#include <array>

#include <fmt/ranges.h>

#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {
Attrs axis_attrs(int axis, int64_t size = 0) {
  Attrs at;
  at.axis = axis;
  at.size = size;
  return at;
}
}  // namespace

TEST_CASE("reduce_sum and reduce_mean: hand-computed on shape (2, 3)") {
  const Tensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(run_op(OpKind::reduce_sum, {x}, axis_attrs(0)).data == std::vector<float>{5, 7, 9});
  CHECK(run_op(OpKind::reduce_sum, {x}, axis_attrs(1)).data == std::vector<float>{6, 15});
  CHECK(run_op(OpKind::reduce_sum, {x}, axis_attrs(-1)).data == std::vector<float>{6, 15});
  CHECK(run_op(OpKind::reduce_mean, {x}, axis_attrs(0)).data == std::vector<float>{2.5f, 3.5f, 4.5f});
  CHECK(run_op(OpKind::reduce_mean, {x}, axis_attrs(1)).data == std::vector<float>{2, 5});
  const Tensor v = run_op(OpKind::reduce_sum, {tensor({4}, {1, 2, 3, 4})}, axis_attrs(0));
  CHECK(v.shape == Shape{1});
  CHECK(v.data == std::vector<float>{10});
}

TEST_CASE("reduce_sum over every axis of a rank-4 tensor equals a naive double sum") {
  const Shape s{3, 4, 5, 1030};  // inner > the 1024-wide accumulator block
  const Tensor x = random_tensor(s, 71);
  for (int axis = 0; axis < 4; ++axis) {
    CAPTURE(axis);
    const Tensor y = run_op(OpKind::reduce_sum, {x}, axis_attrs(axis));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= s[d];
    for (int d = axis + 1; d < 4; ++d) inner *= s[d];
    std::vector<double> want(static_cast<size_t>(outer * inner), 0.0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < s[axis]; ++a)
        for (int64_t i = 0; i < inner; ++i)
          want[static_cast<size_t>(o * inner + i)] += x.data[static_cast<size_t>((o * s[axis] + a) * inner + i)];
    check_close(y.data, want, 1e-6, 1e-7, "reduce_sum");
  }
}

TEST_CASE("broadcast: hand-computed at each axis of shape (2, 2)") {
  const Tensor x = tensor({2, 2}, {1, 2, 3, 4});
  Tensor y = run_op(OpKind::broadcast, {x}, axis_attrs(0, 2));
  CHECK(y.shape == Shape{2, 2, 2});
  CHECK(y.data == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
  y = run_op(OpKind::broadcast, {x}, axis_attrs(1, 3));
  CHECK(y.shape == Shape{2, 3, 2});
  CHECK(y.data == std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  y = run_op(OpKind::broadcast, {x}, axis_attrs(2, 2));
  CHECK(y.shape == Shape{2, 2, 2});
  CHECK(y.data == std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4});
  y = run_op(OpKind::broadcast, {x}, axis_attrs(-1, 2));
  CHECK(y.data == std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4});
}

TEST_CASE("broadcast then reduce_mean over the same axis is the identity") {
  const Tensor x = random_tensor({3, 5, 7}, 72);
  for (int axis = 0; axis <= 3; ++axis) {
    CAPTURE(axis);
    const Tensor b = run_op(OpKind::broadcast, {x}, axis_attrs(axis, 4));
    const Tensor back = run_op(OpKind::reduce_mean, {b}, axis_attrs(axis));
    CHECK(back.shape == x.shape);
    check_close(back.data, x.data, 1e-7, 1e-7, "mean(broadcast(x))");
  }
}

TEST_CASE("transpose: hand-computed 2-D and 3-D") {
  Attrs at;
  at.perm = {1, 0, 2, 3};
  const Tensor t = run_op(OpKind::transpose, {tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, at);
  CHECK(t.shape == Shape{3, 2});
  CHECK(t.data == std::vector<float>{1, 4, 2, 5, 3, 6});
  at.perm = {2, 0, 1, 3};  // [2,1,3] -> [3,2,1]
  const Tensor u = run_op(OpKind::transpose, {tensor({2, 1, 3}, {1, 2, 3, 4, 5, 6})}, at);
  CHECK(u.shape == Shape{3, 2, 1});
  CHECK(u.data == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("transpose: all 24 rank-4 permutations match naive indexing, and the inverse undoes each") {
  const Shape s{2, 3, 4, 5};
  const Tensor x = random_tensor(s, 73);
  std::array<int, 4> p{{0, 1, 2, 3}};
  int count = 0;
  do {
    CAPTURE(fmt::format("{}", fmt::join(p, ",")));
    Attrs at;
    at.perm = perm_of({p[0], p[1], p[2], p[3]});
    const Tensor y = run_op(OpKind::transpose, {x}, at);
    int64_t idx[4];
    bool ok = true;
    for (idx[0] = 0; idx[0] < s[0]; ++idx[0])
      for (idx[1] = 0; idx[1] < s[1]; ++idx[1])
        for (idx[2] = 0; idx[2] < s[2]; ++idx[2])
          for (idx[3] = 0; idx[3] < s[3]; ++idx[3]) {
            int64_t o = 0;  // output index: out dim d runs over input dim p[d]
            for (int d = 0; d < 4; ++d) o = o * y.shape[d] + idx[p[static_cast<size_t>(d)]];
            const int64_t i = ((idx[0] * s[1] + idx[1]) * s[2] + idx[2]) * s[3] + idx[3];
            ok = ok && y.data[static_cast<size_t>(o)] == x.data[static_cast<size_t>(i)];
          }
    CHECK(ok);
    Attrs inv;
    for (int d = 0; d < 4; ++d) inv.perm[static_cast<size_t>(p[static_cast<size_t>(d)])] = d;
    CHECK(bitwise_equal(run_op(OpKind::transpose, {y}, inv).data, x.data));
    ++count;
  } while (std::next_permutation(p.begin(), p.end()));
  CHECK(count == 24);
}

TEST_CASE("reshape is a view: aliased output is left alone, a separate output is a copy") {
  Tensor x = random_tensor({4, 6}, 74);
  const std::vector<float> before = x.data;
  Attrs at;
  at.shape = Shape{3, -1};
  kernels::OpCall c;
  c.op = OpKind::reshape;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {x.data.data(), x.shape};
  c.out = {x.data.data(), Shape{3, 8}};
  kernels::run_cpu(c);
  CHECK(bitwise_equal(x.data, before));
  const Tensor y = run_op(OpKind::reshape, {x}, at);
  CHECK(y.shape == Shape{3, 8});
  CHECK(bitwise_equal(y.data, before));
}

TEST_CASE("reduce_sum: zero rows appended to the reduced axis leave every output bit") {
  // The bucket-padding contract (docs/architecture.md), here over axis 0 (the bias
  // gradient), axis 1 of a rank-3 tensor and a whole vector.
  struct C {
    Shape s, padded;
    int axis;
  };
  for (const C& c : {C{{300, 1030}, {333, 1030}, 0}, C{{3, 50, 7}, {3, 64, 7}, 1}, C{{1001}, {4096}, 0}}) {
    CAPTURE(c.s.str());
    const Tensor x = random_tensor(c.s, 91);
    Tensor xp{std::vector<float>(static_cast<size_t>(c.padded.numel()), 0.0f), c.padded};
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < c.axis; ++d) outer *= c.s[d];
    for (int d = c.axis + 1; d < c.s.rank; ++d) inner *= c.s[d];
    const int64_t len = c.s[c.axis], plen = c.padded[c.axis];
    for (int64_t o = 0; o < outer; ++o)
      std::copy(x.data.begin() + o * len * inner, x.data.begin() + (o + 1) * len * inner,
                xp.data.begin() + o * plen * inner);
    CHECK(bitwise_equal(run_op(OpKind::reduce_sum, {xp}, axis_attrs(c.axis)).data,
                        run_op(OpKind::reduce_sum, {x}, axis_attrs(c.axis)).data));
  }
}

TEST_CASE("concat and slice: hand-computed along the middle axis, and slice undoes concat") {
  const Tensor a = tensor({2, 1, 2}, {1, 2, 3, 4});
  const Tensor b = tensor({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor y = run_op(OpKind::concat, {a, b}, axis_attrs(1));
  CHECK(y.shape == Shape{2, 3, 2});
  CHECK(y.data == std::vector<float>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  Attrs at = axis_attrs(1, 2);
  at.start = 1;
  const Tensor back = run_op(OpKind::slice, {y}, at);
  CHECK(back.shape == b.shape);
  CHECK(back.data == b.data);
}

TEST_CASE("concat and slice refuse shapes that do not fit, naming the input and the axis") {
  auto message = [](OpKind op, std::vector<Shape> in, const Attrs& at) { return shape_rule_message(op, in, at, "'j'"); };
  CHECK(message(OpKind::concat, {{2, 3}, {3, 3}}, axis_attrs(1)) ==
        "concat 'j': input 1 is [3,3] but input 0 is [2,3]; every input must have input 0's dims but along axis 1");
  Attrs at = axis_attrs(0, 2);
  at.start = 2;
  CHECK(message(OpKind::slice, {{3, 4}}, at).find("start 2 and size 2 do not fit axis 0 of [3,4] (extent 3)") !=
        std::string::npos);
}
