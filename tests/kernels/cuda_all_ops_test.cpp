// Every op of the table against the CPU reference, from the shared samples
// (tests/common/op_samples.h): aligned, unaligned, and in place over input 0 where
// the table's alias column allows it; in f32, and in bf16 and f16 for every op the backend
// has a 16-bit kernel for (Backend::runs, kernels/cuda/dtype_support.cpp). The other files
// of this suite sweep the sizes and regimes of each kernel family; this one is what makes
// a new op, or a new dtype of an op, tested on the GPU the moment it has samples.
#include <doctest/doctest.h>

#include "graph/shape_inference.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

TEST_CASE("cuda == cpu for every op in the table and every dtype it runs (samples, aligned and not, in place)") {
  TG_REQUIRE_GPU();
  uint64_t seed = 5000;
  int ops = 0, low_pairs = 0;
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      if (dt != DType::F32 && !backend().runs(op, dt)) continue;
      low_pairs += dt != DType::F32;
      const std::string dtype_label = dtype_name(dt);
      CAPTURE(dtype_label);
      for (const OpSample& s : op_samples(op)) {
        CAPTURE(s.what);
        OpCase c = sample_case(op, s, 0, dt);
        for (bool unaligned : {false, true}) {
          c.unaligned = unaligned;
          c.alias_input = -1;
          c.seed = seed++;
          TG_CHECK_CASE(c);
          if (!op_is_update(op) && op_output_may_alias(op, 0) && c.out.numel() == s.in[0].numel()) {
            c.alias_input = 0;
            TG_CHECK_CASE(c);
          }
        }
      }
    }
    ++ops;
  }
  MESSAGE(low_pairs, " op and 16-bit dtype pairs run");
  CHECK(ops == kNumOps);
  CHECK(low_pairs > 0);
}

}  // namespace tg::testing
