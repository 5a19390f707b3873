// The element types of the 16-bit CUDA kernels (kernels/cuda/storage.h), on the host: they
// widen and round exactly as graph/float_formats.h does, and graph/conv.h's element
// functions read through them give the bits they give on the widened f32 values, so the
// CUDA conv kernels' 16-bit form sums what the CPU reference sums.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/conv.h"
#include "kernels/cuda/storage.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/kernel_test_util.h"

namespace tg::testing {

namespace {

using kernels::cuda::Bf16;
using kernels::cuda::F16;

template <typename T>
std::vector<T> as_elements(const std::vector<float>& v) {
  std::vector<T> e;
  for (float x : v) e.push_back(kernels::cuda::narrow<T>(x));
  return e;
}

std::vector<float> widened(const std::vector<float>& v, DType dt) {
  std::vector<float> w;
  for (float x : v) w.push_back(round_to_dtype(x, dt));
  return w;
}

template <typename T>
void check_element_type(DType dt) {
  CHECK(kernels::cuda::dtype_of<T>() == dt);
  const float specials[] = {0.0f, -0.0f, 1.0f + std::ldexp(1.0f, -8), 65520.0f, 1e-6f, -3.0e38f,
                            std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (float x : specials) {
    const T e = kernels::cuda::narrow<T>(x);
    if constexpr (!std::is_same_v<T, float>) {
      uint16_t bits = 0;
      store_as_dtype(&x, 1, dt, &bits);
      CHECK(e.bits == bits);
    }
    const float back = e;
    const float want = round_to_dtype(x, dt);
    CHECK(std::memcmp(&back, &want, sizeof back) == 0);
  }
  bool picked = false;
  kernels::cuda::with_element_type(dt, [&](auto z) { picked = std::is_same_v<decltype(z), T>; });
  CHECK(picked);
}

// The element function of op at every output index, through T and through widened floats.
template <typename T>
void check_conv_elements(OpKind op, DType dt) {
  for (const OpSample& s : conv_samples(op)) {
    ConvGeometry g;
    Shape out;
    std::string why;
    REQUIRE_MESSAGE(conv_op_geometry(op, s.in.data(), s.attrs.conv, g, out, &why), why);
    const std::vector<float> a = random_tensor(s.in[0], 3).data;
    const std::vector<float> b = random_tensor(s.in.size() > 1 ? s.in[1] : Shape{1}, 4).data;
    const std::vector<T> ae = as_elements<T>(a), be = as_elements<T>(b);
    const std::vector<float> aw = widened(a, dt), bw = widened(b, dt);
    int64_t bad = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
      float got = 0, want = 0;
      switch (op) {
        case OpKind::conv2d:
          got = conv2d_element(ae.data(), be.data(), g, i), want = conv2d_element(aw.data(), bw.data(), g, i);
          break;
        case OpKind::conv2d_grad_input:
          got = conv2d_grad_input_element(ae.data(), be.data(), g, i);
          want = conv2d_grad_input_element(aw.data(), bw.data(), g, i);
          break;
        case OpKind::conv2d_grad_weight:
          got = conv2d_grad_weight_element(ae.data(), be.data(), g, i);
          want = conv2d_grad_weight_element(aw.data(), bw.data(), g, i);
          break;
        case OpKind::max_pool2d: got = max_pool2d_element(ae.data(), g, i), want = max_pool2d_element(aw.data(), g, i); break;
        case OpKind::avg_pool2d: got = avg_pool2d_element(ae.data(), g, i), want = avg_pool2d_element(aw.data(), g, i); break;
        case OpKind::max_pool2d_grad:
          got = pool2d_grad_element(ae.data(), be.data(), g, i), want = pool2d_grad_element(aw.data(), bw.data(), g, i);
          break;
        default:
          got = pool2d_grad_element(ae.data(), nullptr, g, i), want = pool2d_grad_element(aw.data(), nullptr, g, i);
          break;
      }
      bad += std::memcmp(&got, &want, sizeof got) != 0;
    }
    CHECK_MESSAGE(bad == 0, op_name(op), " ", s.what, " ", dtype_name(dt));
  }
}

}  // namespace

TEST_CASE("16-bit element types round and widen as graph/float_formats.h does") {
  check_element_type<Bf16>(DType::BF16);
  check_element_type<F16>(DType::F16);
  check_element_type<float>(DType::F32);
}

TEST_CASE("conv and pool element functions read through 16-bit elements equal them on widened floats") {
  for (OpKind op : {OpKind::conv2d, OpKind::conv2d_grad_input, OpKind::conv2d_grad_weight, OpKind::max_pool2d,
                    OpKind::avg_pool2d, OpKind::max_pool2d_grad, OpKind::avg_pool2d_grad}) {
    check_conv_elements<Bf16>(op, DType::BF16);
    check_conv_elements<F16>(op, DType::F16);
  }
}

}  // namespace tg::testing
