// broadcast against the CPU, bit for bit, in every dtype (the moves of layout.cu carry any
// dtype's bits): rows of whole 16-byte vectors (4 f32, 8 16-bit elements) and not, every
// axis, aligned and one element off. concat and slice, which have no vector path, run
// their samples in every dtype (cuda_all_ops_test.cpp).
#include <doctest/doctest.h>

#include <string>

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

}  // namespace tg::testing
