// broadcast, concat and slice against the CPU, bit for bit, in every dtype (the moves of
// layout.cu carry any dtype's bits): rows of whole 16-byte vectors (4 f32, 8 16-bit
// elements) and not, every axis, aligned and one element off (the vector paths need both).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

TEST_CASE("cuda broadcast in f32, bf16 and f16: rows of whole 16-byte vectors or not") {
  TG_REQUIRE_GPU();
  uint64_t seed = 6000;
  const std::vector<Shape> shapes = {Shape{1},    Shape{7},    Shape{8},       Shape{1023},   Shape{3, 8},
                                     Shape{5, 7}, Shape{4, 16}, Shape{2, 3, 4}, Shape{3, 2, 24}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const std::string dtype_label = dtype_name(dt);
    CAPTURE(dtype_label);
    for (const Shape& s : shapes)
      for (int axis = 0; axis <= s.rank; ++axis)
        for (int64_t size : {int64_t{1}, int64_t{3}, int64_t{33}})
          for (bool unaligned : {false, true}) {
            OpCase c;
            c.op = OpKind::broadcast;
            c.attrs.axis = axis;
            c.attrs.size = size;
            c.in = {s};
            Shape o;
            for (int d = 0, k = 0; d <= s.rank; ++d) o.dims[static_cast<size_t>(o.rank++)] = d == axis ? size : s[k++];
            c.out = o;
            c.dtype = dt;
            c.unaligned = unaligned;
            c.seed = seed++;
            TG_CHECK_CASE(c);
          }
  }
}

namespace {

// A slice (size > 0) along `axis` from `start`, or a concat of `in`, in dtype dt.
OpCase move_case(OpKind op, int axis, int64_t start, int64_t size, std::vector<Shape> in, Shape out, DType dt,
                 bool unaligned, uint64_t seed) {
  OpCase c;
  c.op = op;
  c.attrs.axis = axis;
  c.attrs.start = start;
  c.attrs.size = size;
  c.in = std::move(in);
  c.out = out;
  c.dtype = dt;
  c.unaligned = unaligned;
  c.seed = seed;
  return c;
}

}  // namespace

TEST_CASE("cuda slice and concat in f32, bf16 and f16: q, k and v of a projection, and rows of no whole vectors") {
  TG_REQUIRE_GPU();
  uint64_t seed = 6500;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const std::string dtype_label = dtype_name(dt);
    CAPTURE(dtype_label);
    for (bool unaligned : {false, true}) {
      // [tokens, 3 d] -> three [tokens, d] (vector rows in every dtype for d = 64), then back.
      for (int64_t d : {int64_t{64}, int64_t{12}, int64_t{5}}) {
        for (int64_t start : {int64_t{0}, d, 2 * d})
          TG_CHECK_CASE(move_case(OpKind::slice, -1, start, d, {Shape{37, 3 * d}}, Shape{37, d}, dt, unaligned, seed++));
        TG_CHECK_CASE(move_case(OpKind::concat, -1, 0, 0, {Shape{37, d}, Shape{37, d}, Shape{37, d}}, Shape{37, 3 * d},
                                dt, unaligned, seed++));
      }
      // Along a middle axis with inner rows: [2, 6, 8] sliced on axis 1 (rows of 8 values).
      TG_CHECK_CASE(move_case(OpKind::slice, 1, 2, 3, {Shape{2, 6, 8}}, Shape{2, 3, 8}, dt, unaligned, seed++));
      // Long rows of no whole vectors (the row kernel): a padded vocabulary's logits cut to
      // their classes, from the start and from an offset; a concat of long odd rows; and
      // rows of 3 x 700 values sliced on a middle axis.
      for (int64_t start : {int64_t{0}, int64_t{3}})
        TG_CHECK_CASE(move_case(OpKind::slice, -1, start, 2053, {Shape{9, 2064}}, Shape{9, 2053}, dt, unaligned, seed++));
      TG_CHECK_CASE(move_case(OpKind::concat, -1, 0, 0, {Shape{5, 1031}, Shape{5, 1201}}, Shape{5, 2232}, dt, unaligned,
                              seed++));
      TG_CHECK_CASE(move_case(OpKind::slice, 1, 1, 3, {Shape{4, 5, 700}}, Shape{4, 3, 700}, dt, unaligned, seed++));
      // Rows enough for a block a row on every SM (the row kernel's vectors, shifted where the
      // two rows start at different offsets from a 16-byte boundary): the same slices and concat.
      for (int64_t start : {int64_t{0}, int64_t{3}})
        TG_CHECK_CASE(move_case(OpKind::slice, -1, start, 2053, {Shape{200, 2064}}, Shape{200, 2053}, dt, unaligned,
                                seed++));
      TG_CHECK_CASE(move_case(OpKind::concat, -1, 0, 0, {Shape{200, 1031}, Shape{200, 1201}}, Shape{200, 2232}, dt,
                              unaligned, seed++));
    }
  }
}

}  // namespace tg::testing
