// Elementwise ops, bias_add and the optimizer updates: plain float arithmetic is
// expected to match the CPU reference bit for bit; the transcendentals (gelu, tanh, ...:
// float vs double) within a tolerance. In bf16 and f16 the same, through one rounding of
// the f32 result (cuda_op_harness.h's low_precision_tol), and bitwise against the f32
// kernel's result rounded once.
#include <doctest/doctest.h>

#include <string>

#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

constexpr Tol kExact{0, 0};
constexpr Tol kGelu{2e-6, 2e-5};  // the transcendentals' too: a few ulp

// Every size, aligned and unaligned, plus an in-place run where the op allows it. In bf16
// and f16 (tol: the f32 one, low_precision_tol widens it) also against the f32 kernel on
// the same inputs, rounded once: bitwise. kSizes and sizes around the 8-element packs of the
// 16-bit vector path: every tail length, above the small-tensor kernel.
void elementwise_cases(OpKind op, int nin, Tol tol, bool in_place, unsigned positive_inputs = 0,
                       DType dt = DType::F32) {
  std::vector<int64_t> sizes = kSizes;
  if (dt != DType::F32)
    for (int64_t n = 1025; n <= 1032; ++n) sizes.push_back(n);
  uint64_t seed = 1;
  for (int64_t n : sizes)
    for (bool unaligned : {false, true}) {
      OpCase c;
      c.op = op;
      c.attrs.alpha = 0.37f;
      c.attrs.lr = 0.05f;
      c.attrs.momentum = 0.9f;
      for (int i = 0; i < nin; ++i) c.in.push_back(Shape{n});
      c.out = Shape{n};
      c.tol = low_precision_tol(tol, dt);
      c.dtype = dt;
      c.unaligned = unaligned;
      c.seed = seed++;
      c.positive_inputs = positive_inputs;
      TG_CHECK_CASE(c);
      if (dt != DType::F32) CHECK(run_case_vs_f32(c) == 0);
      if (in_place && !op_is_update(op)) {
        c.alias_input = 0;
        TG_CHECK_CASE(c);
        if (dt != DType::F32) CHECK(run_case_vs_f32(c) == 0);
      }
    }
}

}  // namespace

TEST_CASE("cuda add") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::add, 2, kExact, true); }
TEST_CASE("cuda sub") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::sub, 2, kExact, true); }
TEST_CASE("cuda mul") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::mul, 2, kExact, true); }
TEST_CASE("cuda scale") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::scale, 1, kExact, true); }
TEST_CASE("cuda relu (and in place)") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::relu, 1, kExact, true); }
TEST_CASE("cuda relu_grad") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::relu_grad, 2, kExact, true); }
TEST_CASE("cuda gelu") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::gelu, 1, kGelu, true); }
TEST_CASE("cuda gelu_grad") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::gelu_grad, 2, kGelu, true); }
TEST_CASE("cuda tanh, sigmoid, exp, log, gelu_erf and their gradients") {
  TG_REQUIRE_GPU();
  for (OpKind op : {OpKind::tanh, OpKind::sigmoid, OpKind::exp, OpKind::gelu_erf}) elementwise_cases(op, 1, kGelu, true);
  for (OpKind op : {OpKind::tanh_grad, OpKind::sigmoid_grad, OpKind::gelu_erf_grad}) elementwise_cases(op, 2, kGelu, true);
  elementwise_cases(OpKind::log, 1, kGelu, true, 1u);       // x in [0.25, 1)
  elementwise_cases(OpKind::log_grad, 2, kGelu, true, 2u);  // (dy, x), x in [0.25, 1)
}
TEST_CASE("cuda elementwise ops and activations in bf16 and f16: every size and tail, aligned and not") {
  TG_REQUIRE_GPU();
  struct Op {
    OpKind op;
    int inputs;
    Tol tol;  // of the f32 kernel against the CPU
    unsigned positive_inputs = 0;
  };
  const Op ops[] = {{OpKind::add, 2, kExact},        {OpKind::sub, 2, kExact},
                    {OpKind::mul, 2, kExact},        {OpKind::scale, 1, kExact},
                    {OpKind::relu, 1, kExact},       {OpKind::relu_grad, 2, kExact},
                    {OpKind::gelu, 1, kGelu},        {OpKind::gelu_grad, 2, kGelu},
                    {OpKind::tanh, 1, kGelu},        {OpKind::tanh_grad, 2, kGelu},
                    {OpKind::sigmoid, 1, kGelu},     {OpKind::sigmoid_grad, 2, kGelu},
                    {OpKind::exp, 1, kGelu},         {OpKind::log, 1, kGelu, 1u},
                    {OpKind::log_grad, 2, kGelu, 2u}, {OpKind::gelu_erf, 1, kGelu},
                    {OpKind::gelu_erf_grad, 2, kGelu}, {OpKind::copy, 1, kExact}};
  for (DType dt : {DType::BF16, DType::F16})
    for (const Op& o : ops) {
      const std::string label = std::string(op_name(o.op)) + " in " + dtype_name(dt);
      CAPTURE(label);
      elementwise_cases(o.op, o.inputs, o.tol, o.op != OpKind::copy, o.positive_inputs, dt);
    }
}

TEST_CASE("cuda copy") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::copy, 1, kExact, false); }
TEST_CASE("cuda sgd") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::sgd, 2, kExact, false); }
TEST_CASE("cuda sgd_momentum") { TG_REQUIRE_GPU(); elementwise_cases(OpKind::sgd_momentum, 3, kExact, false); }

TEST_CASE("cuda reshape (copy when given its own memory, no-op when aliased), in every dtype") {
  TG_REQUIRE_GPU();
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{4099}}) {
      OpCase c;
      c.op = OpKind::reshape;
      c.attrs.shape = Shape{n, 1};
      c.in = {Shape{n}};
      c.out = Shape{n, 1};
      c.dtype = dt;
      TG_CHECK_CASE(c);
      c.alias_input = 0;
      TG_CHECK_CASE(c);
    }
}

TEST_CASE("cuda fill") {
  TG_REQUIRE_GPU();
  for (int64_t n : kSizes)
    for (bool unaligned : {false, true}) {
      OpCase c;
      c.op = OpKind::fill;
      c.attrs.value = -2.5f;
      c.attrs.shape = Shape{n};
      c.out = Shape{n};
      c.unaligned = unaligned;
      TG_CHECK_CASE(c);
    }
}

TEST_CASE("cuda bias_add, in f32, bf16 and f16 (rows of whole 16-byte packs or not)") {
  TG_REQUIRE_GPU();
  uint64_t seed = 100;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{300}})
      for (int64_t cols : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{8}, int64_t{12}, int64_t{1023},
                           int64_t{1024}})
        for (bool unaligned : {false, true}) {
          OpCase c;
          c.op = OpKind::bias_add;
          c.in = {Shape{rows, cols}, Shape{cols}};
          c.out = Shape{rows, cols};
          c.dtype = dt;
          c.unaligned = unaligned;
          c.seed = seed++;
          TG_CHECK_CASE(c);
          c.alias_input = 0;
          TG_CHECK_CASE(c);
        }
}

TEST_CASE("cuda padded_mse_loss_grad: the CPU's bits, 0 past the count") {
  TG_REQUIRE_GPU();
  uint64_t seed = 260;
  for (int64_t n : kSizes)
    for (bool unaligned : {false, true})
      for (int64_t count : {int64_t{1}, (n + 1) / 2, n}) {
        OpCase c;
        c.op = OpKind::padded_mse_loss_grad;
        c.in = {Shape{n}, Shape{n}, Shape{1}, Shape{1}};
        c.out = Shape{n};
        c.count_input = 2;
        c.count_value = static_cast<float>(count);
        c.unaligned = unaligned;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

TEST_CASE("cuda mse_loss_grad") {
  TG_REQUIRE_GPU();
  uint64_t seed = 200;
  for (int64_t n : kSizes)
    for (bool unaligned : {false, true}) {
      OpCase c;
      c.op = OpKind::mse_loss_grad;
      c.in = {Shape{n}, Shape{n}, Shape{1}};
      c.out = Shape{n};
      c.unaligned = unaligned;
      c.seed = seed++;
      TG_CHECK_CASE(c);
    }
}

}  // namespace tg::testing
