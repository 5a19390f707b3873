// The entry layer (run_cpu): coverage of every op, rejection of malformed
// calls, and the CPU backend object.
#include <cstdint>
#include <stdexcept>

#include "kernels/backend.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// A small valid call for every op: inputs and attributes.
std::vector<Tensor> inputs_for(OpKind op, Attrs& at) {
  const Shape s{3, 4};
  auto r = [](Shape sh, uint64_t seed) { return random_tensor(sh, seed); };
  switch (op) {
    case OpKind::matmul: return {r({3, 5}, 1), r({5, 4}, 2)};
    case OpKind::bias_add: return {r(s, 1), r({4}, 2)};
    case OpKind::layernorm: return {r(s, 1), r({4}, 2), r({4}, 3)};
    case OpKind::layernorm_grad_x: return {r(s, 1), r(s, 2), r({4}, 3)};
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: at.axis = 0; return {r(s, 1)};
    case OpKind::broadcast: at.axis = 1; at.size = 2; return {r(s, 1)};
    case OpKind::transpose: at.perm = {1, 0, 2, 3}; return {r(s, 1)};
    case OpKind::reshape: at.shape = Shape{12}; return {r(s, 1)};
    case OpKind::mse_loss_grad: return {r(s, 1), r(s, 2), r({1}, 3)};
    case OpKind::padded_mse_loss: return {r(s, 1), r(s, 2), tensor({1}, {7})};
    case OpKind::padded_mse_loss_grad: return {r(s, 1), r(s, 2), tensor({1}, {7}), r({1}, 3)};
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad: {
      Tensor labels = tensor({3}, {0, 3, 1});
      if (op == OpKind::cross_entropy) return {r(s, 1), labels};
      return {r(s, 1), labels, r({1}, 3)};
    }
    case OpKind::fill: at.shape = s; at.value = 2.0f; return {};
    case OpKind::sgd: return {r(s, 1), r(s, 2)};
    case OpKind::sgd_momentum: return {r(s, 1), r(s, 2), r(s, 3)};
    default: break;
  }
  std::vector<Tensor> ins;
  for (int i = 0; i < op_num_inputs(op); ++i) ins.push_back(r(s, static_cast<uint64_t>(i + 1)));
  return ins;
}

}  // namespace

TEST_CASE("run_cpu has a kernel for every op and writes every output element") {
  int covered = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    CAPTURE(op_name(op));
    Attrs at;
    std::vector<Tensor> ins = inputs_for(op, at);
    REQUIRE(static_cast<int>(ins.size()) == op_num_inputs(op));
    if (op_is_update(op)) {
      const std::vector<float> before = ins[0].data;
      kernels::OpCall c;
      c.op = op;
      c.attrs = &at;
      c.num_inputs = op_num_inputs(op);
      for (size_t k = 0; k < ins.size(); ++k) c.in[k] = {ins[k].data.data(), ins[k].shape};
      REQUIRE_NOTHROW(kernels::run_cpu(c));
      CHECK_FALSE(bitwise_equal(ins[0].data, before));
    } else {
      Tensor out;
      REQUIRE_NOTHROW(out = run_op(op, ins, at));
      bool all_finite = true;
      for (float v : out.data) all_finite = all_finite && std::isfinite(v);
      CHECK(all_finite);
    }
    ++covered;
  }
  CHECK(covered == kNumOps);
}

TEST_CASE("run_cpu rejects malformed calls with a message naming the op and the problem") {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), out(6);
  Attrs at;
  kernels::OpCall c;
  c.op = OpKind::add;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {a.data(), Shape{2, 3}};
  c.in[1] = {b.data(), Shape{2, 3}};
  c.out = {out.data(), Shape{2, 3}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("run_cpu add: takes 2 inputs"), std::invalid_argument);
  c.num_inputs = 2;
  c.in[1].data = nullptr;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("input 1 has no data"), std::invalid_argument);
  c.in[1].data = b.data();
  c.out.shape = Shape{7};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("output has shape [7]"), std::invalid_argument);

  kernels::OpCall m;
  m.op = OpKind::matmul;
  m.attrs = &at;
  m.num_inputs = 2;
  m.in[0] = {a.data(), Shape{2, 3}};
  m.in[1] = {b.data(), Shape{2, 3}};
  m.out = {out.data(), Shape{2, 3}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("inner dims"), std::invalid_argument);
  m.in[1].shape = Shape{3, 2};
  m.out = {a.data(), Shape{2, 2}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("cannot run in place"), std::invalid_argument);
  m.out = {out.data(), Shape{2, 2}};
  m.attrs = nullptr;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("attrs is null"), std::invalid_argument);
}

TEST_CASE("cpu backend: 256-aligned allocation, copies, run, synchronize") {
  auto be = make_cpu_backend();
  CHECK(be->kind() == DeviceKind::cpu);
  CHECK(be->name() == "cpu");
  float* x = static_cast<float*>(be->raw_alloc(3 * sizeof(float)));
  float* y = static_cast<float*>(be->raw_alloc(3 * sizeof(float)));
  void* empty = be->raw_alloc(0);
  CHECK(reinterpret_cast<uintptr_t>(x) % 256 == 0);
  CHECK(reinterpret_cast<uintptr_t>(y) % 256 == 0);
  CHECK(empty != nullptr);
  const float host[3] = {1.0f, -2.0f, 3.0f};
  be->copy_to_device(x, host, sizeof host);
  Attrs at;
  kernels::OpCall c;
  c.op = OpKind::relu;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {x, Shape{3}};
  c.out = {y, Shape{3}};
  be->run(c);
  be->synchronize();
  be->copy_on_device(x, y, sizeof host);
  float back[3] = {0, 0, 0};
  be->copy_to_host(back, x, sizeof back);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == 0.0f);
  CHECK(back[2] == 3.0f);
  CHECK_THROWS_WITH(be->raw_alloc(SIZE_MAX - 8), doctest::Contains("cannot allocate"));
  be->raw_free(x);
  be->raw_free(y);
  be->raw_free(empty);
}
