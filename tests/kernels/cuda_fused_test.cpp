// The fused kernels of the elementwise and optimizer passes against the unfused ops on
// the GPU, bit for bit: fused_elementwise against its chain run op by op (gelu too: both
// run the functors of kernels/cuda/activation.cuh), over sizes, row lengths, alignment
// and in place; sgd_multi and sgd_momentum_multi against one sgd / sgd_momentum per
// tensor, over more tensors than one launch holds. (CUDA vs the CPU reference: the op
// samples, in cuda_all_ops_test.cpp.) In bf16 and f16, and across casts between f32 and
// them: against the chain op by op in its dtypes.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"
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

// The chain op by op in dtype dt, each into its own buffer.
std::vector<float> unfused_chain(const DevTensor& x, const DevTensor& y, const DevTensor& b, const Shape& s, bool unaligned,
                                 DType dt = DType::F32) {
  const Shape row{s.last()};
  std::vector<std::unique_ptr<DevTensor>> t;
  auto next = [&] {
    t.push_back(std::make_unique<DevTensor>(s.numel(), unaligned, dt));
    return t.back()->view(s);
  };
  const kernels::TensorView X = x.view(s), Y = y.view(s), B = b.view(row);
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

// In bf16 and f16 each instruction rounds its result to the dtype, as the unfused op's
// store does: the fused kernel gives the chain's bits op by op in that dtype, the whole
// chain of transcendentals included; and the CPU reference's bits on a chain of plain
// float math. Row lengths around the 8-element packs, sizes with every kind of tail.
TEST_CASE("cuda fused_elementwise in bf16 and f16 == its chain op by op in that dtype, and the CPU reference's bits") {
  TG_REQUIRE_GPU();
  const std::vector<EwInstr> plain = {{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::relu, 4}, {EwOp::scale, 5, 0, 0.5f}};
  Attrs at;
  at.program.code = kChain;
  uint64_t seed = 950;
  int cases = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t cols : {1, 4, 8, 12, 1024})
      for (int64_t rows : {1, 3, 129, 4099})
        for (bool unaligned : {false, true}) {
          const Shape s{rows, cols};
          CAPTURE(dtype_name(dt));
          CAPTURE(s.str());
          CAPTURE(unaligned);
          DevTensor x(s.numel(), unaligned, dt), y(s.numel(), unaligned, dt), b(cols, unaligned, dt),
              out(s.numel(), unaligned, dt);
          x.upload(random_vector(s.numel(), seed++));
          y.upload(random_vector(s.numel(), seed++));
          b.upload(random_vector(cols, seed++));
          out.poison();
          TG_CUDA_CHECK(cudaDeviceSynchronize());
          const std::vector<float> want = unfused_chain(x, y, b, s, unaligned, dt);
          run_op(OpKind::fused_elementwise, {x.view(s), y.view(s), b.view(Shape{cols})}, out.view(s), at);
          CHECK(compare("fused_elementwise " + s.str(), out.download(), want, Tol{}) == 0);
          run_op(OpKind::fused_elementwise, {x.view(s), y.view(s), b.view(Shape{cols})}, x.view(s), at);
          CHECK(compare("fused_elementwise in place " + s.str(), x.download(), want, Tol{}) == 0);
          for (int alias : {-1, 0}) {
            OpCase c;
            c.op = OpKind::fused_elementwise;
            c.in = {s, s, Shape{cols}};
            c.out = s;
            c.dtype = dt;
            c.unaligned = unaligned;
            c.alias_input = alias;
            c.seed = seed++;
            c.attrs.program.code = plain;
            TG_CHECK_CASE(c);
          }
          ++cases;
        }
  CHECK(cases == 80);
}

namespace {

// A device value: a tensor of its dtype and its shape.
struct Dev {
  std::shared_ptr<DevTensor> t;
  Shape s;
  kernels::TensorView view() const { return t->view(s); }
};

Dev dev_upload(const std::vector<float>& h, const Shape& s, DType dt, bool unaligned) {
  Dev d{std::make_shared<DevTensor>(s.numel(), unaligned, dt), s};
  d.t->upload(h);
  return d;
}

// One op over device values into a new one of dtype dt, shaped as its largest input.
Dev dev_run(OpKind op, const std::vector<Dev>& ins, DType dt, bool unaligned, const Attrs& at = {}) {
  Shape s = ins[0].s;
  std::vector<kernels::TensorView> views;
  for (const Dev& d : ins) {
    if (d.s.numel() > s.numel()) s = d.s;
    views.push_back(d.view());
  }
  Dev out{std::make_shared<DevTensor>(s.numel(), unaligned, dt), s};
  out.t->poison();
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  run_op(op, views, out.view(), at);
  return out;
}

Attrs cast_to(DType dt) {
  Attrs a;
  a.to = dt;
  return a;
}
EwInstr cast_instr(uint8_t a, DType to) { return {EwOp::cast, a, 0, 1.0f, to}; }

}  // namespace

// Programs over f32 and bf16 or f16 with a cast first (autocast's residual add), in the
// middle and last, against their ops one by one on the GPU, bitwise: the vector path
// (aligned, rows of a multiple of 8) and the scalar one, tails, rows, in place. The
// plain-arithmetic chain matches the CPU reference's bits too.
TEST_CASE("cuda fused_elementwise across dtypes == its ops one by one, bitwise: a cast first, in the middle, last") {
  TG_REQUIRE_GPU();
  uint64_t seed = 1300;
  int cases = 0;
  const DType f32 = DType::F32;
  for (DType low : {DType::BF16, DType::F16})
    for (int64_t cols : {1, 4, 8, 12, 1024})
      for (int64_t rows : {1, 3, 129, 4099})
        for (bool unaligned : {false, true}) {
          const Shape s{rows, cols}, row{cols};
          CAPTURE(dtype_name(low));
          CAPTURE(s.str());
          CAPTURE(unaligned);
          const std::vector<float> hx = random_vector(s.numel(), seed++), hh = random_vector(s.numel(), seed++),
                                   hb = random_vector(cols, seed++);
          const Dev x = dev_upload(hx, s, f32, unaligned), y = dev_upload(random_vector(s.numel(), seed++), s, f32, unaligned);
          const Dev h = dev_upload(hh, s, low, unaligned), g = dev_upload(random_vector(s.numel(), seed++), s, low, unaligned);
          const Dev b = dev_upload(hb, row, f32, unaligned), bl = dev_upload(random_vector(cols, seed++), row, low, unaligned);
          TG_CUDA_CHECK(cudaDeviceSynchronize());
          Attrs half;
          half.alpha = 0.5f;
          struct Chain {
            const char* what;
            Attrs at;
            std::vector<Dev> ins;
            Dev want;
          };
          Attrs middle, first, last;
          middle.program.code = {{EwOp::mul, 1, 2}, cast_instr(3, low), {EwOp::add, 4, 0}, {EwOp::gelu, 5}};
          first.program.code = {cast_instr(0, f32), {EwOp::add, 1, 3}, {EwOp::add, 4, 2}, {EwOp::scale, 5, 0, 0.5f}};
          last.program.code = {{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::tanh, 4}, cast_instr(5, f32)};
          const Dev m = dev_run(OpKind::cast, {dev_run(OpKind::mul, {x, y}, f32, unaligned)}, low, unaligned, cast_to(low));
          const Dev r = dev_run(OpKind::add, {x, dev_run(OpKind::cast, {h}, f32, unaligned, cast_to(f32))}, f32, unaligned);
          const Dev t = dev_run(OpKind::tanh, {dev_run(OpKind::bias_add, {dev_run(OpKind::mul, {h, g}, low, unaligned), bl},
                                                       low, unaligned)},
                                low, unaligned);
          const std::vector<Chain> chains = {
              {"cast in the middle", middle, {h, x, y}, dev_run(OpKind::gelu, {dev_run(OpKind::add, {m, h}, low, unaligned)}, low, unaligned)},
              {"cast first", first, {h, x, b},
               dev_run(OpKind::scale, {dev_run(OpKind::bias_add, {r, b}, f32, unaligned)}, f32, unaligned, half)},
              {"cast last", last, {h, g, bl}, dev_run(OpKind::cast, {t}, f32, unaligned, cast_to(f32))}};
          for (const Chain& c : chains) {
            CAPTURE(c.what);
            const Dev got = dev_run(OpKind::fused_elementwise, c.ins, c.want.t->dt, unaligned, c.at);
            CHECK(compare(std::string("fused_elementwise ") + c.what, got.t->download(), c.want.t->download(), Tol{}) == 0);
            ++cases;
          }
          // In place over h, the input of the output's dtype.
          const Dev hi = dev_upload(hh, s, low, unaligned);
          TG_CUDA_CHECK(cudaDeviceSynchronize());
          run_op(OpKind::fused_elementwise, {hi.view(), x.view(), y.view()}, hi.view(), middle);
          CHECK(compare("fused_elementwise in place", hi.t->download(), chains[0].want.t->download(), Tol{}) == 0);
          // The CPU reference on the same values (uploaded rounded, so read back) gives the bits
          // of the chain of plain arithmetic.
          std::vector<float> cpu_out(static_cast<size_t>(s.numel()));
          std::vector<std::vector<char>> host;
          kernels::OpCall call;
          call.op = OpKind::fused_elementwise;
          call.attrs = &first;
          for (const Dev& d : {h, x, b}) {
            const std::vector<float> v = d.t->download();
            host.emplace_back(v.size() * static_cast<size_t>(dtype_size(d.t->dt)));
            store_as_dtype(v.data(), v.size(), d.t->dt, host.back().data());
            call.in[static_cast<size_t>(call.num_inputs++)] = {reinterpret_cast<float*>(host.back().data()), d.s, d.t->dt};
          }
          call.out = {cpu_out.data(), s, f32};
          kernels::run_cpu(call);
          CHECK(compare("fused_elementwise vs the CPU reference", chains[1].want.t->download(), cpu_out, Tol{}) == 0);
        }
  CHECK(cases == 240);
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
