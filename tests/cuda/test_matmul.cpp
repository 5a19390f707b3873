// matmul through cuBLAS against OpenBLAS: every transpose combination, rank-2,
// rank-3 with shared B (folded and, with trans_a, batched), and batched B; fp32 and TF32.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/matmul_mode.h"
#include "tests/cuda/op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

struct MM {
  int64_t batch, m, n, k;  // batch 0: rank-2 A; batch > 0 with shared: A [batch, ., .], B [k, n]
  bool batched_b;
};

// invariant: the batch-invariant mode (kernels/matmul_mode.h) on both sides, which
// must then agree bit for bit.
void matmul_cases(bool tf32, bool invariant = false) {
  const std::vector<MM> sizes = {{0, 1, 1, 1, false},     {0, 7, 5, 3, false},     {0, 33, 65, 17, false},
                                 {0, 1023, 7, 129, false}, {0, 256, 256, 256, false}, {3, 7, 9, 5, false},
                                 {4, 33, 17, 65, true},    {2, 1, 1023, 7, true},    {5, 64, 64, 64, false}};
  uint64_t seed = 11000;
  CudaBackend tb(0, tf32);
  for (const MM& s : sizes)
    for (bool ta : {false, true})
      for (bool tb_ : {false, true}) {
        OpCase c;
        c.op = OpKind::matmul;
        c.attrs.trans_a = ta;
        c.attrs.trans_b = tb_;
        const Shape a2 = ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
        const Shape b2 = tb_ ? Shape{s.n, s.k} : Shape{s.k, s.n};
        if (s.batch == 0) {
          c.in = {a2, b2};
          c.out = Shape{s.m, s.n};
        } else {
          c.in = {Shape{s.batch, a2[0], a2[1]}, s.batched_b ? Shape{s.batch, b2[0], b2[1]} : b2};
          c.out = Shape{s.batch, s.m, s.n};
        }
        // fp32: both sides accumulate k products in float in some order; TF32 rounds
        // the inputs to 10 mantissa bits (relative 2^-11 each), so scale with sqrt(k).
        const double k = static_cast<double>(s.k);
        c.tol = invariant ? Tol{0, 0} : tf32 ? Tol{2e-3 * std::sqrt(k), 1e-2} : Tol{1e-5 * std::sqrt(k), 1e-4};
        c.seed = seed++;
        CHECK(run_case_on(tb, c) == 0);
      }
}

}  // namespace

TEST_CASE("cuda matmul fp32") { TG_REQUIRE_GPU(); matmul_cases(false); }
TEST_CASE("cuda matmul tf32") { TG_REQUIRE_GPU(); matmul_cases(true); }
TEST_CASE("cuda matmul batch-invariant: the CPU's bits") {
  TG_REQUIRE_GPU();
  kernels::BatchInvariantMatmul on;
  matmul_cases(false, true);
}

}  // namespace tg::testing
