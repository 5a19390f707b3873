// transpose against the CPU, bit for bit, in every class of kernels/cuda/layout.cu: the
// identity (after dropping size-1 dims and merging neighbours), runs that keep the last
// dim (float4 when it is a multiple of 4, the transformer's head split), 64 x 64 tiles
// when the last dim moves (full and partial tiles, up to two batch dims, float4 or
// scalar), each aligned and one element off; in f32 and in the 16-bit dtypes, whose
// vectors hold 8 elements (runs) or 4 in 8 bytes (tiles).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

void check_transpose(const Shape& s, const Perm& perm, uint64_t& seed, DType dt = DType::F32) {
  for (bool unaligned : {false, true}) {
    OpCase c;
    c.op = OpKind::transpose;
    c.attrs.perm = perm;
    c.in = {s};
    Shape o = s;
    for (int d = 0; d < s.rank; ++d) o.dims[static_cast<size_t>(d)] = s[perm[static_cast<size_t>(d)]];
    c.out = o;
    c.dtype = dt;
    c.unaligned = unaligned;
    c.seed = seed++;
    TG_CHECK_CASE(c);
  }
}

}  // namespace

TEST_CASE("cuda transpose: chosen shapes of every class") {
  TG_REQUIRE_GPU();
  struct T {
    Shape s;
    Perm perm;
  };
  const std::vector<T> cases = {
      // the last two dims of a matrix or a batch of them: tiles
      {Shape{7, 1023}, {{1, 0, 2, 3}}}, {Shape{33, 65}, {{1, 0, 2, 3}}}, {Shape{64, 128}, {{1, 0, 2, 3}}},
      {Shape{65, 1025}, {{1, 0, 2, 3}}}, {Shape{130, 68}, {{1, 0, 2, 3}}}, {Shape{4100, 1030}, {{1, 0, 2, 3}}},
      {Shape{3, 33, 65}, {{0, 2, 1, 3}}}, {Shape{3, 100, 68}, {{0, 2, 1, 3}}}, {Shape{2, 3, 64, 33}, {{0, 1, 3, 2}}},
      {Shape{1, 3, 2}, {{0, 2, 1, 3}}},
      // two batch dims around the tile, and full reversals
      {Shape{3, 4, 70, 66}, {{1, 3, 0, 2}}}, {Shape{2, 3, 4, 5}, {{3, 2, 1, 0}}}, {Shape{5, 6, 7, 8}, {{3, 2, 1, 0}}},
      // the last dim stays: runs of 64 (the head split and merge), 4, 6 (scalar), 2
      {Shape{2, 256, 8, 64}, {{0, 2, 1, 3}}}, {Shape{2, 8, 256, 64}, {{0, 2, 1, 3}}}, {Shape{3, 5, 7, 4}, {{0, 2, 1, 3}}},
      {Shape{3, 5, 7, 6}, {{1, 0, 2, 3}}}, {Shape{3, 5, 7, 2}, {{2, 1, 0, 3}}}, {Shape{3, 5, 7}, {{1, 0, 2, 3}}},
      // merged neighbours and size-1 dims: [3,5,7] (2,0,1) is a [15, 7] transpose
      {Shape{3, 5, 7}, {{2, 0, 1, 3}}}, {Shape{5, 1, 7, 8}, {{2, 1, 0, 3}}}, {Shape{1, 5}, {{1, 0, 2, 3}}},
      {Shape{1, 1}, {{1, 0, 2, 3}}}, {Shape{4, 1, 1, 9}, {{0, 2, 1, 3}}},
      // a filter between KCRS and KRSC (a batch of matrices with a short side: slabs), and a
      // matrix too large for a slab (tiles)
      {Shape{64, 3, 7, 7}, {{0, 2, 3, 1}}}, {Shape{32, 64, 3, 3}, {{0, 2, 3, 1}}}, {Shape{32, 3, 3, 64}, {{0, 3, 1, 2}}},
      {Shape{512, 512, 3, 3}, {{0, 2, 3, 1}}}, {Shape{2, 20, 500}, {{0, 2, 1, 3}}},
      // the identity
      {Shape{1023}, {{0, 1, 2, 3}}}, {Shape{4, 9}, {{0, 1, 2, 3}}}, {Shape{2, 3, 4, 5}, {{0, 1, 2, 3}}}};
  uint64_t seed = 7000;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const std::string dtype_label = dtype_name(dt);
    CAPTURE(dtype_label);
    for (const T& t : cases) check_transpose(t.s, t.perm, seed, dt);
  }
}

TEST_CASE("cuda transpose: every permutation of rank-3 and rank-4 shapes") {
  TG_REQUIRE_GPU();
  uint64_t seed = 7500;
  for (const Shape& s : {Shape{3, 4, 5, 8}, Shape{2, 3, 64, 33}, Shape{1, 4, 68, 3}, Shape{9, 65, 4, 1}}) {
    Perm p = identity_perm();
    do {
      for (DType dt : {DType::F32, DType::BF16}) check_transpose(s, p, seed, dt);
    } while (std::next_permutation(p.begin(), p.begin() + 4));
  }
  for (const Shape& s : {Shape{33, 65, 4}, Shape{5, 1, 130}}) {
    Perm p = identity_perm();
    do {
      check_transpose(s, p, seed);
    } while (std::next_permutation(p.begin(), p.begin() + 3));
  }
}

}  // namespace tg::testing

namespace tg::testing {

// Ranks 5 and 6 take the kernels unrolled for kMaxRank dims once the reduction leaves more
// than 4: runs with up to 5 outer dims, tiles with up to 4 batch dims, the 64-bit gather.
TEST_CASE("cuda transpose: every permutation of rank-5 and rank-6 shapes") {
  TG_REQUIRE_GPU();
  uint64_t seed = 7900;
  for (const Shape& s : {Shape{2, 3, 4, 5, 8}, Shape{3, 2, 5, 66, 4}, Shape{2, 3, 2, 5, 3, 4}, Shape{2, 1, 3, 2, 68, 4}}) {
    Perm p = identity_perm();
    do {
      check_transpose(s, p, seed);
    } while (std::next_permutation(p.begin(), p.begin() + s.rank));
  }
  // The 16-bit moves at both ranks, a chosen order each.
  for (DType dt : {DType::BF16, DType::F16}) {
    check_transpose(Shape{2, 3, 4, 5, 8}, perm_of({4, 2, 0, 3, 1}), seed, dt);
    check_transpose(Shape{2, 3, 2, 5, 3, 4}, perm_of({5, 3, 1, 0, 4, 2}), seed, dt);
    check_transpose(Shape{2, 3, 2, 5, 3, 8}, perm_of({3, 1, 4, 0, 2, 5}), seed, dt);
  }
}

}  // namespace tg::testing
