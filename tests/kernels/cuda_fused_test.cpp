// The fused kernels of the elementwise and optimizer passes against the unfused ops on
// the GPU, bit for bit: fused_elementwise against its chain run op by op (gelu too: both
// run the functors of kernels/cuda/activation.cuh), over sizes, row lengths, alignment
// and in place; sgd_multi and sgd_momentum_multi against one sgd / sgd_momentum per
// tensor, over more tensors than one launch holds. (CUDA vs the CPU reference: the op
// samples, in cuda_all_ops_test.cpp.) In bf16 and f16: against the f32 kernel rounded once.
#include <doctest/doctest.h>

#include <memory>

#include "graph/shape_inference.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

// x [rows, cols], y [rows, cols], b [cols]: every op of a program, a bias row and gelu.
//   mul(x, y) + b -> gelu -> relu_grad(x, .) -> gelu_grad(., y) -> - x -> * 0.3 -> relu
//   -> tanh -> sigmoid -> log -> log_grad(x, .) -> exp -> sigmoid_grad(., y) -> tanh_grad(., x)
//   -> gelu_erf -> gelu_erf_grad(., y)
const std::vector<EwInstr> kChain = {{EwOp::mul, 0, 1},       {EwOp::add, 3, 2},         {EwOp::gelu, 4},
                                     {EwOp::relu_grad, 0, 5}, {EwOp::gelu_grad, 6, 1},   {EwOp::sub, 7, 0},
                                     {EwOp::scale, 8, 0, 0.3f}, {EwOp::relu, 9},
    // Every transcendental after the relu (>= 0): log reads sigmoid's output (> 0) and
    // log_grad divides by log's result (in [log 0.5, log 0.73), away from 0).
    {EwOp::tanh, 10},          {EwOp::sigmoid, 11},          {EwOp::log, 12},         {EwOp::log_grad, 0, 13},
    {EwOp::exp, 14},           {EwOp::sigmoid_grad, 15, 1},  {EwOp::tanh_grad, 16, 0}, {EwOp::gelu_erf, 17},
    {EwOp::gelu_erf_grad, 18, 1}};

// The chain op by op, each into its own buffer.
std::vector<float> unfused_chain(const DevTensor& x, const DevTensor& y, const DevTensor& b, const Shape& s, bool unaligned) {
  const Shape row{s.last()};
  std::vector<std::unique_ptr<DevTensor>> t;
  auto next = [&] {
    t.push_back(std::make_unique<DevTensor>(s.numel(), unaligned));
    return kernels::TensorView{t.back()->ptr, s};
  };
  const kernels::TensorView X{x.ptr, s}, Y{y.ptr, s}, B{b.ptr, row};
  Attrs none, sc;
  sc.alpha = 0.3f;
  kernels::TensorView v = next();
  run_op(OpKind::mul, {X, Y}, v, none);
  auto step = [&](OpKind op, std::vector<kernels::TensorView> ins, const Attrs& at = Attrs{}) {
    const kernels::TensorView o = next();
    run_op(op, ins, o, at);
    v = o;
  };
  step(OpKind::bias_add, {v, B});
  step(OpKind::gelu, {v});
  step(OpKind::relu_grad, {X, v});
  step(OpKind::gelu_grad, {v, Y});
  step(OpKind::sub, {v, X});
  step(OpKind::scale, {v}, sc);
  step(OpKind::relu, {v});
  step(OpKind::tanh, {v});
  step(OpKind::sigmoid, {v});
  step(OpKind::log, {v});
  step(OpKind::log_grad, {X, v});
  step(OpKind::exp, {v});
  step(OpKind::sigmoid_grad, {v, Y});
  step(OpKind::tanh_grad, {v, X});
  step(OpKind::gelu_erf, {v});
  step(OpKind::gelu_erf_grad, {v, Y});
  return t.back()->download();
}

}  // namespace

TEST_CASE("cuda fused_elementwise == its chain op by op, bitwise: sizes, row lengths, alignment, in place") {
  TG_REQUIRE_GPU();
  Attrs at;
  at.program.code = kChain;
  uint64_t seed = 900;
  int cases = 0;
  for (int64_t cols : {1, 4, 7, 1024})
    for (int64_t rows : {1, 3, 257, 4099})
      for (bool unaligned : {false, true}) {
        const Shape s{rows, cols};
        CAPTURE(s.str());
        CAPTURE(unaligned);
        DevTensor x(s.numel(), unaligned), y(s.numel(), unaligned), b(cols, unaligned), out(s.numel(), unaligned);
        const std::vector<float> hx = random_vector(s.numel(), seed++), hy = random_vector(s.numel(), seed++);
        x.upload(hx);
        y.upload(hy);
        b.upload(random_vector(cols, seed++));
        out.poison();
        TG_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads ran on the default stream
        const std::vector<float> want = unfused_chain(x, y, b, s, unaligned);
        run_op(OpKind::fused_elementwise, {{x.ptr, s}, {y.ptr, s}, {b.ptr, Shape{cols}}}, {out.ptr, s}, at);
        CHECK(compare("fused_elementwise " + s.str(), out.download(), want, Tol{}) == 0);
        // In place over x, which the program reads after its first instruction too.
        run_op(OpKind::fused_elementwise, {{x.ptr, s}, {y.ptr, s}, {b.ptr, Shape{cols}}}, {x.ptr, s}, at);
        CHECK(compare("fused_elementwise in place " + s.str(), x.download(), want, Tol{}) == 0);
        ++cases;
      }
  CHECK(cases == 32);
}

// In bf16 and f16 the chain runs in f32 registers and rounds once at the store, so the
// 16-bit kernel is the f32 kernel on the widened inputs, rounded once: bitwise, the whole
// chain of transcendentals included; and the CPU reference's bits on a chain of plain
// float math. Row lengths around the 8-element packs, sizes with every kind of tail.
TEST_CASE("cuda fused_elementwise in bf16 and f16 == the f32 kernel rounded once, and the CPU reference's bits") {
  TG_REQUIRE_GPU();
  const std::vector<EwInstr> plain = {{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::relu, 4}, {EwOp::scale, 5, 0, 0.5f}};
  uint64_t seed = 950;
  int cases = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t cols : {1, 4, 8, 12, 1024})
      for (int64_t rows : {1, 3, 129, 4099})
        for (bool unaligned : {false, true})
          for (int alias : {-1, 0}) {
            OpCase c;
            c.op = OpKind::fused_elementwise;
            c.in = {Shape{rows, cols}, Shape{rows, cols}, Shape{cols}};
            c.out = Shape{rows, cols};
            c.dtype = dt;
            c.unaligned = unaligned;
            c.alias_input = alias;
            c.seed = seed++;
            c.attrs.program.code = kChain;
            CHECK(run_case_vs_f32(c) == 0);
            c.attrs.program.code = plain;
            TG_CHECK_CASE(c);
            ++cases;
          }
  CHECK(cases == 160);
}

TEST_CASE("cuda sgd_multi and sgd_momentum_multi == one update per tensor, bitwise, over two launches") {
  TG_REQUIRE_GPU();
  // More tensors than one launch holds, of sizes around the chunk and the float4 edges,
  // every third one unaligned.
  const std::vector<int64_t> sizes = {1, 3, 4, 5, 33, 4095, 4096, 4097, 10000, 70001};
  const int count = kernels::cuda::kMultiTensors + 6;
  for (bool momentum : {false, true}) {
    CAPTURE(momentum);
    const OpKind single = momentum ? OpKind::sgd_momentum : OpKind::sgd;
    const OpKind multi = momentum ? OpKind::sgd_momentum_multi : OpKind::sgd_multi;
    const int group = momentum ? 3 : 2;
    Attrs at;
    at.lr = 0.05f;
    at.momentum = 0.9f;
    // Two copies of every tensor: [0] updated one by one, [1] by the multi op.
    std::vector<std::unique_ptr<DevTensor>> t[2];
    std::vector<kernels::TensorView> views[2];
    for (int i = 0; i < count; ++i) {
      const int64_t n = sizes[static_cast<size_t>(i) % sizes.size()];
      const bool unaligned = i % 3 == 2;
      for (int k = 0; k < group; ++k) {
        const std::vector<float> h = random_vector(n, static_cast<uint64_t>(7000 + i * 3 + k));
        for (int copy = 0; copy < 2; ++copy) {
          t[copy].push_back(std::make_unique<DevTensor>(n, unaligned));
          t[copy].back()->upload(h);
          views[copy].push_back({t[copy].back()->ptr, Shape{n}});
        }
      }
    }
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    for (int step = 0; step < 2; ++step) {
      for (int i = 0; i < count; ++i) {
        const auto first = views[0].begin() + i * group;
        run_op(single, std::vector<kernels::TensorView>(first, first + group), {}, at);
      }
      run_op(multi, views[1], {}, at);
    }
    for (size_t j = 0; j < t[0].size(); ++j) {
      if (j % static_cast<size_t>(group) == 1) continue;  // gradients are read only
      CAPTURE(j);
      CHECK(compare("multi update tensor", t[1][j]->download(), t[0][j]->download(), Tol{}) == 0);
    }
  }
}

}  // namespace tg::testing
