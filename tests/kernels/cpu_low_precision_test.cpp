// bf16 and f16 on the CPU backend: every op whose dtype rule allows them runs on 16-bit
// views, writes every element and nothing past the end, and gives the f32 kernel's result
// on the widened inputs rounded once per output element (kernels/cpu/widen.cpp). Calls
// that break the dtype rule are refused, naming the view.
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>

#include "graph/float_formats.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

constexpr uint16_t kGuard = 0xA5A5;  // after the last element: must survive the call
constexpr size_t kGuardElems = 8;

uint16_t narrow_bits(float f, DType dt) { return dt == DType::BF16 ? bf16_from_f32(f) : f16_from_f32(f); }
float widen_bits(uint16_t h, DType dt) { return dt == DType::BF16 ? f32_from_bf16(h) : f32_from_f16(h); }

// A 16-bit buffer with guard elements after the data.
struct LowBuffer {
  std::vector<uint16_t> bits;
  Shape shape;
  LowBuffer(const std::vector<float>& values, Shape s, DType dt) : shape(s) {
    for (float v : values) bits.push_back(narrow_bits(v, dt));
    bits.insert(bits.end(), kGuardElems, kGuard);
  }
  LowBuffer(Shape s, DType dt) : shape(s) {
    const uint16_t nan = dt == DType::BF16 ? 0x7FC1 : 0x7E01;  // the poison: a NaN no kernel makes
    bits.assign(static_cast<size_t>(s.numel()), nan);
    bits.insert(bits.end(), kGuardElems, kGuard);
  }
  kernels::TensorView view(DType dt) { return {reinterpret_cast<float*>(bits.data()), shape, dt}; }
  bool guard_intact() const {
    for (size_t i = bits.size() - kGuardElems; i < bits.size(); ++i)
      if (bits[i] != kGuard) return false;
    return true;
  }
  std::vector<float> values(DType dt) const {
    std::vector<float> v;
    for (size_t i = 0; i + kGuardElems < bits.size(); ++i) v.push_back(widen_bits(bits[i], dt));
    return v;
  }
};

// A call of `op` over `ins`, writing `out`, with the attributes at their defaults.
kernels::OpCall call_of(OpKind op, std::initializer_list<kernels::TensorView> ins, kernels::TensorView out) {
  static const Attrs defaults;
  kernels::OpCall c;
  c.op = op;
  c.attrs = &defaults;
  for (const kernels::TensorView& v : ins) c.in[static_cast<size_t>(c.num_inputs++)] = v;
  c.out = out;
  return c;
}

std::vector<float> rounded(const std::vector<float>& v, DType dt) {
  std::vector<float> r;
  for (float f : v) r.push_back(round_to_dtype(f, dt));
  return r;
}

// Bitwise, NaN equal to NaN.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

}  // namespace

TEST_CASE("run_cpu runs every op of the kTypeSame, kTypeLogits and kTypeChannels rules on bf16 and f16 views: f32 "
          "compute, one rounding per store") {
  int ops_run = 0;
  for (OpKind op : all_ops()) {
    const uint8_t rule = op_traits(op).dtype_rule;
    if (rule != op_table::kTypeSame && rule != op_table::kTypeLogits && rule != op_table::kTypeChannels)
      continue;  // f32-only ops, and cast below
    if (op_is_update(op)) continue;  // batch_norm_stats_update: its own case in cpu_batchnorm_test
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (const OpSample& s : op_samples(op)) {
      CAPTURE(s.what);
      for (DType dt : {DType::BF16, DType::F16}) {
        const std::string dtype_label = dtype_name(dt);
        CAPTURE(dtype_label);
        const std::vector<std::vector<float>> data = sample_data(s, 3);
        std::vector<Shape> shapes;
        std::vector<LowBuffer> ins;
        std::vector<Tensor> wide;  // the reference's inputs: the 16-bit values, widened
        for (size_t k = 0; k < data.size(); ++k) {
          shapes.push_back(s.in[k]);
          ins.emplace_back(data[k], s.in[k], dt);
          wide.push_back(tensor(s.in[k], rounded(data[k], dt)));
        }
        const std::vector<Shape> out_shapes = infer_shapes(op, shapes, s.attrs, "test");
        // A kTypeLogits op's loss and dloss are f32, and a batch norm's channel sums and
        // per-channel inputs where the sample says so (graph/dtype_rules.h).
        const std::vector<DType> in_dt = sample_dtypes(op, s, dt);
        const std::vector<DType> out_dts = infer_dtypes(op, in_dt, s.attrs, "test");
        const DType out_dt = out_dts.at(0);
        LowBuffer out(out_shapes.at(0), dt);
        std::vector<float> out32(static_cast<size_t>(out_shapes.at(0).numel()), -7.0f);
        LowBuffer out2(out_shapes.size() > 1 ? out_shapes[1] : Shape{1}, dt);
        std::vector<float> out2_32(static_cast<size_t>(out_shapes.size() > 1 ? out_shapes[1].numel() : 1), -7.0f);
        kernels::OpCall c;
        std::vector<kernels::TensorView> more;
        c.op = op;
        c.attrs = &s.attrs;
        c.num_inputs = static_cast<int>(ins.size());
        for (size_t k = 0; k < ins.size(); ++k) {
          // Ids stay whole numbers in f32 views (the form the interpreter holds them in).
          const bool f32 = static_cast<int>(k) == s.labels_input || in_dt[k] == DType::F32;
          const kernels::TensorView v = f32 ? kernels::TensorView{wide[k].data.data(), s.in[k], DType::F32}
                                            : ins[k].view(dt);
          if (k < c.in.size()) c.in[k] = v;
          else more.push_back(v);
        }
        c.more = more.empty() ? nullptr : more.data();
        c.out = out_dt == DType::F32 ? kernels::TensorView{out32.data(), out_shapes.at(0), DType::F32} : out.view(dt);
        if (out_shapes.size() > 1)
          c.out2 = out_dts.at(1) == DType::F32 ? kernels::TensorView{out2_32.data(), out_shapes[1], DType::F32} : out2.view(dt);
        try {
          kernels::run_cpu(c);
        } catch (const std::exception& err) {
          FAIL_CHECK(op_label, " ", dtype_label, ": run_cpu threw: ", std::string(err.what()));
          continue;
        }
        CHECK_MESSAGE(out.guard_intact(), op_label, ": wrote past the end of its 16-bit output");
        CHECK_MESSAGE(out2.guard_intact(), op_label, ": wrote past the end of its second 16-bit output");
        for (const LowBuffer& in : ins) CHECK_MESSAGE(in.guard_intact(), op_label, ": wrote past an input");

        Tensor want = run_op(op, wide, s.attrs);
        // attention_lse's 16-bit result is its f32 statistic stored as a pair (graph/attention.h).
        if (op == OpKind::attention_lse) kernels::cpu_attention_split_lse(want.data.data(), want.shape.numel() / 2, dt);
        if (out_dt == DType::F32) {
          CHECK_MESSAGE(same_bits(out32, want.data), op_label, " ", dtype_label,
                        ": its f32 output differs from the f32 kernel on the widened inputs");
          continue;
        }
        const std::vector<float> got = out.values(dt);
        size_t poisoned = 0;
        for (uint16_t b : out.bits) poisoned += b == (dt == DType::BF16 ? 0x7FC1 : 0x7E01);
        CHECK_MESSAGE(poisoned == 0, op_label, ": ", poisoned, " output elements left unwritten");
        CHECK_MESSAGE(same_bits(got, rounded(want.data, dt)), op_label, " ", dtype_label,
                      ": differs from the f32 kernel on the widened inputs, rounded once");
      }
    }
    ++ops_run;
  }
  CHECK(ops_run > 0);
}

TEST_CASE("run_cpu casts between every pair of dtypes, rounding to nearest even, NaN and inf kept") {
  const std::vector<float> x = {0.1f, -1.0f / 3.0f, 65519.0f, 70000.0f, 1e-8f, -0.0f,
                                std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                3.0e38f, 1.00390625f};
  const DType all[] = {DType::F32, DType::BF16, DType::F16};
  for (DType from : all)
    for (DType to : all) {
      CAPTURE(static_cast<int>(from));
      CAPTURE(static_cast<int>(to));
      Attrs at;
      at.to = to;
      std::vector<float> in32 = x, out32(x.size(), -7.0f);
      LowBuffer in16(x, Shape{static_cast<int64_t>(x.size())}, from == DType::F32 ? DType::BF16 : from);
      LowBuffer out16(Shape{static_cast<int64_t>(x.size())}, to == DType::F32 ? DType::BF16 : to);
      kernels::OpCall c;
      c.op = OpKind::cast;
      c.attrs = &at;
      c.num_inputs = 1;
      const Shape s{static_cast<int64_t>(x.size())};
      c.in[0] = from == DType::F32 ? kernels::TensorView{in32.data(), s, from} : in16.view(from);
      c.out = to == DType::F32 ? kernels::TensorView{out32.data(), s, to} : out16.view(to);
      kernels::run_cpu(c);
      const std::vector<float> src = from == DType::F32 ? x : in16.values(from);
      const std::vector<float> got = to == DType::F32 ? out32 : out16.values(to);
      for (size_t i = 0; i < x.size(); ++i) {
        CAPTURE(i);
        const float want = round_to_dtype(src[i], to);
        CHECK((std::isnan(want) ? std::isnan(got[i]) : std::memcmp(&want, &got[i], sizeof(float)) == 0));
      }
      CHECK(out16.guard_intact());
    }
  // The rounding itself, at known points: f16 overflows past 65519.99, bf16 keeps 3e38.
  CHECK(f32_from_f16(f16_from_f32(70000.0f)) == std::numeric_limits<float>::infinity());
  CHECK(std::isfinite(f32_from_bf16(bf16_from_f32(3.0e38f))));
}

TEST_CASE("run_cpu runs a bf16 op in place, over its own input") {
  const std::vector<float> x = {-1.5f, 0.3f, 2.0f, -0.0f, 7.7f, -3.1f};
  LowBuffer buf(x, Shape{2, 3}, DType::BF16);
  kernels::run_cpu(call_of(OpKind::relu, {buf.view(DType::BF16)}, buf.view(DType::BF16)));
  const std::vector<float> got = buf.values(DType::BF16);
  for (size_t i = 0; i < x.size(); ++i) CHECK(got[i] == round_to_dtype(std::max(x[i], 0.0f), DType::BF16));
  CHECK(buf.guard_intact());
}

TEST_CASE("run_cpu refuses views that break the op's dtype rule, naming the view") {
  std::vector<float> a(4, 1.0f), out(4);
  LowBuffer low(a, Shape{4}, DType::BF16);
  kernels::OpCall c = call_of(OpKind::add, {low.view(DType::BF16), {a.data(), Shape{4}}}, {out.data(), Shape{4}});
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("run_cpu add: input 1 is f32 but the op needs bf16 there"),
                       std::invalid_argument);
  c.in[1] = low.view(DType::BF16);
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("the output is f32 but the op needs bf16"),
                       std::invalid_argument);
  const kernels::OpCall loss =
      call_of(OpKind::mse_loss, {low.view(DType::BF16), low.view(DType::BF16)}, {out.data(), Shape{1}});
  CHECK_THROWS_WITH_AS(kernels::run_cpu(loss), doctest::Contains("input 0 is bf16 but the op needs f32 there (it runs in f32 only)"),
                       std::invalid_argument);
}
