// The CPU reference over integer tensors: embedding and its gradient (in-order sums, ids
// checked), cross_entropy's integer labels and ignore_index, cast to and from integers,
// and the layout ops moving i64 values bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "graph/errors.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace {

using namespace tg;
using kernels::OpCall;
using kernels::TensorView;
using testing::view;

TensorView scalar(float* p) { return {p, Shape{1}, DType::F32}; }

OpCall call(OpKind op, const Attrs& at, std::vector<TensorView> in, TensorView out) {
  OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = static_cast<int>(in.size());
  for (size_t i = 0; i < in.size(); ++i) c.in[i] = in[i];
  c.out = out;
  return c;
}

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 7) - 0.3f * static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("embedding picks table rows by i32 and i64 ids, and refuses an id outside the table") {
  const Attrs at;
  std::vector<float> table = ramp(5 * 3, 0.5f);
  std::vector<int64_t> ids64 = {4, 0, 4, 2};
  std::vector<int32_t> ids32 = {4, 0, 4, 2};
  for (const TensorView& ids : {view(ids64, {4}, DType::I64), view(ids32, {2, 2}, DType::I32)}) {
    std::vector<float> out(12, NAN);
    Shape os = ids.shape;
    os.dims[static_cast<size_t>(os.rank++)] = 3;
    kernels::run_cpu(call(OpKind::embedding, at, {view(table, {5, 3}, DType::F32), ids}, view(out, os, DType::F32)));
    for (int t = 0; t < 4; ++t)
      for (int j = 0; j < 3; ++j) CHECK(out[static_cast<size_t>(t * 3 + j)] == table[static_cast<size_t>(ids64[static_cast<size_t>(t)] * 3 + j)]);
  }
  std::vector<int64_t> bad = {1, 5};
  std::vector<float> out(6);
  CHECK_THROWS_WITH_AS(kernels::run_cpu(call(OpKind::embedding, at, {view(table, {5, 3}, DType::F32), view(bad, {2}, DType::I64)},
                                             view(out, {2, 3}, DType::F32))),
                       doctest::Contains("ids[1] is 5; embedding needs ids in [0, 5)"), InputError);
  std::vector<int32_t> negative = {-1};
  CHECK_THROWS_AS(kernels::run_cpu(call(OpKind::embedding, at, {view(table, {5, 3}, DType::F32), view(negative, {1}, DType::I32)},
                                        view(out, {1, 3}, DType::F32))),
                  InputError);
}

TEST_CASE("embedding_grad adds each dy row into its id's row in ascending position, in f32") {
  Attrs at;
  at.size = 4;
  std::vector<int64_t> ids = {2, 0, 2, 2, 3, 0};
  std::vector<float> dy = {1e8f, 1.0f, 0.1f, -3.0f, 1.0f, 2.5f, -1e8f, 0.25f, 7.0f, 0.5f, 0.5f, -1.0f};  // [6, 2]
  std::vector<float> dtable(8, NAN);
  kernels::run_cpu(call(OpKind::embedding_grad, at, {view(dy, {6, 2}, DType::F32), view(ids, {6}, DType::I64)},
                        view(dtable, {4, 2}, DType::F32)));
  // Row 2 is ((dy0 + dy2) + dy3), f32, in that order: 1e8 + 1 is 1e8 in f32, so the order shows.
  float want[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t j = 0; j < 2; ++j) want[static_cast<size_t>(ids[t]) * 2 + j] += dy[t * 2 + j];
  for (size_t i = 0; i < 8; ++i) CHECK(std::memcmp(&dtable[i], &want[i], sizeof(float)) == 0);
  CHECK(dtable[2] == 0.0f);  // row 1: no id
  CHECK(dtable[3] == 0.0f);
  std::vector<int64_t> bad = {0, 0, 4, 0, 0, 0};
  std::vector<float> before = dtable;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(call(OpKind::embedding_grad, at, {view(dy, {6, 2}, DType::F32), view(bad, {6}, DType::I64)},
                                             view(dtable, {4, 2}, DType::F32))),
                       doctest::Contains("ids[2] is 4; embedding_grad needs ids in [0, 4)"), InputError);
  CHECK(std::memcmp(before.data(), dtable.data(), before.size() * sizeof(float)) == 0);
}

TEST_CASE("cross_entropy with integer labels and ignore_index: ignored rows count nowhere") {
  std::vector<float> logits = ramp(5 * 4, 0.7f);  // [5, 4]
  std::vector<int64_t> labels = {1, -100, 3, 0, -100};
  std::vector<float> kept_logits;
  std::vector<float> kept_labels;
  for (size_t r = 0; r < labels.size(); ++r)
    if (labels[r] != -100) {
      kept_logits.insert(kept_logits.end(), logits.begin() + static_cast<long>(r * 4), logits.begin() + static_cast<long>(r * 4 + 4));
      kept_labels.push_back(static_cast<float>(labels[r]));
    }
  Attrs at;  // ignore_index -100
  float loss = NAN, want = NAN;
  kernels::run_cpu(call(OpKind::cross_entropy, at, {view(logits, {5, 4}, DType::F32), view(labels, {5}, DType::I64)},
                        scalar(&loss)));
  kernels::run_cpu(call(OpKind::cross_entropy, at, {view(kept_logits, {3, 4}, DType::F32), view(kept_labels, {3}, DType::F32)},
                        scalar(&want)));
  CHECK(loss == want);

  std::vector<float> dloss = {1.5f}, dx(20, NAN), dwant(12, NAN);
  kernels::run_cpu(call(OpKind::cross_entropy_grad, at,
                        {view(logits, {5, 4}, DType::F32), view(labels, {5}, DType::I64), view(dloss, {1}, DType::F32)},
                        view(dx, {5, 4}, DType::F32)));
  kernels::run_cpu(call(OpKind::cross_entropy_grad, at,
                        {view(kept_logits, {3, 4}, DType::F32), view(kept_labels, {3}, DType::F32), view(dloss, {1}, DType::F32)},
                        view(dwant, {3, 4}, DType::F32)));
  size_t k = 0;
  for (size_t r = 0; r < 5; ++r)
    for (size_t j = 0; j < 4; ++j) {
      if (labels[r] == -100) CHECK(dx[r * 4 + j] == 0.0f);
      else CHECK(dx[r * 4 + j] == dwant[k++]);
    }

  // i32 labels with another ignore_index; every row ignored gives NaN, as torch does.
  std::vector<int32_t> all_ignored = {7, 7, 7, 7, 7};
  at.ignore_index = 7;
  kernels::run_cpu(call(OpKind::cross_entropy, at, {view(logits, {5, 4}, DType::F32), view(all_ignored, {5}, DType::I32)},
                        scalar(&loss)));
  CHECK(std::isnan(loss));
  std::vector<int32_t> out_of_range = {0, 1, 4, 0, 0};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(call(OpKind::cross_entropy, at,
                                             {view(logits, {5, 4}, DType::F32), view(out_of_range, {5}, DType::I32)},
                                             scalar(&loss))),
                       doctest::Contains("labels[2] is 4"), InputError);
}

TEST_CASE("cast to integers rounds toward zero and saturates, from integers it is exact below 2^24") {
  std::vector<float> x = {2.9f, -2.9f, 0.5f, -0.0f, 3e9f, -3e9f, NAN, 16777216.0f};
  std::vector<int32_t> i32(8);
  std::vector<int64_t> i64(8);
  Attrs to32, to64, to_f32;
  to32.to = DType::I32;
  to64.to = DType::I64;
  kernels::run_cpu(call(OpKind::cast, to32, {view(x, {8}, DType::F32)}, view(i32, {8}, DType::I32)));
  kernels::run_cpu(call(OpKind::cast, to64, {view(x, {8}, DType::F32)}, view(i64, {8}, DType::I64)));
  CHECK(i32 == std::vector<int32_t>{2, -2, 0, 0, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0,
                                    16777216});
  CHECK(i64 == std::vector<int64_t>{2, -2, 0, 0, 3000000000ll, -3000000000ll, 0, 16777216});
  std::vector<int64_t> big = {(int64_t{1} << 40) + 3, -5, 16777217};
  std::vector<float> back(3);
  kernels::run_cpu(call(OpKind::cast, to_f32, {view(big, {3}, DType::I64)}, view(back, {3}, DType::F32)));
  CHECK(back[0] == static_cast<float>(big[0]));
  CHECK(back[1] == -5.0f);
  CHECK(back[2] == 16777216.0f);  // past 2^24: the nearest float
  std::vector<int32_t> narrowed(3);
  kernels::run_cpu(call(OpKind::cast, to32, {view(big, {3}, DType::I64)}, view(narrowed, {3}, DType::I32)));
  CHECK(narrowed == std::vector<int32_t>{std::numeric_limits<int32_t>::max(), -5, 16777217});
  std::vector<uint16_t> half(3);
  Attrs to_bf16;
  to_bf16.to = DType::BF16;
  kernels::run_cpu(call(OpKind::cast, to_bf16, {view(narrowed, {3}, DType::I32)}, view(half, {3}, DType::BF16)));
  CHECK(half[1] == 0xC0A0);  // -5 in bf16
}

TEST_CASE("reshape, copy, slice and concat move i64 values bit for bit") {
  std::vector<int64_t> x(6);
  for (size_t i = 0; i < 6; ++i) x[i] = (int64_t{1} << 50) + static_cast<int64_t>(i);  // not exact in f32
  Attrs at;
  std::vector<int64_t> y(6);
  kernels::run_cpu(call(OpKind::copy, at, {view(x, {2, 3}, DType::I64)}, view(y, {2, 3}, DType::I64)));
  CHECK(y == x);
  at.shape = Shape{3, 2};
  std::fill(y.begin(), y.end(), 0);
  kernels::run_cpu(call(OpKind::reshape, at, {view(x, {2, 3}, DType::I64)}, view(y, {3, 2}, DType::I64)));
  CHECK(y == x);
  Attrs take;
  take.axis = 1;
  take.start = 1;
  take.size = 2;
  std::vector<int64_t> s(4);
  kernels::run_cpu(call(OpKind::slice, take, {view(x, {2, 3}, DType::I64)}, view(s, {2, 2}, DType::I64)));
  CHECK(s == std::vector<int64_t>{x[1], x[2], x[4], x[5]});
  Attrs along;
  along.axis = 0;
  std::vector<int64_t> c(12);
  kernels::run_cpu(call(OpKind::concat, along, {view(x, {2, 3}, DType::I64), view(x, {2, 3}, DType::I64)},
                        view(c, {4, 3}, DType::I64)));
  for (size_t i = 0; i < 12; ++i) CHECK(c[i] == x[i % 6]);
  // Any other op refuses an integer view.
  std::vector<int64_t> z(6);
  CHECK_THROWS_WITH_AS(kernels::run_cpu(call(OpKind::relu, at, {view(x, {6}, DType::I64)}, view(z, {6}, DType::I64))),
                       doctest::Contains("an integer"), std::invalid_argument);
}
