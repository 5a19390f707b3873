// The plain interpreter on small hand-built graphs.
#include <algorithm>
#include <cmath>
#include <utility>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/optimizers.h"
#include "kernels/interpreter.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

const std::vector<float>& val(const std::vector<std::vector<float>>& v, const Value& x) {
  return v[static_cast<size_t>(x.id)];
}

Tensor as_tensor(const std::vector<std::vector<float>>& v, const Value& x) { return {val(v, x), x.shape}; }

}  // namespace

TEST_CASE("make_values: parameters from initial_values, inputs random, labels integer, the rest NaN") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {4, 3});
  const Value w = b.parameter("w", {3, 5});
  const Value labels = b.input("labels", {4});
  const Value logits = matmul(b, x, w);
  const Value loss = cross_entropy(b, logits, labels);
  const Value vel = b.optimizer_state(w, "w.velocity");
  b.mark_output(loss);

  const auto v = make_values(g, 42);
  REQUIRE(v.size() == g.values.size());
  CHECK(val(v, w) == initial_values(g.values[static_cast<size_t>(w.id)], 42));
  CHECK(val(v, vel) == std::vector<float>(15, 0.0f));
  bool in_range = true, distinct = false;
  for (float f : val(v, x)) in_range = in_range && f >= -1.0f && f < 1.0f;
  for (float f : val(v, x)) distinct = distinct || f != val(v, x)[0];
  CHECK(in_range);
  CHECK(distinct);
  for (float l : val(v, labels)) CHECK((l >= 0.0f && l < 5.0f && l == std::floor(l)));
  for (float f : val(v, logits)) CHECK(std::isnan(f));
  CHECK(std::isnan(val(v, loss)[0]));

  // Deterministic per seed; another seed gives other inputs.
  CHECK(checksum(make_values(g, 42)[static_cast<size_t>(x.id)]) == checksum(val(v, x)));
  CHECK(checksum(make_values(g, 43)[static_cast<size_t>(x.id)]) != checksum(val(v, x)));
}

TEST_CASE("interpret: a small MLP layer with mse loss equals the kernels run by hand") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {4, 3});
  const Value t = b.input("t", {4, 2});
  const Value w = b.parameter("w", {3, 2});
  const Value bias = b.parameter("b", {2}, ParamInit{ParamInit::Kind::constant, 0.1f});
  const Value h = bias_add(b, matmul(b, x, w), bias);
  const Value y = relu(b, h);
  const Value r = reshape(b, y, Shape{8});
  const Value loss = mse_loss(b, y, t);
  b.mark_output(loss);
  b.mark_output(r);

  auto v = make_values(g, 7);
  interpret(g, v);

  const Tensor mm = run_op(OpKind::matmul, {as_tensor(v, x), as_tensor(v, w)});
  const Tensor hb = run_op(OpKind::bias_add, {mm, as_tensor(v, bias)});
  const Tensor yr = run_op(OpKind::relu, {hb});
  const Tensor l = run_op(OpKind::mse_loss, {yr, as_tensor(v, t)});
  CHECK(bitwise_equal(val(v, y), yr.data));
  CHECK(bitwise_equal(val(v, r), yr.data));
  CHECK(bitwise_equal(val(v, loss), l.data));
  CHECK(std::isfinite(val(v, loss)[0]));
  CHECK(val(v, bias) == std::vector<float>{0.1f, 0.1f});
}

TEST_CASE("interpret: one training step with sgd_momentum updates w to w - lr times dw") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {2, 3});
  const Value t = b.input("t", {2, 2});
  const Value w = b.parameter("w", {3, 2});
  const Value y = matmul(b, x, w);
  const Value loss = mse_loss(b, y, t);
  const Value dloss = fill(b, Shape{1}, 1.0f);
  const Value dy = b.apply(OpKind::mse_loss_grad, {y, t, dloss});
  const Value dw = matmul(b, x, dy, /*trans_a=*/true);
  const Value vel = b.optimizer_state(w, "w.velocity");
  Attrs at;
  at.lr = 0.5f;
  at.momentum = 0.9f;
  b.apply(OpKind::sgd_momentum, {w, dw, vel}, at);
  b.mark_output(loss);

  auto v = make_values(g, 3);
  const std::vector<float> w0 = val(v, w);
  const std::vector<float> xs = val(v, x), ts = val(v, t);
  interpret(g, v);

  // dw = x^T * 2 (x w0 - t) / 4, in double; velocity starts at 0 so v = dw.
  std::vector<double> want_w(6), want_v(6);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j) {
      double s = 0.0;
      for (int i = 0; i < 2; ++i) {
        double yij = 0.0;
        for (int p = 0; p < 3; ++p) yij += static_cast<double>(xs[static_cast<size_t>(i * 3 + p)]) * w0[static_cast<size_t>(p * 2 + j)];
        s += xs[static_cast<size_t>(i * 3 + k)] * 2.0 * (yij - ts[static_cast<size_t>(i * 2 + j)]) / 4.0;
      }
      want_v[static_cast<size_t>(k * 2 + j)] = s;
      want_w[static_cast<size_t>(k * 2 + j)] = w0[static_cast<size_t>(k * 2 + j)] - 0.5 * s;
    }
  check_close(val(v, vel), want_v, 1e-6, 1e-5, "velocity");
  check_close(val(v, w), want_w, 1e-6, 1e-5, "w");
  CHECK(std::isfinite(val(v, loss)[0]));
}

TEST_CASE("interpret rejects value vectors that do not match the graph, naming the problem") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {2, 2});
  b.mark_output(relu(b, x));
  auto v = make_values(g, 1);
  auto fewer = v;
  fewer.pop_back();
  CHECK_THROWS_WITH_AS(interpret(g, fewer), doctest::Contains("make_values"), GraphError);
  auto wrong = v;
  wrong[static_cast<size_t>(x.id)].resize(3);
  CHECK_THROWS_WITH_AS(interpret(g, wrong), doctest::Contains("value 'x' has shape [2,2]"), GraphError);
}

TEST_CASE("interpret: data a kernel cannot use is an InputError naming the node") {
  Graph g;
  RecordingBuilder b(g);
  const Value logits = b.input("logits", {2, 3});
  const Value labels = b.input("labels", {2});
  b.mark_output(cross_entropy(b, logits, labels));
  auto v = make_values(g, 1);
  v[static_cast<size_t>(labels.id)] = {0.0f, 9.0f};
  CHECK_THROWS_WITH_AS(interpret(g, v), doctest::Contains("cross_entropy 'n0': labels[1] is 9; cross_entropy needs integer "
                                                          "class indices in [0, 3)"), InputError);
}

TEST_CASE("checksum and sum") {
  const std::vector<float> a{1.0f, 2.0f, -0.5f};
  std::vector<float> b = a;
  CHECK(checksum(a) == checksum(b));
  b[2] = -0.0f * 0.0f - 0.5f;  // same value, same bits
  CHECK(checksum(a) == checksum(b));
  std::vector<float> z{0.0f}, nz{-0.0f};
  CHECK(checksum(z) != checksum(nz));  // bits, not values
  CHECK(checksum({1.0f, 2.0f}) != checksum({2.0f, 1.0f}));
  CHECK(sum(a) == 2.5);
  CHECK(sum({}) == 0.0);
}

TEST_CASE("clip_grad_norm: twelve gradients scaled as torch.nn.utils.clip_grad_norm_ scales them") {
  for (float max_norm : {0.3f, 100.0f}) {
    CAPTURE(max_norm);
    Graph g;
    RecordingBuilder b(g);
    std::vector<Value> grads;
    std::vector<std::string> names;
    for (int i = 0; i < 12; ++i) {
      names.push_back("p" + std::to_string(i));
      grads.push_back(b.input("g" + std::to_string(i), i % 2 ? Shape{3, 4} : Shape{5}));
    }
    const std::vector<Value> clipped = clip_grad_norm(b, grads, names, max_norm);
    for (const Value& c : clipped) b.mark_output(c);
    int norms = 0;
    for (const Node& n : g.nodes) norms += n.op == OpKind::global_norm;
    CHECK(norms == 4);  // 12 -> 3 -> 1: groups of at most five

    auto v = make_values(g, 7);
    interpret(g, v);
    double sum = 0.0;
    for (const Value& x : grads)
      for (float f : val(v, x)) sum += static_cast<double>(f) * f;
    const double coef = std::min(1.0, max_norm / (std::sqrt(sum) + 1e-6));
    for (size_t i = 0; i < grads.size(); ++i) {
      std::vector<double> want;
      for (float f : val(v, grads[i])) want.push_back(f * coef);
      check_close(val(v, clipped[i]), want, 0.0, 1e-6, names[i].c_str());
    }
  }
}

TEST_CASE("interpret: a fused_elementwise program across dtypes gives its ops' bits, each value in its dtype") {
  for (DType low : {DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(low));
    Graph ops, fused;
    RecordingBuilder a(ops), f(fused);
    const Value h = a.input("h", {3, 5}, low), x = a.input("x", {3, 5}), y = a.input("y", {3, 5});
    const Value want = gelu(a, add(a, cast(a, mul(a, x, y), low), h));
    const Value fh = f.input("h", {3, 5}, low), fx = f.input("x", {3, 5}), fy = f.input("y", {3, 5});
    Attrs at;
    at.program.code = {{EwOp::mul, 1, 2}, {EwOp::cast, 3, 0, 1.0f, low}, {EwOp::add, 4, 0}, {EwOp::gelu, 5}};
    const Value got = f.apply(OpKind::fused_elementwise, {fh, fx, fy}, at);
    CHECK(got.dtype == low);
    std::vector<std::vector<float>> vo = make_values(ops, 5), vf = make_values(fused, 6);
    for (const auto& [from, to] : {std::pair{h, fh}, std::pair{x, fx}, std::pair{y, fy}})
      vf[static_cast<size_t>(to.id)] = vo[static_cast<size_t>(from.id)];
    interpret(ops, vo);
    interpret(fused, vf);
    CHECK(bitwise_equal(val(vf, got), val(vo, want)));
  }
}
