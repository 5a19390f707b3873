// conv2d, its backward ops, the pools and the batchnorm family in bf16 and f16
// (tests/kernels/cuda_low_precision.h): the op samples' windows (strides, asymmetric pads,
// dilation, groups, depthwise, ceil mode) and a larger grouped, dilated, padded convolution.
// The convolutions run on their direct kernels here (conv_cudnn=0), which compute as their
// f32 form does; cuDNN's 16-bit convolutions are cuda_conv_cudnn_test.cpp's.
// The pools compare values only (no products, so no multiply-add to contract): they equal
// the CPU reference bit for bit; max_pool2d_grad's tiles of windows at sizes of several tiles.
#include <doctest/doctest.h>

#include <array>
#include <utility>
#include <vector>

#include "graph/conv.h"
#include "tests/common/op_samples.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_low_precision.h"

namespace tg::testing {

namespace {

bool is_pool(OpKind op) {
  return op == OpKind::max_pool2d || op == OpKind::max_pool2d_grad || op == OpKind::avg_pool2d ||
         op == OpKind::avg_pool2d_grad;
}

CudaBackendOptions direct_convs() {
  CudaBackendOptions o;
  o.conv_cudnn = false;
  return o;
}

LowCase from_sample(OpKind op, const OpSample& s) {
  LowCase c{s.what, op, s.attrs, s.in, Tol{s.cuda_atol, s.cuda_rtol}};
  if (conv_window_from_weight(op)) c.f32_tol = Tol{kConvDirectTol.atol, kConvDirectTol.rtol};
  c.options = direct_convs();
  c.positive_inputs = s.positive_inputs;
  if (s.count_input >= 0) c.positive_inputs |= 1u << s.count_input;  // batch_norm_inference's variance
  return c;
}

}  // namespace

TEST_CASE("cuda conv2d, its gradients and the pools in bf16 and f16: groups, dilation, padding, strides") {
  TG_REQUIRE_GPU();
  for (OpKind op : {OpKind::conv2d, OpKind::conv2d_grad_input, OpKind::conv2d_grad_weight, OpKind::max_pool2d,
                    OpKind::max_pool2d_grad, OpKind::avg_pool2d, OpKind::avg_pool2d_grad})
    for (const OpSample& s : conv_samples(op)) {
      LowCase c = from_sample(op, s);
      if (is_pool(op)) c.f32_tol = Tol{};
      CHECK(check_low_both(c) == 0);
    }
  // x [2, 8, 12, 12], w [16, 4, 3, 3]: 2 groups, dilation 2, pads 2 1 1 2, stride 1 x 2.
  ConvAttr a;  // conv2d's window is its weight's [3, 3]: kernel is the pools' attribute
  a.stride = {1, 2};
  a.pads = {2, 1, 1, 2};
  a.dilation = {2, 2};
  a.groups = 2;
  const Shape x{2, 8, 12, 12}, w{16, 4, 3, 3};
  ConvGeometry g;
  Shape y;
  std::string why;
  REQUIRE_MESSAGE(conv_op_geometry(OpKind::conv2d, std::vector<Shape>{x, w}.data(), a, g, y, &why), why);
  Attrs at;
  at.conv = a;
  const Tol tol{kConvDirectTol.atol, kConvDirectTol.rtol};
  const std::vector<std::pair<OpKind, std::vector<Shape>>> ops = {
      {OpKind::conv2d, {x, w}}, {OpKind::conv2d_grad_input, {y, w, x}}, {OpKind::conv2d_grad_weight, {y, x, w}}};
  for (const auto& [op, in] : ops) {
    LowCase c{"large grouped dilated", op, at, in, tol};
    c.options = direct_convs();
    CHECK(check_low_both(c) == 0);
  }
}

TEST_CASE("cuda conv_transpose2d in bf16 and f16 on its direct kernels: output_padding, groups, depthwise") {
  TG_REQUIRE_GPU();
  for (const OpSample& s : op_samples(OpKind::conv_transpose2d))
    CHECK(check_low_both(from_sample(OpKind::conv_transpose2d, s)) == 0);
}

TEST_CASE("cuda batch_norm and its gradients in bf16 and f16") {
  TG_REQUIRE_GPU();
  for (OpKind op : {OpKind::batch_norm, OpKind::batch_norm_grad_x, OpKind::batch_norm_grad_gamma,
                    OpKind::batch_norm_grad_beta, OpKind::batch_norm_inference}) {
    for (const OpSample& s : op_samples(op)) CHECK(check_low_both(from_sample(op, s)) == 0);
    // 16 channels of 8 x 10 x 10: several passes of a block over each channel.
    const Shape x{8, 16, 10, 10}, ch{16};
    std::vector<Shape> in = op == OpKind::batch_norm            ? std::vector<Shape>{x, ch, ch}
                            : op == OpKind::batch_norm_grad_x     ? std::vector<Shape>{x, x, ch}
                            : op == OpKind::batch_norm_grad_gamma ? std::vector<Shape>{x, x}
                            : op == OpKind::batch_norm_grad_beta  ? std::vector<Shape>{x}
                                                                  : std::vector<Shape>{x, ch, ch, {2, 16}};
    LowCase c{"[8,16,10,10]", op, {}, in, Tol{1e-5, 1e-5}};
    if (op == OpKind::batch_norm_inference) c.positive_inputs = 1u << 3;
    CHECK(check_low_both(c) == 0);
    c.unaligned = true;
    CHECK(check_low_both(c) == 0);
  }
}

}  // namespace tg::testing

namespace tg::testing {

// max_pool2d_grad's tiled kernels (kernels/cuda/pool.cu) over planes of several tiles of windows
// (16 x 16 NCHW, 8 x 8 NHWC): the windows before a tile that reach into it (3 x 3 stride 2,
// 3 x 3 stride 1, 5 x 3 strides 3 x 2), none (2 x 2 stride 2), the last partial tile, ceil
// mode's partial windows, asymmetric pads, a full and a partial group of 32 channels (NHWC),
// NCHW and NHWC, f32 and bf16: the CPU reference's bits.
TEST_CASE("cuda max_pool2d_grad in tiles of windows: halos, partial tiles, ceil mode, both layouts == cpu") {
  TG_REQUIRE_GPU();
  struct Pool {
    const char* what;
    Shape x;  // NCHW
    std::array<int, 2> kernel, stride;
    std::array<int, 4> pads;
    bool ceil;
  };
  const Pool pools[] = {
      {"ResNet stem, 3x3 stride 2 pads 1", {2, 3, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false},
      {"2x2 stride 2", {1, 2, 70, 38}, {2, 2}, {2, 2}, {0, 0, 0, 0}, false},
      {"3x3 stride 1 pads 1", {1, 2, 40, 35}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false},
      {"3x3 stride 2 ceil", {1, 2, 37, 41}, {3, 3}, {2, 2}, {0, 0, 0, 0}, true},
      {"5x3 stride 3x2, pads 2 1 0 1", {1, 2, 50, 45}, {5, 3}, {3, 2}, {2, 1, 0, 1}, false},
      {"40 channels, 3x3 stride 2 pads 1", {2, 40, 30, 34}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false},
  };
  uint64_t seed = 4100;
  for (const Pool& pl : pools)
    for (bool nhwc : {false, true})
      for (DType dt : {DType::F32, DType::BF16}) {
        CAPTURE(pl.what);
        CAPTURE(nhwc);
        OpCase c;
        c.op = OpKind::max_pool2d_grad;
        c.attrs.conv.kernel = pl.kernel;
        c.attrs.conv.stride = pl.stride;
        c.attrs.conv.pads = pl.pads;
        c.attrs.conv.ceil_mode = pl.ceil;
        c.attrs.conv.channels_last = nhwc;
        const Shape x = nhwc ? Shape{pl.x[0], pl.x[2], pl.x[3], pl.x[1]} : pl.x;
        const Shape y = infer_shapes(OpKind::max_pool2d, {x}, c.attrs, "pool").at(0);
        c.in = {y, x};
        c.out = x;
        c.dtype = dt;
        c.tol = Tol{};
        c.seed = seed++;
        CHECK(run_case(c) == 0);
      }
}

}  // namespace tg::testing
