// The batchnorm family's CUDA kernels (kernels/cuda/batchnorm.cu) on shapes that reach their
// paths: a channel split into many runs (an ImageNet network's first stage), a single short
// run, more channels than a block of 32 covers and a count not a multiple of 32; against the
// CPU reference in f32, and NHWC against NCHW bit for bit (the kernels promise one order of
// additions for both layouts).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "tests/common/layouts.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

const Shape kShapes[] = {{32, 64, 28, 28}, {4, 40, 7, 7}, {2, 2048, 7, 7}, {3, 33, 5, 7}};
const OpKind kOps[] = {OpKind::batch_norm,           OpKind::batch_norm_grad_x,    OpKind::batch_norm_grad_gamma,
                       OpKind::batch_norm_grad_beta, OpKind::batch_norm_inference, OpKind::batch_norm_stats_update};

// The inputs of op over x of shape xs (NCHW), in the op's order.
std::vector<Shape> bn_inputs(OpKind op, const Shape& xs) {
  const Shape ch{xs[1]};
  switch (op) {
    case OpKind::batch_norm: return {xs, ch, ch};
    case OpKind::batch_norm_grad_x: return {xs, xs, ch};
    case OpKind::batch_norm_grad_gamma: return {xs, xs};
    case OpKind::batch_norm_grad_beta: return {xs};
    case OpKind::batch_norm_inference: return {xs, ch, ch, {2, xs[1]}};
    default: return {{2, xs[1]}, xs};  // batch_norm_stats_update: (stats, x)
  }
}

// Its output's shape: [C] for the gamma and beta gradients, x's otherwise (an update has none).
Shape bn_output(OpKind op, const Shape& xs) {
  return op == OpKind::batch_norm_grad_gamma || op == OpKind::batch_norm_grad_beta ? Shape{xs[1]} : xs;
}

Shape nhwc(const Shape& s) { return Shape{s[0], s[2], s[3], s[1]}; }

// op on x of shape xs against the CPU reference: in f32, or with 16-bit activations (dt)
// beside f32 per-channel inputs.
OpCase bn_case(OpKind op, const Shape& xs, DType dt, uint64_t seed) {
  OpCase c;
  c.op = op;
  c.in = bn_inputs(op, xs);
  c.out = bn_output(op, xs);
  c.attrs.momentum = 0.1f;
  c.dtype = dt;
  c.channels_f32 = dt != DType::F32;
  c.tol = low_precision_tol(Tol{1e-5, 1e-5}, dt);
  c.seed = seed;
  if (op == OpKind::batch_norm_inference) c.positive_inputs = 1u << 3;  // the running variance
  if (op == OpKind::batch_norm_stats_update) c.positive_inputs = 1u << 0;  // updated in place
  return c;
}

// op on the GPU in one layout: the inputs given in NCHW (4-D ones transposed for NHWC), the
// output (or the updated statistics) returned in NCHW.
std::vector<float> run_layout(OpKind op, const Shape& xs, const std::vector<std::vector<float>>& x, bool channels_last) {
  const std::vector<Shape> shapes = bn_inputs(op, xs);
  Attrs at;
  at.channels_last = channels_last;
  at.momentum = 0.1f;
  std::vector<std::unique_ptr<DevTensor>> in;
  kernels::OpCall call;
  call.op = op;
  call.attrs = &at;
  call.num_inputs = static_cast<int>(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const bool four = shapes[i].rank == 4;
    in.push_back(std::make_unique<DevTensor>(four && channels_last ? relayout(x[i], shapes[i], true) : x[i], false));
    call.in[i] = in.back()->view(four && channels_last ? nhwc(shapes[i]) : shapes[i]);
  }
  const bool update = op == OpKind::batch_norm_stats_update;
  const Shape out = bn_output(op, xs);
  DevTensor y(update ? 1 : out.numel(), false);
  y.poison();
  if (!update) call.out = y.view(channels_last && out.rank == 4 ? nhwc(out) : out);
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  backend().run(call);
  backend().synchronize();
  if (update) return in[0]->download();
  std::vector<float> r = y.download();
  return channels_last && out.rank == 4 ? relayout(r, out, false) : r;
}

}  // namespace

TEST_CASE("cuda batch_norm family, f32: many runs a channel, one short run, 33 and 2048 channels, == cpu") {
  TG_REQUIRE_GPU();
  uint64_t seed = 31000;
  for (const Shape& xs : kShapes)
    for (OpKind op : kOps) {
      const OpCase c = bn_case(op, xs, DType::F32, seed++);
      CAPTURE(op_name(op));
      CAPTURE(xs.str());
      CHECK(run_case(c) == 0);
    }
}

// 16-bit activations beside f32 gamma, beta and running statistics, as autocast runs batch
// norm (graph/op.h kTypeChannels): against the CPU reference on the same 16-bit values, and
// against the f32 kernels on those values widened, each output rounded once to its dtype.
TEST_CASE("cuda batch_norm family, bf16 and f16 activations beside f32 parameters: == cpu, == f32 kernels rounded") {
  TG_REQUIRE_GPU();
  uint64_t seed = 34000;
  for (DType dt : {DType::BF16, DType::F16})
    for (const Shape& xs : kShapes)
      for (OpKind op : kOps) {
        const OpCase c = bn_case(op, xs, dt, seed++);
        CAPTURE(op_name(op));
        CAPTURE(xs.str());
        CAPTURE(dtype_name(dt));
        CHECK(run_case(c) == 0);
        CHECK(run_case_vs_f32(c) == 0);
      }
}

TEST_CASE("cuda batch_norm_grad_beta: an inf gradient sums to inf, as on the CPU") {
  TG_REQUIRE_GPU();
  const Shape xs{2, 3, 4, 5};
  std::vector<float> dy = random_vector(xs.numel(), 77);
  dy[7] = INFINITY;  // channel 0
  const DevTensor d(dy, false);
  DevTensor out(3, false);
  run_op(OpKind::batch_norm_grad_beta, {d.view(xs)}, out.view(Shape{3}), Attrs{});
  const std::vector<float> got = out.download();
  CHECK(got[0] == INFINITY);
  for (int c = 1; c < 3; ++c) {
    double want = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t e = 0; e < 20; ++e) want += dy[static_cast<size_t>((b * 3 + c) * 20 + e)];
    CHECK(got[static_cast<size_t>(c)] == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE("cuda batch_norm family: NHWC gives the NCHW kernels' bits") {
  TG_REQUIRE_GPU();
  uint64_t seed = 32000;
  for (const Shape& xs : kShapes)
    for (OpKind op : kOps) {
      CAPTURE(op_name(op));
      CAPTURE(xs.str());
      std::vector<std::vector<float>> x;
      for (const Shape& s : bn_inputs(op, xs)) {
        // Statistics (2-D inputs of inference and the update) hold a positive variance row.
        const bool stats = s.rank == 2;
        x.push_back(random_vector(s.numel(), seed++, stats ? 0.25f : -1.0f, 1.0f));
      }
      const std::vector<float> nchw = run_layout(op, xs, x, false);
      const std::vector<float> nhwc_out = run_layout(op, xs, x, true);
      CHECK(compare(fmt::format("{} {} NHWC vs NCHW", op_name(op), xs.str()), nhwc_out, nchw, Tol{}) == 0);
    }
}

// batch_norm_grad (the rows pass's fusion) writes dx, dgamma and dbeta with the bits of the
// three ops it replaces, in both layouts.
TEST_CASE("cuda batch_norm_grad == batch_norm_grad_x, _gamma and _beta bit for bit, NCHW and NHWC") {
  TG_REQUIRE_GPU();
  uint64_t seed = 33000;
  for (const Shape& xs : kShapes)
    for (bool channels_last : {false, true}) {
      CAPTURE(xs.str());
      CAPTURE(channels_last);
      const Shape shape = channels_last ? nhwc(xs) : xs;
      const int64_t c = xs[1];
      const DevTensor dy(random_vector(xs.numel(), seed++), false), x(random_vector(xs.numel(), seed++), false);
      const DevTensor gamma(random_vector(c, seed++), false);
      Attrs at;
      at.channels_last = channels_last;
      DevTensor dx(xs.numel(), false), params(2 * c, false), want_dx(xs.numel(), false), want_dgamma(c, false),
          want_dbeta(c, false);
      for (DevTensor* t : {&dx, &params, &want_dx, &want_dgamma, &want_dbeta}) t->poison();
      TG_CUDA_CHECK(cudaDeviceSynchronize());
      run_op(OpKind::batch_norm_grad, {dy.view(shape), x.view(shape), gamma.view(Shape{c})}, dx.view(shape), at,
             params.view(Shape{2, c}));
      run_op(OpKind::batch_norm_grad_x, {dy.view(shape), x.view(shape), gamma.view(Shape{c})}, want_dx.view(shape), at);
      run_op(OpKind::batch_norm_grad_gamma, {dy.view(shape), x.view(shape)}, want_dgamma.view(Shape{c}), at);
      run_op(OpKind::batch_norm_grad_beta, {dy.view(shape)}, want_dbeta.view(Shape{c}), at);
      std::vector<float> want = want_dgamma.download();
      const std::vector<float> dbeta = want_dbeta.download();
      want.insert(want.end(), dbeta.begin(), dbeta.end());
      CHECK(compare("dx", dx.download(), want_dx.download(), Tol{}) == 0);
      CHECK(compare("[dgamma; dbeta]", params.download(), want, Tol{}) == 0);
    }
}

}  // namespace tg::testing
