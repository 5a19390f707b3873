// fused_elementwise across dtypes on the CPU: a program whose values are f32 and bf16 or
// f16, a cast at its start, in its middle or at its end, gives the bits of its ops run
// one by one in their own dtypes (each rounding its result as it stores it); a program of
// one 16-bit dtype rounds after every instruction, as the unfused chain does; and the
// entry check refuses views whose dtypes the program does not give.
#include <cstring>
#include <stdexcept>

#include "graph/float_formats.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// Values of one dtype in host memory (dtype_size bytes each).
struct Buf {
  Shape shape;
  DType dtype = DType::F32;
  std::vector<uint8_t> bytes;
  Buf(Shape s, DType dt) : shape(s), dtype(dt), bytes(static_cast<size_t>(s.numel() * dtype_size(dt)), 0xEE) {}
  Buf(const Tensor& t, DType dt) : Buf(t.shape, dt) { store_as_dtype(t.data.data(), t.data.size(), dt, bytes.data()); }
  kernels::TensorView view() { return {reinterpret_cast<float*>(bytes.data()), shape, dtype}; }
};

// One op over `ins` into a new buffer of `out_dtype`, shaped as its largest input.
Buf run(OpKind op, std::vector<Buf*> ins, DType out_dtype, const Attrs& at = {}) {
  Shape s = ins[0]->shape;
  for (const Buf* b : ins)
    if (b->shape.numel() > s.numel()) s = b->shape;
  Buf out(s, out_dtype);
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  for (Buf* b : ins) c.in[static_cast<size_t>(c.num_inputs++)] = b->view();
  c.out = out.view();
  kernels::run_cpu(c);
  return out;
}

Attrs cast_to(DType dt) {
  Attrs a;
  a.to = dt;
  return a;
}
Attrs scaled(float alpha) {
  Attrs a;
  a.alpha = alpha;
  return a;
}
Attrs program(std::vector<EwInstr> code) {
  Attrs a;
  a.program.code = std::move(code);
  return a;
}
EwInstr cast_instr(uint8_t a, DType to) { return {EwOp::cast, a, 0, 1.0f, to}; }

bool same_bytes(const Buf& a, const Buf& b) { return a.dtype == b.dtype && a.bytes == b.bytes; }

// The chains, each with its inputs and its op-by-op result.
struct Case {
  const char* what;
  Attrs at;
  std::vector<Buf*> ins;
  Buf want;
};

}  // namespace

TEST_CASE("cpu fused_elementwise across dtypes == its ops one by one, bitwise: a cast first, in the middle, last") {
  uint64_t seed = 500;
  int cases = 0;
  for (DType low : {DType::BF16, DType::F16})
    for (int64_t cols : {1, 7, 1024, 3000})
      for (int64_t rows : {1, 5, 333}) {
        const Shape s{rows, cols}, row{cols};
        CAPTURE(dtype_name(low));
        CAPTURE(s.str());
        Buf x(random_tensor(s, seed++), DType::F32), y(random_tensor(s, seed++), DType::F32);
        Buf h(random_tensor(s, seed++), low), g(random_tensor(s, seed++), low);
        Buf b(random_tensor(row, seed++), DType::F32), bl(random_tensor(row, seed++), low);
        // A: x * y in f32, cast to low, + h, gelu: the output low.
        Buf m = run(OpKind::mul, {&x, &y}, DType::F32);
        Buf mc = run(OpKind::cast, {&m}, low, cast_to(low));
        Buf ma = run(OpKind::add, {&mc, &h}, low);
        Case a{"cast in the middle",
               program({{EwOp::mul, 1, 2}, cast_instr(3, low), {EwOp::add, 4, 0}, {EwOp::gelu, 5}}),
               {&h, &x, &y},
               run(OpKind::gelu, {&ma}, low)};
        // B: the residual of autocast's GEMMs: x + cast(h) to f32, a bias row, * 0.5: the output f32.
        Buf hc = run(OpKind::cast, {&h}, DType::F32, cast_to(DType::F32));
        Buf r = run(OpKind::add, {&x, &hc}, DType::F32);
        Buf rb = run(OpKind::bias_add, {&r, &b}, DType::F32);
        Case first{"cast first",
                   program({cast_instr(0, DType::F32), {EwOp::add, 1, 3}, {EwOp::add, 4, 2}, {EwOp::scale, 5, 0, 0.5f}}),
                   {&h, &x, &b},
                   run(OpKind::scale, {&rb}, DType::F32, scaled(0.5f))};
        // C: h * g in low, a low bias row, tanh, cast to f32.
        Buf p = run(OpKind::mul, {&h, &g}, low);
        Buf pb = run(OpKind::bias_add, {&p, &bl}, low);
        Buf pt = run(OpKind::tanh, {&pb}, low);
        Case last{"cast last",
                  program({{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::tanh, 4}, cast_instr(5, DType::F32)}),
                  {&h, &g, &bl},
                  run(OpKind::cast, {&pt}, DType::F32, cast_to(DType::F32))};
        for (Case* c : {&a, &first, &last}) {
          CAPTURE(c->what);
          CHECK(same_bytes(run(OpKind::fused_elementwise, c->ins, c->want.dtype, c->at), c->want));
          ++cases;
        }
        // In place over h, the input of the output's dtype, which the program reads after a
        // cast and a mul.
        kernels::OpCall c;
        c.op = OpKind::fused_elementwise;
        c.attrs = &a.at;
        Buf hi = h;
        for (Buf* in : {&hi, &x, &y}) c.in[static_cast<size_t>(c.num_inputs++)] = in->view();
        c.out = hi.view();
        kernels::run_cpu(c);
        CHECK(same_bytes(hi, a.want));
      }
  CHECK(cases == 72);
}

TEST_CASE("cpu fused_elementwise in bf16 and f16 rounds after every instruction, as the unfused ops store") {
  for (DType low : {DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(low));
    const Shape s{37, 129};
    Buf x(random_tensor(s, 7), low), y(random_tensor(s, 8), low);
    Buf m = run(OpKind::mul, {&x, &y}, low);
    Buf a = run(OpKind::add, {&m, &x}, low);
    Buf m2 = run(OpKind::mul, {&a, &y}, low);
    Buf sc = run(OpKind::scale, {&m2}, low, scaled(0.3f));
    const Buf want = run(OpKind::gelu, {&sc}, low);
    const Attrs at = program({{EwOp::mul, 0, 1}, {EwOp::add, 2, 0}, {EwOp::mul, 3, 1}, {EwOp::scale, 4, 0, 0.3f}, {EwOp::gelu, 5}});
    CHECK(same_bytes(run(OpKind::fused_elementwise, {&x, &y}, low, at), want));
    // The check has teeth: the chain in f32 rounded once at the end gives other bits.
    Buf xw(s, DType::F32), yw(s, DType::F32);
    load_from_dtype(x.bytes.data(), static_cast<size_t>(s.numel()), low, reinterpret_cast<float*>(xw.bytes.data()));
    load_from_dtype(y.bytes.data(), static_cast<size_t>(s.numel()), low, reinterpret_cast<float*>(yw.bytes.data()));
    Buf once = run(OpKind::fused_elementwise, {&xw, &yw}, DType::F32, at);
    Buf once_low(s, low);
    store_as_dtype(reinterpret_cast<const float*>(once.bytes.data()), static_cast<size_t>(s.numel()), low, once_low.bytes.data());
    CHECK_FALSE(same_bytes(once_low, want));
  }
}

TEST_CASE("run_cpu refuses fused_elementwise views whose dtypes the program does not give") {
  const Shape s{2, 4};
  Buf h(random_tensor(s, 1), DType::BF16), x(random_tensor(s, 2), DType::F32), g(random_tensor(s, 3), DType::F16);
  const Attrs first = program({cast_instr(0, DType::F32), {EwOp::add, 1, 2}});
  CHECK_NOTHROW(run(OpKind::fused_elementwise, {&h, &x}, DType::F32, first));
  CHECK_THROWS_WITH_AS(run(OpKind::fused_elementwise, {&h, &x}, DType::BF16, first),
                       doctest::Contains("the output is bf16 but the program's last instruction gives f32"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run(OpKind::fused_elementwise, {&h, &x}, DType::F32, program({{EwOp::add, 0, 1}})),
                       doctest::Contains("instruction 0 (add) reads operand 0 (bf16) and operand 1 (f32)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run(OpKind::fused_elementwise, {&h, &g}, DType::F32, program({{EwOp::add, 0, 1}})),
                       doctest::Contains("input 1 is f16 but the program already has bf16 values"), std::invalid_argument);
  // In place, the output takes input 0's memory: only with input 0's dtype.
  Buf out(s, DType::F32);
  kernels::OpCall c;
  c.op = OpKind::fused_elementwise;
  c.attrs = &first;
  c.in[0] = h.view();
  c.in[1] = x.view();
  c.num_inputs = 2;
  c.out = {h.view().data, s, DType::F32};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("output (f32) aliases input 0 (bf16)"), std::invalid_argument);
}
