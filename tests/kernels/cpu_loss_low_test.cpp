// cross_entropy and cross_entropy_grad on bf16 and f16 logits (graph/op.h kTypeLogits) on
// the CPU reference: the loss is bit for bit the f32 loss of the widened logits, the
// gradient that f32 gradient rounded once to the logits' dtype, whatever the labels' dtype
// and with ignored rows; dloss and the loss stay f32, and calls that break that are refused.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/float_formats.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// Labels of one dtype (i32, i64, or f32 whole numbers), every fifth row ignore_index.
struct Labels {
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<float> f32;
  DType dt;
  Labels(int64_t rows, int64_t cols, DType dtype, int64_t ignore, uint64_t seed) : dt(dtype) {
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<int64_t> cls(0, cols - 1);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t l = r % 5 == 3 ? ignore : cls(gen);
      i32.push_back(static_cast<int32_t>(l));
      i64.push_back(l);
      f32.push_back(static_cast<float>(l));
    }
  }
  kernels::TensorView view() {
    const Shape s{static_cast<int64_t>(i64.size())};
    if (dt == DType::I32) return testing::view(i32, s, dt);
    if (dt == DType::I64) return testing::view(i64, s, dt);
    return {f32.data(), s, DType::F32};
  }
};

kernels::OpCall ce_call(OpKind op, const Attrs& at, kernels::TensorView logits, kernels::TensorView labels,
                        kernels::TensorView dloss, kernels::TensorView out) {
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = op == OpKind::cross_entropy ? 2 : 3;
  c.in[0] = logits;
  c.in[1] = labels;
  if (op == OpKind::cross_entropy_grad) c.in[2] = dloss;
  c.out = out;
  return c;
}

bool same_bits(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

}  // namespace

TEST_CASE("cross_entropy(_grad) on bf16 and f16 logits: the f32 ops' bits on the widened logits, the gradient "
          "rounded once") {
  struct Size {
    int64_t rows, cols;
  };
  uint64_t seed = 40;
  for (DType dt : {DType::BF16, DType::F16})
    for (const Size z : {Size{1, 2}, Size{9, 7}, Size{23, 130}, Size{6, 5003}})
      for (DType ldt : {DType::I32, DType::I64, DType::F32})
        for (int64_t ignore : {int64_t{-100}, int64_t{1}}) {
          if (z.rows == 1 && ignore == 1) continue;  // its one row may be labelled 1: nothing left (the test below)
          const std::string label = std::string(dtype_name(dt)) + " [" + std::to_string(z.rows) + "," +
                                    std::to_string(z.cols) + "] " + dtype_name(ldt) + " labels, ignore_index " +
                                    std::to_string(ignore);
          CAPTURE(label);
          const Shape xs{z.rows, z.cols};
          const size_t n = static_cast<size_t>(xs.numel());
          // Logits spread wide enough that the 16-bit rounding matters, the widened copy exact.
          std::vector<float> wide(n);
          std::mt19937_64 gen(seed++);
          std::normal_distribution<float> nd(0.0f, 4.0f);
          for (float& v : wide) v = round_to_dtype(nd(gen), dt);
          std::vector<uint16_t> low(n);
          store_as_dtype(wide.data(), n, dt, low.data());
          Labels labels(z.rows, z.cols, ldt, ignore, seed++);
          Attrs at;
          at.ignore_index = ignore;
          std::vector<float> dloss = {0.75f};
          const kernels::TensorView dl{dloss.data(), Shape{1}, DType::F32};

          float loss16 = -1.0f, loss32 = -2.0f;
          kernels::run_cpu(ce_call(OpKind::cross_entropy, at, view(low, xs, dt), labels.view(), {},
                                   {&loss16, Shape{1}, DType::F32}));
          kernels::run_cpu(ce_call(OpKind::cross_entropy, at, {wide.data(), xs, DType::F32}, labels.view(), {},
                                   {&loss32, Shape{1}, DType::F32}));
          CHECK(std::isfinite(loss32));
          CHECK(same_bits(&loss16, &loss32, sizeof(float)));

          std::vector<uint16_t> grad16(n, 0xFFFF), want16(n);
          std::vector<float> grad32(n, -3.0f);
          kernels::run_cpu(ce_call(OpKind::cross_entropy_grad, at, view(low, xs, dt), labels.view(), dl,
                                   view(grad16, xs, dt)));
          kernels::run_cpu(ce_call(OpKind::cross_entropy_grad, at, {wide.data(), xs, DType::F32}, labels.view(), dl,
                                   {grad32.data(), xs, DType::F32}));
          store_as_dtype(grad32.data(), n, dt, want16.data());
          CHECK(same_bits(grad16.data(), want16.data(), n * sizeof(uint16_t)));
          // The ignored rows' gradient is 0; the others' not all 0.
          bool zero_ignored = true, any_nonzero = false;
          for (int64_t r = 0; r < z.rows; ++r)
            for (int64_t j = 0; j < z.cols; ++j) {
              const float g = grad32[static_cast<size_t>(r * z.cols + j)];
              if (r % 5 == 3 && ignore == -100) zero_ignored = zero_ignored && g == 0.0f;
              any_nonzero = any_nonzero || g != 0.0f;
            }
          CHECK(zero_ignored);
          CHECK(any_nonzero);

          // In the logits' own memory (the op table lets the gradient alias them): the same bits.
          std::vector<uint16_t> in_place = low;
          kernels::run_cpu(ce_call(OpKind::cross_entropy_grad, at, view(in_place, xs, dt), labels.view(), dl,
                                   view(in_place, xs, dt)));
          CHECK(same_bits(in_place.data(), want16.data(), n * sizeof(uint16_t)));
        }
}

TEST_CASE("cross_entropy(_grad) on bf16 logits with every row ignored: a NaN loss, a zero gradient, as in f32") {
  const Shape xs{4, 3};
  std::vector<uint16_t> low(12);
  std::vector<float> wide(12);
  random_fill(wide, 5, -2.0f, 2.0f);
  for (float& v : wide) v = round_to_dtype(v, DType::BF16);
  store_as_dtype(wide.data(), 12, DType::BF16, low.data());
  std::vector<int64_t> labels(4, -100);
  Attrs at;
  std::vector<float> dloss = {1.0f};
  float loss = 0.0f;
  kernels::run_cpu(ce_call(OpKind::cross_entropy, at, view(low, xs, DType::BF16), view(labels, Shape{4}, DType::I64),
                           {}, {&loss, Shape{1}, DType::F32}));
  CHECK(std::isnan(loss));
  std::vector<uint16_t> grad(12, 0xFFFF);
  kernels::run_cpu(ce_call(OpKind::cross_entropy_grad, at, view(low, xs, DType::BF16),
                           view(labels, Shape{4}, DType::I64), {dloss.data(), Shape{1}, DType::F32},
                           view(grad, xs, DType::BF16)));
  CHECK(grad == std::vector<uint16_t>(12, 0));  // +0 in bf16
}

TEST_CASE("cross_entropy(_grad): the loss and dloss are f32, the gradient has the logits' dtype, others are refused") {
  const Shape xs{2, 3};
  std::vector<uint16_t> low(6, 0), grad16(6), dloss16(1, 0x3F80), loss16(1);
  std::vector<float> wide(6, 0.0f), grad32(6), dloss = {1.0f};
  std::vector<int32_t> labels = {0, 2};
  Attrs at;
  const kernels::TensorView lv = view(labels, Shape{2}, DType::I32);
  const kernels::TensorView dl{dloss.data(), Shape{1}, DType::F32};
  auto refused = [](const kernels::OpCall& c, const char* what) {
    CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains(what), std::invalid_argument);
  };
  // A 16-bit loss.
  refused(ce_call(OpKind::cross_entropy, at, view(low, xs, DType::BF16), lv, {}, view(loss16, Shape{1}, DType::BF16)),
          "the output is bf16 but the op needs f32 there");
  // A 16-bit dloss.
  refused(ce_call(OpKind::cross_entropy_grad, at, view(low, xs, DType::BF16), lv, view(dloss16, Shape{1}, DType::BF16),
                  view(grad16, xs, DType::BF16)),
          "input 2 is bf16 but the op needs f32 there");
  // An f32 gradient of bf16 logits, a bf16 gradient of f32 ones.
  refused(ce_call(OpKind::cross_entropy_grad, at, view(low, xs, DType::BF16), lv, dl, {grad32.data(), xs, DType::F32}),
          "the output is f32 but the op needs bf16 there");
  refused(ce_call(OpKind::cross_entropy_grad, at, {wide.data(), xs, DType::F32}, lv, dl, view(grad16, xs, DType::BF16)),
          "the output is bf16 but the op needs f32 there");
}
