// The NHWC form of every op with a layout (graph/channels_last.h) against its NCHW form on
// the CPU, in f32, bf16 and f16: the same inputs, transposed, give the NCHW output's bits,
// transposed. Bitwise, because both layouts sum the same products in the same order
// (graph/conv.h, graph/batch_norm.h) and the 16-bit path rounds the f32 result once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/channels_last.h"
#include "graph/float_formats.h"
#include "tests/common/layouts.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/kernel_test_util.h"

namespace tg::testing {

namespace {

Shape nchw_of(const Shape& nhwc) { return Shape{nhwc[0], nhwc[3], nhwc[1], nhwc[2]}; }

// Runs op on `ins` (f32 values, already representable in their dtypes) in dtypes in_dt; returns
// the output widened to f32, or, for an update, its input 0 after the call. A second output
// (batch_norm_grad's [2, C], which has no layout) goes widened into *second.
std::vector<float> run_in_dtype(OpKind op, const std::vector<Tensor>& ins, const Attrs& at,
                                const std::vector<DType>& in_dt, std::vector<float>* second = nullptr) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ins) shapes.push_back(t.shape);
  const std::vector<Shape> outs = infer_shapes(op, shapes, at, "nhwc");
  const bool update = op_is_update(op);
  const std::vector<DType> out_dt = infer_dtypes(op, in_dt, at, "nhwc");
  std::vector<std::vector<uint16_t>> low(ins.size());
  std::vector<std::vector<float>> wide(ins.size());
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = static_cast<int>(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    wide[i] = ins[i].data;
    low[i].resize(ins[i].data.size());
    if (in_dt[i] == DType::F32) {
      c.in[i] = {wide[i].data(), ins[i].shape, DType::F32};
    } else {
      store_as_dtype(ins[i].data.data(), ins[i].data.size(), in_dt[i], low[i].data());
      c.in[i] = view(low[i], ins[i].shape, in_dt[i]);
    }
  }
  std::vector<float> out32, second32;
  std::vector<uint16_t> out16, second16;
  auto bind = [&](const Shape& s, DType dt, std::vector<float>& f32, std::vector<uint16_t>& low) {
    const size_t n = static_cast<size_t>(s.numel());
    f32.assign(n, std::numeric_limits<float>::quiet_NaN());
    low.assign(n, dt == DType::BF16 ? 0x7FC1 : 0x7E01);  // a NaN no kernel makes
    return dt == DType::F32 ? kernels::TensorView{f32.data(), s, DType::F32} : view(low, s, dt);
  };
  if (!update) c.out = bind(outs.at(0), out_dt.at(0), out32, out16);
  if (outs.size() > 1) c.out2 = bind(outs[1], out_dt.at(1), second32, second16);
  kernels::run_cpu(c);
  if (update) return wide[0];
  if (!update && out_dt[0] != DType::F32) load_from_dtype(out16.data(), out16.size(), out_dt[0], out32.data());
  if (outs.size() > 1 && out_dt[1] != DType::F32)
    load_from_dtype(second16.data(), second16.size(), out_dt[1], second32.data());
  if (second) *second = second32;
  return out32;
}

// The NHWC sample's values, drawn for its NCHW shapes and rounded to dt.
std::vector<Tensor> nchw_inputs(const OpSample& s, const ChannelsLastOperands& act, DType dt) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < s.in.size(); ++i) {
    const bool a = act.input(i);
    const Shape shape = a && s.in[i].rank == 4 ? nchw_of(s.in[i]) : s.in[i];
    Tensor t = random_tensor(shape, 100 + i, -1.0f, 1.0f);
    if (static_cast<int>(i) == s.count_input) std::fill(t.data.begin(), t.data.end(), s.count);
    for (float& v : t.data) v = round_to_dtype(v, dt);
    ins.push_back(std::move(t));
  }
  return ins;
}

bool is_channels_last(const OpSample& s) { return s.attrs.conv.channels_last || s.attrs.channels_last; }

}  // namespace

TEST_CASE("NHWC ops give their NCHW form's bits, transposed, in f32, bf16 and f16") {
  int compared = 0;
  for (int k = 0; k < kNumOps; ++k) {
    const OpKind op = static_cast<OpKind>(k);
    const ChannelsLastOperands act = channels_last_operands(op);
    if (!op_has_channels_last(op)) continue;
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (const OpSample& s : op_samples(op)) {
      // The [N, C] samples have no layout to compare.
      if (!is_channels_last(s) || s.in[op == OpKind::batch_norm_stats_update ? 1 : 0].rank != 4) continue;
      CAPTURE(s.what);
      Attrs nchw_at = s.attrs;
      nchw_at.conv.channels_last = false;
      nchw_at.channels_last = false;
      for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        if (op_is_f32_only(op) && dt != DType::F32) continue;
        const std::vector<DType> in_dt = sample_dtypes(op, s, dt);
        const std::string dtype_label = dtype_name(dt);
        CAPTURE(dtype_label);
        const std::vector<Tensor> nchw = nchw_inputs(s, act, dt);
        std::vector<Tensor> nhwc = nchw;
        for (size_t i = 0; i < nhwc.size(); ++i)
          if (act.input(i) && nhwc[i].shape.rank == 4) {
            nhwc[i].data = relayout(nchw[i].data, nchw[i].shape, true);
            nhwc[i].shape = s.in[i];
          }
        std::vector<float> want2, got2;
        const std::vector<float> want = run_in_dtype(op, nchw, nchw_at, in_dt, &want2);
        std::vector<float> got = run_in_dtype(op, nhwc, s.attrs, in_dt, &got2);
        CHECK(bitwise_equal(got2, want2));
        if (act.output) {
          std::vector<Shape> shapes;
          for (const Tensor& t : nchw) shapes.push_back(t.shape);
          got = relayout(got, infer_shapes(op, shapes, nchw_at, "nchw").at(0), false);
        }
        CHECK(std::none_of(want.begin(), want.end(), [](float v) { return std::isnan(v); }));
        CHECK(bitwise_equal(got, want));
        ++compared;
      }
    }
  }
  // conv2d, its two gradients, the two fused convolutions, conv_transpose2d, the four pools
  // (each with three NHWC samples but conv_transpose2d's one), and the eight batch norms (the
  // five with per-channel inputs once more with those in f32); the seven but the update once
  // more with 8 channels (the CUDA vector kernels' case), the five again with f32 per-channel
  // inputs, and batch_norm_moments' relu epilogue on both of its 8-channel samples; in three
  // dtypes.
  CHECK(compared == 3 * (5 * 3 + 1 + 4 * 3) + 3 * (8 + 5) + 3 * (7 + 5 + 2));
}

TEST_CASE("an NHWC shape rule reads C from the last dim, and its messages say so") {
  ConvAttr a;
  a.channels_last = true;
  Attrs at;
  at.conv = a;
  CHECK(infer_shape(OpKind::conv2d, {{2, 5, 5, 3}, {4, 3, 3, 3}}, at, "c") == Shape{2, 3, 3, 4});
  CHECK(shape_rule_message(OpKind::conv2d, {{2, 5, 5, 2}, {4, 3, 3, 3}}, at, "'c'")
            .find("weight [4,3,3,3] has 3 input channels (dim 1) but x [2,5,5,2] has C / groups = 2 / 1") !=
        std::string::npos);
  Attrs bn;
  bn.channels_last = true;
  CHECK(infer_shape(OpKind::batch_norm_grad_gamma, {{2, 4, 4, 3}, {2, 4, 4, 3}}, bn, "b") == Shape{3});
  CHECK(shape_rule_message(OpKind::batch_norm, {{2, 4, 4, 3}, {4}, {4}}, bn, "'b'")
            .find("gamma is [4] but x [2,4,4,3] has 3 channels (dim 3)") != std::string::npos);
}

}  // namespace tg::testing
