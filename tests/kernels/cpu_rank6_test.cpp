// The ops that take any rank, at ranks 5 and 6 (graph/shape.h: kMaxRank): the layout and
// reduce kernels against naive indexing over every axis, the row and elementwise kernels
// against the same data viewed with fewer dims, bit for bit.
#include <algorithm>
#include <array>

#include <fmt/ranges.h>

#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

using Index = std::array<int64_t, kMaxRank>;

// The element offset of a multi-index in a row-major tensor of shape s.
int64_t offset(const Shape& s, const Index& idx) {
  int64_t o = 0;
  for (int d = 0; d < s.rank; ++d) o = o * s[d] + idx[static_cast<size_t>(d)];
  return o;
}

// Calls fn(idx) for every multi-index of s, in row-major order.
template <typename Fn>
void for_each_index(const Shape& s, Fn&& fn) {
  Index idx{};
  for (int64_t n = 0; n < s.numel(); ++n) {
    fn(idx);
    for (int d = s.rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < s[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

Attrs axis_attrs(int axis, int64_t size = 0, int64_t start = 0) {
  Attrs at;
  at.axis = axis;
  at.size = size;
  at.start = start;
  return at;
}

// The same data under another shape.
Tensor viewed(Tensor t, Shape s) {
  REQUIRE(s.numel() == t.shape.numel());
  t.shape = s;
  return t;
}

const Shape kRank5{2, 3, 1, 4, 2}, kRank6{2, 1, 3, 2, 2, 3};

}  // namespace

TEST_CASE("transpose: every rank-5 and rank-6 permutation matches naive indexing, and the inverse undoes each") {
  for (const Shape& s : {kRank5, kRank6}) {
    const Tensor x = random_tensor(s, 601 + static_cast<uint64_t>(s.rank));
    std::array<int, kMaxRank> p{};
    for (int d = 0; d < s.rank; ++d) p[static_cast<size_t>(d)] = d;
    int count = 0;
    do {
      CAPTURE(fmt::format("{} perm {}", s.str(), fmt::join(p.begin(), p.begin() + s.rank, ",")));
      Attrs at;
      at.perm = p;
      const Tensor y = run_op(OpKind::transpose, {x}, at);
      bool ok = true;
      for_each_index(s, [&](const Index& in) {
        Index out{};  // output dim d runs over input dim p[d]
        for (int d = 0; d < s.rank; ++d) out[static_cast<size_t>(d)] = in[static_cast<size_t>(p[static_cast<size_t>(d)])];
        ok = ok && y.data[static_cast<size_t>(offset(y.shape, out))] == x.data[static_cast<size_t>(offset(s, in))];
      });
      CHECK(ok);
      Attrs inv;
      for (int d = 0; d < s.rank; ++d) inv.perm[static_cast<size_t>(p[static_cast<size_t>(d)])] = d;
      CHECK(bitwise_equal(run_op(OpKind::transpose, {y}, inv).data, x.data));
      ++count;
    } while (std::next_permutation(p.begin(), p.begin() + s.rank));
    CHECK(count == (s.rank == 5 ? 120 : 720));
  }
}

TEST_CASE("reduce_sum and reduce_mean over every axis of rank 5 and 6 equal a naive double sum") {
  for (const Shape& s : {kRank5, kRank6}) {
    const Tensor x = random_tensor(s, 611 + static_cast<uint64_t>(s.rank));
    for (int axis = 0; axis < s.rank; ++axis) {
      CAPTURE(s.str());
      CAPTURE(axis);
      Shape os;
      for (int d = 0; d < s.rank; ++d)
        if (d != axis) os[os.rank++] = s[d];
      std::vector<double> sum(static_cast<size_t>(os.numel()), 0.0);
      for_each_index(s, [&](const Index& in) {
        Index out{};
        for (int d = 0, k = 0; d < s.rank; ++d)
          if (d != axis) out[static_cast<size_t>(k++)] = in[static_cast<size_t>(d)];
        sum[static_cast<size_t>(offset(os, out))] += x.data[static_cast<size_t>(offset(s, in))];
      });
      const Tensor y = run_op(OpKind::reduce_sum, {x}, axis_attrs(axis));
      CHECK(y.shape == os);
      check_close(y.data, sum, 1e-6, 1e-7, "reduce_sum");
      std::vector<double> mean = sum;
      for (double& v : mean) v /= static_cast<double>(s[axis]);
      check_close(run_op(OpKind::reduce_mean, {x}, axis_attrs(axis)).data, mean, 1e-6, 1e-7, "reduce_mean");
    }
  }
}

TEST_CASE("broadcast: a rank-5 tensor to rank 6 at every axis matches naive indexing") {
  const Tensor x = random_tensor(kRank5, 621);
  for (int axis = 0; axis <= kRank5.rank; ++axis) {
    CAPTURE(axis);
    const Tensor y = run_op(OpKind::broadcast, {x}, axis_attrs(axis, 3));
    REQUIRE(y.shape.rank == 6);
    CHECK(y.shape[axis] == 3);
    bool ok = true;
    for_each_index(y.shape, [&](const Index& out) {
      Index in{};
      for (int d = 0, k = 0; d < y.shape.rank; ++d)
        if (d != axis) in[static_cast<size_t>(k++)] = out[static_cast<size_t>(d)];
      ok = ok && y.data[static_cast<size_t>(offset(y.shape, out))] == x.data[static_cast<size_t>(offset(kRank5, in))];
    });
    CHECK(ok);
  }
}

TEST_CASE("concat and slice along every axis of a rank-6 tensor match naive indexing") {
  const Tensor a = random_tensor(kRank6, 631);
  for (int axis = 0; axis < kRank6.rank; ++axis) {
    CAPTURE(axis);
    Shape bs = kRank6;
    bs[axis] = 2;
    const Tensor b = random_tensor(bs, 632 + static_cast<uint64_t>(axis));
    const Tensor c = run_op(OpKind::concat, {a, b}, axis_attrs(axis));
    CHECK(c.shape[axis] == kRank6[axis] + 2);
    bool ok = true;
    for_each_index(c.shape, [&](const Index& out) {
      Index in = out;
      const bool from_a = out[static_cast<size_t>(axis)] < kRank6[axis];
      if (!from_a) in[static_cast<size_t>(axis)] -= kRank6[axis];
      const float want = from_a ? a.data[static_cast<size_t>(offset(kRank6, in))] : b.data[static_cast<size_t>(offset(bs, in))];
      ok = ok && c.data[static_cast<size_t>(offset(c.shape, out))] == want;
    });
    CHECK(ok);
    // The slice that takes b back out of the concatenation.
    const Tensor back = run_op(OpKind::slice, {c}, axis_attrs(axis, 2, kRank6[axis]));
    CHECK(back.shape == bs);
    CHECK(bitwise_equal(back.data, b.data));
  }
}

TEST_CASE("row and elementwise ops at rank 5 and 6 equal the same data with fewer dims, bit for bit") {
  for (const Shape& s : {kRank5, kRank6}) {
    CAPTURE(s.str());
    const Shape rows{s.rows(), s.last()}, flat{s.numel()};
    const Tensor x = random_tensor(s, 641), y = random_tensor(s, 642);
    const Tensor g = random_tensor({s.last()}, 643), b = random_tensor({s.last()}, 644);
    for (OpKind op : {OpKind::add, OpKind::mul, OpKind::sub, OpKind::relu_grad, OpKind::gelu_grad, OpKind::tanh_grad}) {
      CAPTURE(op_name(op));
      const Tensor got = run_op(op, {x, y});
      CHECK(got.shape == s);
      CHECK(bitwise_equal(got.data, run_op(op, {viewed(x, flat), viewed(y, flat)}).data));
    }
    for (OpKind op : {OpKind::relu, OpKind::gelu, OpKind::gelu_erf, OpKind::tanh, OpKind::sigmoid, OpKind::exp, OpKind::copy}) {
      CAPTURE(op_name(op));
      CHECK(bitwise_equal(run_op(op, {x}).data, run_op(op, {viewed(x, flat)}).data));
    }
    CHECK(bitwise_equal(run_op(OpKind::softmax, {x}).data, run_op(OpKind::softmax, {viewed(x, rows)}).data));
    CHECK(bitwise_equal(run_op(OpKind::bias_add, {x, b}).data, run_op(OpKind::bias_add, {viewed(x, rows), b}).data));
    CHECK(bitwise_equal(run_op(OpKind::layernorm, {x, g, b}).data,
                        run_op(OpKind::layernorm, {viewed(x, rows), g, b}).data));
    Attrs to;
    to.shape = rows;
    const Tensor r = run_op(OpKind::reshape, {x}, to);
    CHECK(r.shape == rows);
    CHECK(bitwise_equal(r.data, x.data));
  }
}

TEST_CASE("rank 7 is refused by the shape rules, naming the node") {
  Attrs at = axis_attrs(0, 2);
  CHECK(shape_rule_message(OpKind::broadcast, {kRank6}, at, "'up'") ==
        "broadcast 'up': input [2,1,3,2,2,3] already has 6 dims; at most 6 are supported");
  Shape seven;
  seven.rank = 7;
  CHECK(shape_rule_message(OpKind::relu, {seven}, Attrs{}, "'r'") == "relu 'r': input 0 has rank 7; ranks 0..6 are supported");
  CHECK_THROWS_AS(Shape({1, 2, 3, 4, 5, 6, 7}), std::invalid_argument);
}
