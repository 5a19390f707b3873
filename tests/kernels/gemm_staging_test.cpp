// The rule of kernels/gemm/gemm_staging.h: which operands of a cuBLASLt GEMM run on padded
// copies, at which extents, and the copies' room. The copies and the staged products are
// checked on a GPU (tests/kernels/cuda_gemm16_test.cpp).
#include <doctest/doctest.h>

#include "kernels/gemm/gemm_staging.h"

namespace tg::testing {

namespace {

using kernels::GemmStaging;
using kernels::GemmStagingShape;
using kernels::plan_gemm_staging;

GemmStagingShape shape(int64_t m, int64_t n, int64_t k, int esize, bool ta = false, bool tb = false) {
  GemmStagingShape s;
  s.m = m, s.n = n, s.k = k, s.esize = esize, s.trans_a = ta, s.trans_b = tb;
  s.lda = ta ? m : k;
  s.ldb = tb ? k : n;
  s.ldd = n;
  return s;
}

size_t room(int64_t rows, int64_t cols, int esize) {
  return (static_cast<size_t>(rows * cols * esize) + 255) / 256 * 256;
}

}  // namespace

TEST_CASE("gemm staging: GPT-2's three vocabulary products run at a padded vocabulary") {
  const int64_t tokens = 8192, vocab = 50257, padded = 50264, d = 768;
  // logits = h W^T: n is the vocabulary, D's and W's rows are padded.
  GemmStaging st = plan_gemm_staging(shape(tokens, vocab, d, 2, false, true));
  CHECK(st.m == tokens);
  CHECK(st.n == padded);
  CHECK(st.k == d);
  CHECK_FALSE(st.a.staged);
  REQUIRE(st.b.staged);  // W [vocab, d] -> [padded, d]: its leading dim was fine, its extent is not
  CHECK(st.b.rows == vocab);
  CHECK(st.b.padded_rows == padded);
  CHECK(st.b.padded_cols == d);
  REQUIRE(st.d.staged);
  CHECK(st.d.rows == tokens);
  CHECK(st.d.cols == vocab);
  CHECK(st.d.padded_cols == padded);
  CHECK(st.d.offset == room(padded, d, 2));
  CHECK(st.bytes == room(padded, d, 2) + room(tokens, padded, 2));
  CHECK_FALSE(st.bias.staged);
  // dh = dlogits W: k is the vocabulary, both operands padded along it (zeros there).
  st = plan_gemm_staging(shape(tokens, d, vocab, 2));
  CHECK(st.k == padded);
  REQUIRE(st.a.staged);
  CHECK(st.a.padded_cols == padded);
  REQUIRE(st.b.staged);
  CHECK(st.b.padded_rows == padded);
  CHECK_FALSE(st.d.staged);
  // dW = dlogits^T h: m is the vocabulary, A's contiguous dim.
  st = plan_gemm_staging(shape(vocab, d, tokens, 2, true, false));
  CHECK(st.m == padded);
  CHECK(st.k == tokens);
  REQUIRE(st.a.staged);
  CHECK(st.a.rows == tokens);
  CHECK(st.a.padded_cols == padded);
  CHECK_FALSE(st.b.staged);
  REQUIRE(st.d.staged);  // [padded, d] computed, [vocab, d] copied out
  CHECK(st.d.padded_rows == padded);
  // In f32 the steps are 4 elements.
  st = plan_gemm_staging(shape(tokens, vocab, d, 4, false, true));
  CHECK(st.n == 50260);
}

TEST_CASE("gemm staging: a bias and a bias gradient follow a padded n, each copy 256-byte aligned") {
  GemmStagingShape s = shape(1024, 2049, 768, 2);
  s.bias = true;
  const GemmStaging st = plan_gemm_staging(s);
  CHECK_FALSE(st.a.staged);
  REQUIRE(st.b.staged);
  REQUIRE(st.d.staged);
  REQUIRE(st.bias.staged);
  CHECK(st.bias.padded_cols == 2056);
  CHECK(st.b.offset == 0);
  CHECK(st.d.offset == room(768, 2056, 2));
  CHECK(st.bias.offset == st.d.offset + room(1024, 2056, 2));
  CHECK(st.bytes == st.bias.offset + room(1, 2056, 2));
  // Without a bias there is no bias copy.
  s.bias = false;
  CHECK_FALSE(plan_gemm_staging(s).bias.staged);
}

TEST_CASE("gemm staging: a leading dim off 16-byte steps alone stages that operand at its own extents") {
  GemmStagingShape s = shape(4096, 4096, 4096, 2);
  s.lda = 4100;  // a view: rows 8200 bytes apart
  const GemmStaging st = plan_gemm_staging(s);
  REQUIRE(st.a.staged);
  CHECK(st.a.padded_cols == 4096);
  CHECK(st.a.padded_rows == 4096);
  CHECK_FALSE(st.b.staged);
  CHECK_FALSE(st.d.staged);
  CHECK(st.m == 4096);
}

TEST_CASE("gemm staging: nothing staged where every extent is aligned, the product is small, or it does too little per copy") {
  CHECK(plan_gemm_staging(shape(8192, 50264, 768, 2, false, true)).bytes == 0);
  CHECK(plan_gemm_staging(shape(4096, 4096, 4096, 4)).bytes == 0);
  // m unaligned but nobody's contiguous dim: nothing to pad.
  CHECK(plan_gemm_staging(shape(4097, 4096, 4096, 2)).bytes == 0);
  // A small product (100 hidden units, rows of 200 bytes): under kStagingMinProduct.
  CHECK(plan_gemm_staging(shape(1024, 100, 100, 2)).bytes == 0);
  // Large but thin: k = 8 multiply-adds per element of D, under kStagingMinRatio.
  CHECK(plan_gemm_staging(shape(1 << 20, 2049, 8, 2)).bytes == 0);
  // Nothing to do, or an element size without a rule.
  CHECK(plan_gemm_staging(shape(0, 2049, 768, 2)).bytes == 0);
  CHECK(plan_gemm_staging(shape(8192, 50257, 768, 8, false, true)).bytes == 0);
  // An unstaged plan keeps the call's product and leading dims.
  const GemmStaging st = plan_gemm_staging(shape(1024, 100, 100, 2));
  CHECK(st.n == 100);
  CHECK(st.d.ld == 100);
  CHECK_FALSE(st.d.staged);
}

}  // namespace tg::testing
