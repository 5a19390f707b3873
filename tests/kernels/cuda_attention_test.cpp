// The fused attention kernels (kernels/cuda/attention.cu) against the CPU reference over the
// regimes of their tiles: sequences shorter than a tile, several tiles with a partial last
// one, row blocks past the sequence's end, head dims below, across and at the 32-lane and
// 128-dim limits, causal and not, with and without the padding mask's key lengths (0 among
// them: rows with no key), in every float dtype. These are the own kernels: the backend runs
// with attention_cudnn=0 (cuDNN's path is tests/kernels/cuda_attention_cudnn_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

struct Regime {
  int64_t batch, seq, heads, dh;
};

CudaBackend& own() {
  CudaBackendOptions o;
  o.attention_cudnn = false;
  return backend(o);
}

const Regime kRegimes[] = {{2, 5, 2, 8}, {1, 33, 3, 32}, {2, 70, 2, 40}, {1, 100, 1, 64}, {1, 45, 2, 128}};

// The products sum up to seq terms (dk, dv) in f32 in the kernels' order, in double on the CPU.
Tol attention_tol(int64_t seq) { return Tol{2e-6 * static_cast<double>(seq), 1e-4}; }

void attention_cases(OpKind op) {
  uint64_t seed = 500;
  for (const Regime& r : kRegimes)
    for (const bool causal : {false, true})
      for (const bool padded : {false, true})
        for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
          OpCase c;
          c.op = op;
          c.attrs.heads.count = r.heads;
          c.attrs.alpha = 1.0f / std::sqrt(static_cast<float>(r.dh));
          c.attrs.causal = causal;
          const Shape view{r.batch, r.seq, r.heads * r.dh}, lse{r.batch * r.heads, r.seq, 2};
          if (op == OpKind::attention) {
            c.in = {view, view, view};
            c.out = view;
          } else if (op == OpKind::attention_lse) {
            c.in = {view, view};
            c.out = lse;
          } else {
            c.in = {view, view, view, view, view, lse};
            c.out = Shape{3, r.batch, r.seq, r.heads * r.dh};
          }
          if (padded) {
            // Lengths drawn in [0, seq]: 0 masks every key of its sequence.
            c.in.push_back(Shape{r.batch});
            c.labels_input = static_cast<int>(c.in.size()) - 1;
            c.labels_classes = r.seq + 1;
            c.labels_dtype = DType::I32;
          }
          c.dtype = dt;
          c.tol = dt == DType::F32 ? attention_tol(r.seq) : low_precision_tol(attention_tol(r.seq), dt);
          // The statistic's hi may round the other way near a 16-bit boundary (tests/common/op_samples.h).
          if (op == OpKind::attention_lse && dt != DType::F32) c.tol = Tol{0x1p-4, 0x1p-7};
          c.seed = seed++;
          CHECK(run_case_on(own(), c) == 0);
          // The 16-bit kernels compute as the f32 one does on the widened inputs: its result
          // rounded once, bit for bit (not the statistic, whose 16-bit form is a pair).
          if (dt != DType::F32 && op != OpKind::attention_lse) CHECK(run_case_vs_f32_on(own(), c) == 0);
        }
}

}  // namespace

TEST_CASE("cuda attention: every tile regime, causal and not, padded and not, f32 bf16 f16") {
  TG_REQUIRE_GPU();
  attention_cases(OpKind::attention);
}

TEST_CASE("cuda attention_lse: every tile regime, causal and not, padded and not, f32 bf16 f16") {
  TG_REQUIRE_GPU();
  attention_cases(OpKind::attention_lse);
}

TEST_CASE("cuda attention_grad: every tile regime, causal and not, padded and not, f32 bf16 f16") {
  TG_REQUIRE_GPU();
  attention_cases(OpKind::attention_grad);
}

TEST_CASE("cuda attention refuses heads of more than 128 dims, naming the limit") {
  TG_REQUIRE_GPU();
  OpCase c;
  c.op = OpKind::attention;
  c.attrs.heads.count = 1;
  const Shape view{1, 4, 136};
  c.in = {view, view, view};
  c.out = view;
  CHECK_THROWS_WITH_AS(run_case_on(own(), c), doctest::Contains("at most 128"), std::invalid_argument);
}

}  // namespace tg::testing
