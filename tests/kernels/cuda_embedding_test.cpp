// embedding and embedding_grad on CUDA past the sizes of the samples (a second column scan,
// more ids than one shared-memory tile), their defined behaviour for ids outside the table,
// cross_entropy's integer labels and ignore_index over long rows, and cast to and from
// integers, each against the CPU reference.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

OpCase ids_case(OpKind op, int64_t vocab, int64_t dim, int64_t n, DType dt, DType ids, uint64_t seed) {
  OpCase c;
  c.op = op;
  c.dtype = dt;
  c.in = {op == OpKind::embedding ? Shape{vocab, dim} : Shape{n, dim}, Shape{n}};
  c.out = op == OpKind::embedding ? Shape{n, dim} : Shape{vocab, dim};
  c.attrs.size = vocab;
  c.labels_input = 1;
  c.labels_classes = vocab;
  c.labels_dtype = ids;
  c.seed = seed;
  return c;  // bitwise: the same rows, the same sums in the same order
}

}  // namespace

TEST_CASE("cuda embedding and embedding_grad == cpu bitwise, past one column scan and one id tile") {
  TG_REQUIRE_GPU();
  uint64_t seed = 900;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (DType ids : {DType::I32, DType::I64})
      for (bool unaligned : {false, true}) {
        // dim 1100 > 1024 columns a scan; 2100 ids > 1024 a tile; 7 rows: every row sums ~300.
        for (OpKind op : {OpKind::embedding, OpKind::embedding_grad}) {
          OpCase c = ids_case(op, 7, 1100, 2100, dt, ids, seed++);
          c.unaligned = unaligned;
          TG_CHECK_CASE(c);
          OpCase wide = ids_case(op, 3000, 5, 64, dt, ids, seed++);  // most table rows get no id
          wide.unaligned = unaligned;
          TG_CHECK_CASE(wide);
        }
      }
}

TEST_CASE("cuda embedding: an id outside the table gives a row of zeros, and embedding_grad drops its dy row") {
  TG_REQUIRE_GPU();
  const std::vector<float> table = random_vector(4 * 3, 7);
  const std::vector<float> ids = {1, -1, 4, 3, 1};
  DevTensor t(table, false), i(ids, false, DType::I64), out(5 * 3, false);
  out.poison();
  Attrs at;
  run_op(OpKind::embedding, {t.view({4, 3}), i.view({5})}, out.view({5, 3}), at);
  const std::vector<float> got = out.download();
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < 3; ++j) {
      const int id = static_cast<int>(ids[static_cast<size_t>(r)]);
      const float want = id >= 0 && id < 4 ? table[static_cast<size_t>(id * 3 + j)] : 0.0f;
      CHECK(got[static_cast<size_t>(r * 3 + j)] == want);
    }
  const std::vector<float> dy = random_vector(5 * 3, 8);
  DevTensor d(dy, false), dt(4 * 3, false);
  dt.poison();
  at.size = 4;
  run_op(OpKind::embedding_grad, {d.view({5, 3}), i.view({5})}, dt.view({4, 3}), at);
  std::vector<float> first = dt.download(), want(12, 0.0f);
  for (int r = 0; r < 5; ++r) {
    const int id = static_cast<int>(ids[static_cast<size_t>(r)]);
    if (id < 0 || id >= 4) continue;
    for (int j = 0; j < 3; ++j) want[static_cast<size_t>(id * 3 + j)] += dy[static_cast<size_t>(r * 3 + j)];
  }
  CHECK(compare("embedding_grad, ids outside dropped", first, want, {}) == 0);
  run_op(OpKind::embedding_grad, {d.view({5, 3}), i.view({5})}, dt.view({4, 3}), at);
  CHECK(compare("embedding_grad run again", dt.download(), first, {}) == 0);
}

TEST_CASE("cuda cross_entropy with i32 and i64 labels and ignore_index == cpu, short and long rows") {
  TG_REQUIRE_GPU();
  uint64_t seed = 1300;
  for (DType labels : {DType::I32, DType::I64, DType::F32})
    for (int64_t cols : {5, 100, 300, 2000})  // each of the row frames' register paths and the long-row one
      for (OpKind op : {OpKind::cross_entropy, OpKind::cross_entropy_grad}) {
        OpCase c;
        c.op = op;
        c.in = op == OpKind::cross_entropy ? std::vector<Shape>{{67, cols}, {67}} : std::vector<Shape>{{67, cols}, {67}, {1}};
        c.out = op == OpKind::cross_entropy ? Shape{1} : Shape{67, cols};
        c.labels_input = 1;
        c.labels_classes = 4;  // class 2 ignored: about a quarter of the rows
        c.labels_dtype = labels;
        c.attrs.ignore_index = 2;
        c.tol = {1e-5, 1e-5};
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

TEST_CASE("cuda cast to and from i32 and i64 == cpu bitwise: toward zero, saturating, NaN to 0") {
  TG_REQUIRE_GPU();
  const float big = 3e9f, nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {2.9f, -2.9f, 0.5f, -0.0f, big, -big, nan, 16777216.0f, 1e20f, -1e20f, 7.0f, -65504.0f};
  const Shape s{12};
  for (DType from : {DType::F32, DType::BF16, DType::F16})
    for (DType to : {DType::I32, DType::I64}) {
      DevTensor in(x, false, from), out(12, false, to);
      Attrs at;
      at.to = to;
      run_op(OpKind::cast, {in.view(s)}, out.view(s), at);
      // The CPU reference on the same (rounded) values.
      std::vector<float> widened = in.download(), want(12);
      for (size_t k = 0; k < 12; ++k) want[k] = round_to_dtype(widened[k], to);
      CHECK(compare(std::string("cast ") + dtype_name(from) + " to " + dtype_name(to), out.download(), want, {}) == 0);
      // And back to the float dtype: the nearest float, rounded once more to a 16-bit type.
      DevTensor back(12, false, from);
      at.to = from;
      run_op(OpKind::cast, {out.view(s)}, back.view(s), at);
      std::vector<float> again(12);
      for (size_t k = 0; k < 12; ++k) again[k] = round_to_dtype(want[k], from);
      CHECK(compare(std::string("cast back to ") + dtype_name(from), back.download(), again, {}) == 0);
    }
  const std::vector<float> wide = {3e9f, -3e9f, 5.0f};
  DevTensor l(wide, false, DType::I64), n(3, false, DType::I32);
  Attrs at;
  at.to = DType::I32;
  run_op(OpKind::cast, {l.view({3})}, n.view({3}), at);
  CHECK(compare("cast i64 to i32 saturates", n.download(), {2147483648.0f, -2147483648.0f, 5.0f}, {}) == 0);
}

}  // namespace tg::testing
