// conv2d, its backward ops and the pools against references written another way: an
// explicitly padded input for the convolution, the adjoint identities for its two
// gradients, and hand-computed pools (ties, padding not counted, ceil mode).
#include <string>

#include "graph/conv.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

// conv2d over a copy of x with the pads written in as zeros, so no index is ever out of range.
std::vector<double> conv2d_padded_reference(const Tensor& x, const Tensor& w, const ConvAttr& a) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t K = w.shape[0], Cg = w.shape[1], R = w.shape[2], S = w.shape[3];
  const int64_t Hp = H + a.pads[0] + a.pads[2], Wp = W + a.pads[1] + a.pads[3];
  std::vector<double> xp(static_cast<size_t>(N * C * Hp * Wp), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v)
          xp[static_cast<size_t>(((n * C + c) * Hp + h + a.pads[0]) * Wp + v + a.pads[1])] =
              x.data[static_cast<size_t>(((n * C + c) * H + h) * W + v)];
  const int64_t P = (Hp - (a.dilation[0] * (R - 1) + 1)) / a.stride[0] + 1;
  const int64_t Q = (Wp - (a.dilation[1] * (S - 1) + 1)) / a.stride[1] + 1;
  const int64_t Kg = K / a.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          double acc = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s)
                acc += xp[static_cast<size_t>(((n * C + (k / Kg) * Cg + c) * Hp + p * a.stride[0] + r * a.dilation[0]) * Wp +
                                              q * a.stride[1] + s * a.dilation[1])] *
                       w.data[static_cast<size_t>(((k * Cg + c) * R + r) * S + s)];
          y.push_back(acc);
        }
  return y;
}

// ONNX ConvTranspose's definition, written as a scatter: each x[n, c, h, w] times the window
// w[c, k, r, s] added at output (h stride + r dilation - top, w stride + s dilation - left),
// what falls outside the output (cropped by the pads) dropped.
std::vector<double> conv_transpose_scatter_reference(const Tensor& x, const Tensor& w, const ConvAttr& a) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Kg = w.shape[1], R = w.shape[2], S = w.shape[3], K = Kg * a.groups, Cg = C / a.groups;
  const int64_t P = (H - 1) * a.stride[0] + a.dilation[0] * (R - 1) + 1 + a.output_padding[0] - a.pads[0] - a.pads[2];
  const int64_t Q = (W - 1) * a.stride[1] + a.dilation[1] * (S - 1) + 1 + a.output_padding[1] - a.pads[1] - a.pads[3];
  std::vector<double> y(static_cast<size_t>(N * K * P * Q), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v)
          for (int64_t k = 0; k < Kg; ++k)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t p = h * a.stride[0] + r * a.dilation[0] - a.pads[0];
                const int64_t q = v * a.stride[1] + s * a.dilation[1] - a.pads[1];
                if (p < 0 || p >= P || q < 0 || q >= Q) continue;
                const int64_t ko = c / Cg * Kg + k;
                y[static_cast<size_t>(((n * K + ko) * P + p) * Q + q)] +=
                    static_cast<double>(x.data[static_cast<size_t>(((n * C + c) * H + h) * W + v)]) *
                    w.data[static_cast<size_t>(((c * Kg + k) * R + r) * S + s)];
              }
  return y;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

Attrs pool_attrs(std::array<int, 2> kernel, std::array<int, 2> stride, std::array<int, 4> pads, bool ceil_mode = false) {
  Attrs at;
  at.conv.kernel = kernel;
  at.conv.stride = stride;
  at.conv.pads = pads;
  at.conv.ceil_mode = ceil_mode;
  return at;
}

}  // namespace

TEST_CASE("conv2d: hand-computed 2x2 window of ones over 1..9") {
  const Tensor x = tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = tensor({1, 1, 2, 2}, {1, 1, 1, 1});
  const Tensor y = run_op(OpKind::conv2d, {x, w});
  CHECK(y.shape == Shape{1, 1, 2, 2});
  CHECK(y.data == std::vector<float>{12, 16, 24, 28});
}

TEST_CASE("conv2d equals the padded-input reference on every sample (strides, pads, dilation, groups)") {
  uint64_t seed = 1;
  for (const OpSample& s : op_samples(OpKind::conv2d)) {
    if (s.attrs.conv.channels_last) continue;  // the NCHW reference; NHWC against NCHW is cpu_nhwc_test.cpp's
    CAPTURE(s.what);
    const Tensor x = random_tensor(s.in[0], seed++), w = random_tensor(s.in[1], seed++);
    const Tensor y = run_op(OpKind::conv2d, {x, w}, s.attrs);
    check_close(y.data, conv2d_padded_reference(x, w, s.attrs.conv), 1e-6, 1e-6, "conv2d");
  }
}

TEST_CASE("conv2d's gradients are its adjoints: <conv(x, w), dy> = <x, dx> = <w, dw>") {
  uint64_t seed = 100;
  for (const OpSample& s : op_samples(OpKind::conv2d)) {
    if (s.attrs.conv.channels_last) continue;  // the NCHW reference; NHWC against NCHW is cpu_nhwc_test.cpp's
    CAPTURE(s.what);
    const Tensor x = random_tensor(s.in[0], seed++), w = random_tensor(s.in[1], seed++);
    const Tensor y = run_op(OpKind::conv2d, {x, w}, s.attrs);
    const Tensor dy = random_tensor(y.shape, seed++);
    const Tensor dx = run_op(OpKind::conv2d_grad_input, {dy, w, x}, s.attrs);
    const Tensor dw = run_op(OpKind::conv2d_grad_weight, {dy, x, w}, s.attrs);
    CHECK(dx.shape == x.shape);
    CHECK(dw.shape == w.shape);
    const double want = dot(y.data, dy.data);
    CHECK(dot(x.data, dx.data) == doctest::Approx(want).epsilon(1e-5));
    CHECK(dot(w.data, dw.data) == doctest::Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("conv_transpose2d equals ONNX ConvTranspose's scatter on every sample (output_padding, groups)") {
  uint64_t seed = 200;
  for (const OpSample& s : op_samples(OpKind::conv_transpose2d)) {
    if (s.attrs.conv.channels_last) continue;  // the NCHW reference; NHWC against NCHW is cpu_nhwc_test.cpp's
    CAPTURE(s.what);
    const Tensor x = random_tensor(s.in[0], seed++), w = random_tensor(s.in[1], seed++);
    const Tensor y = run_op(OpKind::conv_transpose2d, {x, w}, s.attrs);
    const std::vector<double> want = conv_transpose_scatter_reference(x, w, s.attrs.conv);
    REQUIRE(static_cast<size_t>(y.shape.numel()) == want.size());
    check_close(y.data, want, 1e-6, 1e-6, "conv_transpose2d");
  }
}

TEST_CASE("max_pool2d: the maximum, and its gradient to the first maximum of a tie in row-major order") {
  // Window (0,0) is a tie of 5s at (0,1) and (1,0); window (0,1) has its maximum 7 at (1,3).
  const Tensor x = tensor({1, 1, 2, 4}, {1, 5, 2, 3,   //
                                         5, 0, 4, 7});
  const Attrs at = pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0});
  const Tensor y = run_op(OpKind::max_pool2d, {x}, at);
  CHECK(y.shape == Shape{1, 1, 1, 2});
  CHECK(y.data == std::vector<float>{5, 7});
  const Tensor dx = run_op(OpKind::max_pool2d_grad, {tensor({1, 1, 1, 2}, {10, 20}), x}, at);
  CHECK(dx.data == std::vector<float>{0, 10, 0, 0,  //
                                      0, 0, 0, 20});
}

TEST_CASE("max_pool2d: overlapping windows add their gradients at a shared maximum") {
  const Tensor x = tensor({1, 1, 1, 3}, {1, 9, 2});
  const Attrs at = pool_attrs({1, 2}, {1, 1}, {0, 0, 0, 0});
  CHECK(run_op(OpKind::max_pool2d, {x}, at).data == std::vector<float>{9, 9});
  CHECK(run_op(OpKind::max_pool2d_grad, {tensor({1, 1, 1, 2}, {1, 2}), x}, at).data == std::vector<float>{0, 3, 0});
}

TEST_CASE("avg_pool2d does not count padding, and its gradient divides by the same counts") {
  const Tensor x = tensor({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  const Attrs at = pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1});
  const Tensor y = run_op(OpKind::avg_pool2d, {x}, at);
  CHECK(y.data == std::vector<float>(9, 1.0f));  // counting the padding would give 4/9 at a corner
  // dx at the centre: every window holds it; corners hold 4 elements, edges 6, the centre 9.
  const Tensor dx = run_op(OpKind::avg_pool2d_grad, {tensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f)), x}, at);
  CHECK(dx.data[4] == doctest::Approx(4.0 / 4 + 4.0 / 6 + 1.0 / 9));
}

TEST_CASE("pools in ceil mode: a partial last window, and none that would start in the padding") {
  // H = W = 5, window 2, stride 2: floor gives 2, ceil 3, whose last window holds row 4 only.
  const Tensor x = random_tensor({1, 1, 5, 5}, 3);
  const Tensor y = run_op(OpKind::avg_pool2d, {x}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, true));
  CHECK(y.shape == Shape{1, 1, 3, 3});
  CHECK(y.data[8] == x.data[24]);
  CHECK(run_op(OpKind::avg_pool2d, {x}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0})).shape == Shape{1, 1, 2, 2});
  // With pads 1 the padded extent is 7: ceil((7 - 2) / 2) + 1 = 4, but the 4th window would
  // start at row 5 of the input, in the bottom padding: ONNX drops it.
  CHECK(run_op(OpKind::max_pool2d, {x}, pool_attrs({2, 2}, {2, 2}, {1, 1, 1, 1}, true)).shape == Shape{1, 1, 3, 3});
}

TEST_CASE("the conv shape rules name the bad dim and the fix") {
  auto message = [](OpKind op, std::vector<Shape> in, const Attrs& at) { return shape_rule_message(op, in, at, "'c1'"); };
  Attrs grouped;
  grouped.conv.groups = 2;
  CHECK(message(OpKind::conv2d, {{1, 3, 5, 5}, {4, 3, 3, 3}}, grouped).find("C = 3 channels (dim 1), not a multiple of groups = 2") !=
        std::string::npos);
  CHECK(message(OpKind::conv2d, {{1, 4, 5, 5}, {4, 4, 3, 3}}, grouped).find("has 4 input channels (dim 1)") !=
        std::string::npos);
  CHECK(message(OpKind::conv2d, {{1, 4, 5}, {4, 4, 3, 3}}, {}).find("must be NCHW") != std::string::npos);
  CHECK(message(OpKind::conv2d, {{1, 1, 2, 5}, {1, 1, 3, 3}}, {}).find("the window spans 3 along H (dim 2)") !=
        std::string::npos);
  CHECK(message(OpKind::max_pool2d, {{1, 1, 4, 4}}, {}).find("a pool needs its window") != std::string::npos);
  CHECK(message(OpKind::max_pool2d, {{1, 1, 4, 4}}, pool_attrs({2, 2}, {1, 1}, {0, 2, 0, 0}))
            .find("pads[1] = 2 is not smaller than the window's 2") != std::string::npos);
  CHECK(message(OpKind::max_pool2d_grad, {{1, 1, 3, 3}, {1, 1, 4, 4}}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}))
            .find("dy is [1,1,3,3] but the forward output") != std::string::npos);
  CHECK(message(OpKind::conv2d, {{1, 1, 4, 4}, {1, 1, 3, 3}}, pool_attrs({0, 0}, {1, 1}, {0, 0, 0, 0}, true))
            .find("ceil_mode is the pools' attribute") != std::string::npos);
  CHECK(message(OpKind::conv2d, {{1, 1, 4, 4}, {1, 1, 3, 3}}, pool_attrs({3, 3}, {1, 1}, {0, 0, 0, 0}))
            .find("kernel = [3, 3] is the pools' attribute") != std::string::npos);
}
