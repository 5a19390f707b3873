// The CPU kernels of the elementwise and optimizer passes: fused_elementwise gives its
// chain's bits op by op, across the tile edges of its loop, with bias rows shorter and
// longer than a tile, in place; the multi updates give one update per tensor's bits; and
// the entry check refuses what the kernels cannot run.
#include <stdexcept>

#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// x, y [rows, cols] and b [cols] through kChain; the same chain op by op.
const std::vector<EwInstr> kChain = {{EwOp::mul, 0, 1},       {EwOp::add, 3, 2},         {EwOp::gelu, 4},
                                     {EwOp::relu_grad, 0, 5}, {EwOp::gelu_grad, 6, 1},   {EwOp::sub, 7, 0},
                                     {EwOp::scale, 8, 0, 0.3f}, {EwOp::relu, 9},
    // Every transcendental after the relu (>= 0): log reads sigmoid's output (> 0) and
    // log_grad divides by log's result (in [log 0.5, log 0.73), away from 0).
    {EwOp::tanh, 10},          {EwOp::sigmoid, 11},          {EwOp::log, 12},         {EwOp::log_grad, 0, 13},
    {EwOp::exp, 14},           {EwOp::sigmoid_grad, 15, 1},  {EwOp::tanh_grad, 16, 0}, {EwOp::gelu_erf, 17},
    {EwOp::gelu_erf_grad, 18, 1}};

Tensor chain_op_by_op(const Tensor& x, const Tensor& y, const Tensor& b) {
  Attrs sc;
  sc.alpha = 0.3f;
  Tensor v = run_op(OpKind::mul, {x, y});
  v = run_op(OpKind::bias_add, {v, b});
  v = run_op(OpKind::gelu, {v});
  v = run_op(OpKind::relu_grad, {x, v});
  v = run_op(OpKind::gelu_grad, {v, y});
  v = run_op(OpKind::sub, {v, x});
  v = run_op(OpKind::scale, {v}, sc);
  v = run_op(OpKind::relu, {v});
  v = run_op(OpKind::tanh, {v});
  v = run_op(OpKind::sigmoid, {v});
  v = run_op(OpKind::log, {v});
  v = run_op(OpKind::log_grad, {x, v});
  v = run_op(OpKind::exp, {v});
  v = run_op(OpKind::sigmoid_grad, {v, y});
  v = run_op(OpKind::tanh_grad, {v, x});
  v = run_op(OpKind::gelu_erf, {v});
  return run_op(OpKind::gelu_erf_grad, {v, y});
}

Attrs chain_attrs() {
  Attrs at;
  at.program.code = kChain;
  return at;
}

}  // namespace

TEST_CASE("cpu fused_elementwise == its chain op by op, bitwise, across tiles, rows and in place") {
  const Attrs at = chain_attrs();
  uint64_t seed = 40;
  for (int64_t cols : {1, 7, 1024, 3000})
    for (int64_t rows : {1, 2, 5, 333}) {
      const Shape s{rows, cols};
      CAPTURE(s.str());
      const Tensor x = random_tensor(s, seed++), y = random_tensor(s, seed++), b = random_tensor(Shape{cols}, seed++);
      const Tensor want = chain_op_by_op(x, y, b);
      CHECK(bitwise_equal(run_op(OpKind::fused_elementwise, {x, y, b}, at).data, want.data));
      // In place over x: the output is x's buffer, which later instructions read too.
      Tensor xi = x, yi = y, bi = b;
      kernels::OpCall c;
      std::vector<Tensor> ins = {xi, yi, bi};
      std::vector<kernels::TensorView> more;
      set_inputs(c, ins, more);
      c.op = OpKind::fused_elementwise;
      c.attrs = &at;
      c.out = {ins[0].data.data(), s};
      kernels::run_cpu(c);
      CHECK(bitwise_equal(ins[0].data, want.data));
    }
}

TEST_CASE("cpu fused_elementwise with more inputs than OpCall::in holds") {
  // ((x0 + x1) + (x2 .. x7), one add each): inputs 4.. go through OpCall::more.
  Attrs at;
  at.program.code = {{EwOp::add, 0, 1}};
  for (uint8_t k = 2; k < 8; ++k) at.program.code.push_back({EwOp::add, static_cast<uint8_t>(8 + k - 2), k});
  std::vector<Tensor> ins;
  for (int k = 0; k < 8; ++k) ins.push_back(random_tensor(Shape{3, 5}, 70 + static_cast<uint64_t>(k)));
  Tensor want = run_op(OpKind::add, {ins[0], ins[1]});
  for (size_t k = 2; k < 8; ++k) want = run_op(OpKind::add, {want, ins[k]});
  CHECK(bitwise_equal(run_op(OpKind::fused_elementwise, ins, at).data, want.data));
}

TEST_CASE("cpu sgd_multi and sgd_momentum_multi == one update per tensor, bitwise") {
  Attrs at;
  at.lr = 0.05f;
  at.momentum = 0.8f;
  for (bool momentum : {false, true}) {
    CAPTURE(momentum);
    const size_t group = momentum ? 3 : 2;
    std::vector<Tensor> multi, single;
    for (int64_t n : {1, 5, 4097, 12}) {
      for (size_t k = 0; k < group; ++k) multi.push_back(random_tensor(Shape{n}, static_cast<uint64_t>(n) * 10 + k));
    }
    single = multi;
    for (int step = 0; step < 3; ++step) {
      kernels::OpCall c;
      std::vector<kernels::TensorView> more;
      set_inputs(c, multi, more);
      c.op = momentum ? OpKind::sgd_momentum_multi : OpKind::sgd_multi;
      c.attrs = &at;
      kernels::run_cpu(c);
      for (size_t i = 0; i < single.size(); i += group) {
        if (momentum) kernels::cpu_sgd_momentum(single[i].data.data(), single[i + 1].data.data(), single[i + 2].data.data(),
                                                at.lr, at.momentum, single[i].shape.numel());
        else kernels::cpu_sgd(single[i].data.data(), single[i + 1].data.data(), at.lr, single[i].shape.numel());
      }
    }
    for (size_t i = 0; i < multi.size(); ++i) CHECK(bitwise_equal(multi[i].data, single[i].data));
  }
}

TEST_CASE("run_cpu refuses fused calls it cannot run, naming the problem") {
  const Attrs at = chain_attrs();
  const Shape s{2, 4};
  std::vector<Tensor> ins = {random_tensor(s, 1), random_tensor(s, 2), random_tensor(Shape{4}, 3)};
  std::vector<float> out(8);
  kernels::OpCall c;
  std::vector<kernels::TensorView> more;
  set_inputs(c, ins, more);
  c.op = OpKind::fused_elementwise;
  c.attrs = &at;
  c.out = {out.data(), s};
  CHECK_NOTHROW(kernels::run_cpu(c));
  c.in[2].shape = Shape{3};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("input 2 has shape [3] (3 elements); the output [2,4] needs 8 or a row of 4"),
                       std::invalid_argument);
  c.in[2].shape = Shape{4};
  c.out.data = ins[2].data.data();
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("output aliases input 2, a row read at every row"),
                       std::invalid_argument);
  c.out.data = out.data();
  Attrs broken = at;
  broken.program.code[3].b = 2;  // no longer reads the previous result
  c.attrs = &broken;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("run_cpu fused_elementwise: instruction 3 (relu_grad) does not read"),
                       std::invalid_argument);
  c.attrs = &at;
  c.num_inputs = kMaxOpInputs + 1;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c),
                       doctest::Contains(fmt::format("has {} inputs but OpCall::more is null", kMaxOpInputs + 1).c_str()),
                       std::invalid_argument);

  Attrs lr;
  std::vector<Tensor> groups = {random_tensor(Shape{4}, 4), random_tensor(Shape{4}, 5), random_tensor(Shape{3}, 6),
                                random_tensor(Shape{3}, 7)};
  kernels::OpCall u;
  set_inputs(u, groups, more);
  u.op = OpKind::sgd_multi;
  u.attrs = &lr;
  CHECK_NOTHROW(kernels::run_cpu(u));
  u.in[3].shape = Shape{4};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(u), doctest::Contains("group 1: input 3 has shape [4] but the parameter (input 2) has 3 elements"),
                       std::invalid_argument);
  u.in[3].shape = Shape{3};
  u.in[2].data = u.in[0].data;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(u), doctest::Contains("inputs 0 and 2 share a buffer, and input 0 is written"),
                       std::invalid_argument);
  u.in[2].data = groups[2].data.data();
  u.in[3].data = u.in[0].data;  // a gradient that another group writes
  CHECK_THROWS_WITH_AS(kernels::run_cpu(u), doctest::Contains("inputs 0 and 3 share a buffer, and input 0 is written"),
                       std::invalid_argument);
}
