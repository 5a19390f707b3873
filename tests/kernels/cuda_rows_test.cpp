// Row-wise ops: every row-length regime of rows.cuh (warp per row with 1..32 values
// per lane, block per row with registers, the re-reading fallback beyond 8192).
#include <doctest/doctest.h>

#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

const std::vector<int64_t> kCols = {1, 7, 32, 33, 100, 257, 1000, 1023, 1024, 1025, 3000, 5000, 8192, 9001};
const std::vector<int64_t> kRows = {1, 7, 65};

constexpr Tol kRowTol{2e-6, 2e-5};

// shapes(rows, cols) gives the inputs; the output is [rows, cols] unless `scalar_out`.
template <typename Shapes>
void row_cases(OpKind op, Shapes shapes, Tol tol, bool in_place, int labels_input = -1) {
  uint64_t seed = 1000;
  for (int64_t rows : kRows)
    for (int64_t cols : kCols)
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = op;
        c.attrs.eps = 1e-5f;
        c.in = shapes(rows, cols);
        c.out = Shape{rows, cols};
        c.tol = tol;
        c.unaligned = unaligned;
        c.labels_input = labels_input;
        c.labels_classes = cols;
        c.seed = seed++;
        TG_CHECK_CASE(c);
        if (in_place) {
          c.alias_input = 0;
          TG_CHECK_CASE(c);
        }
      }
}

std::vector<Shape> one(int64_t r, int64_t c) { return {Shape{r, c}}; }
std::vector<Shape> two(int64_t r, int64_t c) { return {Shape{r, c}, Shape{r, c}}; }

}  // namespace

TEST_CASE("cuda softmax (and in place)") { TG_REQUIRE_GPU(); row_cases(OpKind::softmax, one, kRowTol, true); }

TEST_CASE("cuda softmax_grad") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::softmax_grad, two, Tol{1e-5, 1e-4}, true);
}

TEST_CASE("cuda layernorm") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::layernorm, [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{c}, Shape{c}}; },
            Tol{1e-5, 1e-4}, true);
}

TEST_CASE("cuda layernorm_grad_x") {
  TG_REQUIRE_GPU();
  // cols = 1 gives xhat = 0 and dx = 0 up to rounding of rstd * (g - g): keep atol generous.
  row_cases(OpKind::layernorm_grad_x,
            [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{r, c}, Shape{c}}; },
            Tol{5e-4, 2e-3}, true);
}

TEST_CASE("cuda cross_entropy_grad") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::cross_entropy_grad,
            [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{r}, Shape{1}}; }, kRowTol, true,
            1);
}

TEST_CASE("cuda cross_entropy") {
  TG_REQUIRE_GPU();
  uint64_t seed = 3000;
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{4097}})
    for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{10}, int64_t{100}, int64_t{1000}, int64_t{1025}})
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = OpKind::cross_entropy;
        c.in = {Shape{rows, cols}, Shape{rows}};
        c.out = Shape{1};
        c.tol = Tol{1e-5, 1e-5};
        c.unaligned = unaligned;
        c.labels_input = 1;
        c.labels_classes = cols;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

}  // namespace tg::testing
