// matmul against a naive triple loop in double: every transpose combination,
// sizes 1, 7, 1023 and odd ones, batched and folded forms, determinism.
#include <cmath>
#include <stdexcept>

#include "kernels/gemm/gemm_mode.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// C[m,n] = op(A) op(B) on the stored layouts, in double; also sum |a||b| per
// element, the scale of the rounding error a float GEMM may make.
void naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, double* c,
           double* mag) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0, g = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * m + i] : a[i * k + p];
        const double bv = tb ? b[j * k + p] : b[p * n + j];
        s += av * bv;
        g += std::fabs(av * bv);
      }
      c[i * n + j] = s;
      mag[i * n + j] = g;
    }
}

// Checks out = A x B for `batch` stacked products (stride_b = 0 shares B).
void check_products(const Tensor& out, bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                    const Tensor& a, const Tensor& b, int64_t stride_b) {
  REQUIRE(out.shape.numel() == batch * m * n);
  std::vector<double> want(static_cast<size_t>(batch * m * n)), mag(want.size());
  for (int64_t i = 0; i < batch; ++i)
    naive(ta, tb, m, n, k, a.data.data() + i * m * k, b.data.data() + i * stride_b, want.data() + i * m * n,
          mag.data() + i * m * n);
  const double u = 6e-8;  // float unit roundoff
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = 1e-7 + 4.0 * u * std::sqrt(static_cast<double>(k)) * mag[i];
    if (!(std::fabs(out.data[i] - want[i]) <= tol) && ++bad <= 5)
      MESSAGE(fmt::format("[{}]: got {} want {}", i, out.data[i], want[i]));
  }
  CHECK_MESSAGE(bad == 0, fmt::format("{} of {} mismatches (m={} n={} k={} ta={} tb={} batch={})", bad,
                                      want.size(), m, n, k, ta, tb, batch));
}

Attrs trans(bool ta, bool tb) {
  Attrs at;
  at.trans_a = ta;
  at.trans_b = tb;
  return at;
}

}  // namespace

TEST_CASE("matmul: hand-computed 2x3 by 3x2") {
  const Tensor a = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = tensor({3, 2}, {7, 8, 9, 10, 11, 12});
  const Tensor c = run_op(OpKind::matmul, {a, b});
  CHECK(c.shape == Shape{2, 2});
  CHECK(c.data == std::vector<float>{58, 64, 139, 154});
  // A^T B with A stored [3,2]: the same numbers from the transposed layout.
  const Tensor at = tensor({3, 2}, {1, 4, 2, 5, 3, 6});
  CHECK(run_op(OpKind::matmul, {at, b}, trans(true, false)).data == std::vector<float>{58, 64, 139, 154});
}

TEST_CASE("matmul: all transpose combinations on sizes 1, 7, 1023 and odd ones") {
  const int64_t sizes[][3] = {{1, 1, 1},   {1, 7, 1023}, {7, 1023, 1}, {1023, 1, 7},  {33, 65, 17},
                              {7, 7, 7},   {64, 129, 1023}, {1023, 31, 3}, {2, 513, 255}, {129, 1, 33}};
  uint64_t seed = 100;
  for (const auto& s : sizes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, ++seed);
      const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, ++seed);
      const Tensor c = run_op(OpKind::matmul, {a, b}, trans(ta, tb));
      CHECK(c.shape == Shape{m, n});
      check_products(c, ta, tb, 1, m, n, k, a, b, 0);
    }
  }
}

TEST_CASE("matmul: batched rank 3 by rank 3, every transpose combination") {
  const int64_t batch = 3, m = 5, n = 9, k = 7;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const Tensor a = random_tensor(ta ? Shape{batch, k, m} : Shape{batch, m, k}, 200 + t);
    const Tensor b = random_tensor(tb ? Shape{batch, n, k} : Shape{batch, k, n}, 210 + t);
    const Tensor c = run_op(OpKind::matmul, {a, b}, trans(ta, tb));
    CHECK(c.shape == Shape{batch, m, n});
    check_products(c, ta, tb, batch, m, n, k, a, b, k * n);
  }
}

TEST_CASE("matmul: rank 3 and rank 4 A by a shared rank-2 B (folded rows, or batched when trans_a)") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    CAPTURE(t);
    const int64_t m = 6, n = 11, k = 13;
    const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 300 + t);
    const Tensor a3 = random_tensor(ta ? Shape{4, k, m} : Shape{4, m, k}, 310 + t);
    const Tensor c3 = run_op(OpKind::matmul, {a3, b}, trans(ta, tb));
    CHECK(c3.shape == Shape{4, m, n});
    check_products(c3, ta, tb, 4, m, n, k, a3, b, 0);
    const Tensor a4 = random_tensor(ta ? Shape{2, 3, k, m} : Shape{2, 3, m, k}, 320 + t);
    const Tensor c4 = run_op(OpKind::matmul, {a4, b}, trans(ta, tb));
    CHECK(c4.shape == Shape{2, 3, m, n});
    check_products(c4, ta, tb, 6, m, n, k, a4, b, 0);
  }
}

TEST_CASE("matmul: the same bits on every run for a fixed OpenBLAS thread count") {
  const Tensor a = random_tensor({384, 300}, 400);
  const Tensor b = random_tensor({300, 517}, 401);
  const int threads = kernels::cpu_blas_threads();
  for (int t : {1, 2}) {
    CAPTURE(t);
    kernels::set_cpu_blas_threads(t);
    CHECK(kernels::cpu_blas_threads() == t);
    const Tensor first = run_op(OpKind::matmul, {a, b});
    const Tensor again = run_op(OpKind::matmul, {a, b});
    CHECK(bitwise_equal(first.data, again.data));
    // Another thread count may round differently, never by more than a GEMM may.
    check_products(first, false, false, 1, 384, 517, 300, a, b, 0);
  }
  kernels::set_cpu_blas_threads(threads);
  CHECK_THROWS_AS(kernels::set_cpu_blas_threads(0), std::invalid_argument);
}

TEST_CASE("matmul batch-invariant: accurate, and a row's bits do not depend on the row count") {
  kernels::BatchInvariantMatmul on;
  CHECK(kernels::batch_invariant_matmul());
  // Accurate as a GEMM, every form (the checks above, in this mode).
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int64_t m = 33, n = 65, k = 17;
    const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, 500 + t);
    const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 510 + t);
    check_products(run_op(OpKind::matmul, {a, b}, trans(ta, tb)), ta, tb, 1, m, n, k, a, b, 0);
    const Tensor a3 = random_tensor(ta ? Shape{3, k, m} : Shape{3, m, k}, 520 + t);
    const Tensor b3 = random_tensor(tb ? Shape{3, n, k} : Shape{3, k, n}, 530 + t);
    check_products(run_op(OpKind::matmul, {a3, b3}, trans(ta, tb)), ta, tb, 3, m, n, k, a3, b3, k * n);
  }
  // Rows: the first 5 rows of an 8-row product (3 more rows of anything) are the 5-row product.
  const int64_t k = 300, n = 129;
  const Tensor a8 = random_tensor({8, k}, 540), b = random_tensor({k, n}, 541);
  const Tensor a5 = tensor({5, k}, std::vector<float>(a8.data.begin(), a8.data.begin() + 5 * k));
  const Tensor c8 = run_op(OpKind::matmul, {a8, b}), c5 = run_op(OpKind::matmul, {a5, b});
  CHECK(bitwise_equal(std::vector<float>(c8.data.begin(), c8.data.begin() + 5 * n), c5.data));
  // A sum over a padded axis (a weight gradient X^T dY): padded rows of dY are 0.
  Tensor x8 = random_tensor({8, 40}, 542), dy8 = random_tensor({8, n}, 543);
  for (int64_t i = 5 * n; i < 8 * n; ++i) dy8.data[static_cast<size_t>(i)] = 0.0f;
  const Tensor x5 = tensor({5, 40}, std::vector<float>(x8.data.begin(), x8.data.begin() + 5 * 40));
  const Tensor dy5 = tensor({5, n}, std::vector<float>(dy8.data.begin(), dy8.data.begin() + 5 * n));
  CHECK(bitwise_equal(run_op(OpKind::matmul, {x8, dy8}, trans(true, false)).data,
                      run_op(OpKind::matmul, {x5, dy5}, trans(true, false)).data));
}

TEST_CASE("matmul batch-invariant: the switch is scoped") {
  CHECK_FALSE(kernels::batch_invariant_matmul());
  {
    kernels::BatchInvariantMatmul on;
    CHECK(kernels::batch_invariant_matmul());
    {
      kernels::BatchInvariantMatmul off(false);
      CHECK_FALSE(kernels::batch_invariant_matmul());
    }
    CHECK(kernels::batch_invariant_matmul());
  }
  CHECK_FALSE(kernels::batch_invariant_matmul());
}
