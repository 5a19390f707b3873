// Losses, their gradients, and the in-place optimizer updates.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "graph/errors.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

TEST_CASE("mse_loss: hand-computed") {
  // differences [1, -2, 0, 3]: (1 + 4 + 0 + 9) / 4 = 3.5
  const Tensor l = run_op(OpKind::mse_loss, {tensor({2, 2}, {2, 0, 5, 4}), tensor({2, 2}, {1, 2, 5, 1})});
  CHECK(l.shape == Shape{1});
  CHECK(l.data == std::vector<float>{3.5f});
}

TEST_CASE("mse_loss_grad: hand-computed and against finite differences") {
  // 2 * (p - t) / n * dloss with n = 4, dloss = 2: (p - t) * 1
  const Tensor g = run_op(OpKind::mse_loss_grad, {tensor({4}, {2, 0, 5, 4}), tensor({4}, {1, 2, 5, 1}), tensor({1}, {2})});
  CHECK(g.data == std::vector<float>{1, -2, 0, 3});

  const Tensor p = random_tensor({3, 5}, 81);
  const Tensor t = random_tensor({3, 5}, 82);
  const Tensor dl = tensor({1}, {0.7f});
  const Tensor dp = run_op(OpKind::mse_loss_grad, {p, t, dl});
  check_close(dp.data, numeric_grad(OpKind::mse_loss, {p, t}, 0, {0.7f}, {}, 1e-2f), 1e-5, 1e-3, "mse_loss_grad");
}

TEST_CASE("padded_mse_loss(_grad): bit for bit mse_loss(_grad) on the real prefix, 0 past it") {
  const Tensor p = random_tensor({6, 5}, 91), t = random_tensor({6, 5}, 92);
  const Tensor dl = tensor({1}, {0.3f});
  for (int64_t c : {int64_t{1}, int64_t{7}, int64_t{29}, int64_t{30}}) {
    CAPTURE(c);
    const Tensor pc = tensor({c}, std::vector<float>(p.data.begin(), p.data.begin() + c));
    const Tensor tc = tensor({c}, std::vector<float>(t.data.begin(), t.data.begin() + c));
    const Tensor count = tensor({1}, {static_cast<float>(c)});
    CHECK(run_op(OpKind::padded_mse_loss, {p, t, count}).data == run_op(OpKind::mse_loss, {pc, tc}).data);
    const Tensor g = run_op(OpKind::padded_mse_loss_grad, {p, t, count, dl});
    const Tensor gc = run_op(OpKind::mse_loss_grad, {pc, tc, dl});
    CHECK(std::vector<float>(g.data.begin(), g.data.begin() + c) == gc.data);
    for (size_t i = static_cast<size_t>(c); i < g.data.size(); ++i) CHECK(g.data[i] == 0.0f);
  }
  for (float bad : {0.0f, 31.0f, 2.5f, -1.0f, NAN}) {
    CAPTURE(bad);
    const Tensor count = tensor({1}, {bad});
    // The caller's data, not a bug: an InputError (still an invalid_argument).
    CHECK_THROWS_WITH_AS(run_op(OpKind::padded_mse_loss, {p, t, count}),
                         doctest::Contains("a whole number in [1, 30]"), tg::InputError);
    CHECK_THROWS_WITH_AS(run_op(OpKind::padded_mse_loss_grad, {p, t, count, dl}),
                         doctest::Contains("padded_mse_loss_grad needs the number of real"), std::invalid_argument);
  }
}

TEST_CASE("cross_entropy: hand-computed") {
  // Uniform logits: -log(1/4) per row whatever the label.
  const Tensor u = run_op(OpKind::cross_entropy, {tensor({2, 4}, std::vector<float>(8, 3.0f)), tensor({2}, {0, 3})});
  CHECK(u.shape == Shape{1});
  check_close(u.data, std::vector<double>{std::log(4.0)}, 1e-7, 0.0, "uniform");
  // Row [0, log 3] (softmax [1/4, 3/4]) with label 1: -log(3/4); label 0: -log(1/4).
  const float l3 = std::log(3.0f);
  const Tensor v = run_op(OpKind::cross_entropy, {tensor({2, 2}, {0, l3, 0, l3}), tensor({2}, {1, 0})});
  check_close(v.data, std::vector<double>{0.5 * (-std::log(0.75) - std::log(0.25))}, 1e-7, 1e-6, "two rows");
  // Large logits stay finite.
  const Tensor w = run_op(OpKind::cross_entropy, {tensor({1, 2}, {1000.0f, 0.0f}), tensor({1}, {1})});
  check_close(w.data, std::vector<double>{1000.0}, 1e-4, 0.0, "large");
}

TEST_CASE("cross_entropy_grad: hand-computed, rows sum to 0, matches finite differences") {
  const float l3 = std::log(3.0f);
  const Tensor g = run_op(OpKind::cross_entropy_grad, {tensor({2, 2}, {0, l3, 0, l3}), tensor({2}, {1, 0}), tensor({1}, {1})});
  // (softmax - onehot) / 2: row 0 [0.25, -0.25] / 2, row 1 [-0.75, 0.75] / 2
  check_close(g.data, std::vector<double>{0.125, -0.125, -0.375, 0.375}, 1e-7, 1e-6, "hand");

  const Tensor x = random_tensor({5, 7}, 83, -3.0f, 3.0f);
  Tensor labels = tensor({5}, std::vector<float>(5));
  random_labels(labels.data, 84, 7);
  const Tensor dl = tensor({1}, {1.3f});
  const Tensor dx = run_op(OpKind::cross_entropy_grad, {x, labels, dl});
  for (int r = 0; r < 5; ++r) {
    double s = 0.0;
    for (int j = 0; j < 7; ++j) s += dx.data[static_cast<size_t>(r * 7 + j)];
    CHECK(std::fabs(s) < 1e-7);
  }
  check_close(dx.data, numeric_grad(OpKind::cross_entropy, {x, labels}, 0, {1.3f}, {}, 1e-2f), 1e-5, 2e-3, "fd");
}

TEST_CASE("cross_entropy rejects labels that are not integer classes in range") {
  const Tensor x = random_tensor({1, 4}, 85);
  for (float bad : {-1.0f, 4.0f, 1.5f, NAN}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(run_op(OpKind::cross_entropy, {x, tensor({1}, {bad})}), std::invalid_argument);
    CHECK_THROWS_AS(run_op(OpKind::cross_entropy_grad, {x, tensor({1}, {bad}), tensor({1}, {1})}), std::invalid_argument);
  }
  CHECK_THROWS_WITH(run_op(OpKind::cross_entropy, {x, tensor({1}, {7})}),
                    doctest::Contains("integer class indices in [0, 4)"));
}

namespace {
// Runs an update op in place on p (and v).
void update(OpKind op, std::vector<float>& p, std::vector<float>& g, std::vector<float>* v, const Attrs& at) {
  const Shape s{static_cast<int64_t>(p.size())};
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = v ? 3 : 2;
  c.in[0] = {p.data(), s};
  c.in[1] = {g.data(), s};
  if (v) c.in[2] = {v->data(), s};
  kernels::run_cpu(c);
}
}  // namespace

TEST_CASE("sgd: p -= lr times g, in place") {
  std::vector<float> p{1.0f, -2.0f, 0.5f}, g{2.0f, 4.0f, -8.0f};
  Attrs at;
  at.lr = 0.25f;
  update(OpKind::sgd, p, g, nullptr, at);
  CHECK(p == std::vector<float>{0.5f, -3.0f, 2.5f});
  CHECK(g == std::vector<float>{2.0f, 4.0f, -8.0f});
}

TEST_CASE("sgd_momentum: 3 steps with a constant gradient equal the closed form") {
  // v_k = g (1 + m + ... + m^(k-1)); after 3 steps p = p0 - lr g (3 + 2m + m^2).
  Attrs at;
  at.lr = 0.1f;
  at.momentum = 0.9f;
  const Tensor p0 = random_tensor({17}, 86);
  std::vector<float> p = p0.data, g = random_tensor({17}, 87).data, v(17, 0.0f);
  for (int step = 0; step < 3; ++step) update(OpKind::sgd_momentum, p, g, &v, at);
  const double m = at.momentum, lr = at.lr;
  std::vector<double> want_p(17), want_v(17);
  for (size_t i = 0; i < 17; ++i) {
    want_p[i] = p0.data[i] - lr * g[i] * (3 + 2 * m + m * m);
    want_v[i] = g[i] * (1 + m + m * m);
  }
  check_close(p, want_p, 1e-6, 1e-6, "param");
  check_close(v, want_v, 1e-6, 1e-6, "velocity");
}

TEST_CASE("sgd_momentum: one step, hand-computed (PyTorch convention)") {
  std::vector<float> p{1.0f}, g{0.5f}, v{2.0f};
  Attrs at;
  at.lr = 0.5f;
  at.momentum = 0.5f;
  update(OpKind::sgd_momentum, p, g, &v, at);  // v = 0.5*2 + 0.5 = 1.5; p = 1 - 0.5*1.5
  CHECK(v == std::vector<float>{1.5f});
  CHECK(p == std::vector<float>{0.25f});
}

namespace {

// torch.optim.AdamW's single-tensor step at step t (from 1), written out in double as
// PyTorch's code does it: decay, lerp of the first moment, addcmul of the second, then
// addcdiv with the bias corrections.
void torch_adamw_step(std::vector<double>& p, const std::vector<float>& g, std::vector<double>& m,
                      std::vector<double>& v, int t, double lr, const AdamAttr& a) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), t);
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1.0 - lr * a.weight_decay;
    m[i] += (g[i] - m[i]) * (1.0 - a.beta1);
    v[i] = v[i] * a.beta2 + (1.0 - a.beta2) * g[i] * g[i];
    const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + a.eps;
    p[i] -= lr / bc1 * m[i] / denom;
  }
}

// One adamw (or adamw_multi) over groups of five tensors (and a found-inf flag, last), in place.
void run_adamw(OpKind op, std::vector<Tensor>& ins, const Attrs& at) {
  kernels::OpCall c;
  std::vector<kernels::TensorView> more;
  set_inputs(c, ins, more);
  c.op = op;
  c.attrs = &at;
  kernels::run_cpu(c);
}

}  // namespace

TEST_CASE("adamw: 6 steps on random gradients follow torch.optim.AdamW's formula") {
  AdamAttr other;
  other.beta1 = 0.8f;
  other.beta2 = 0.99f;
  other.eps = 1e-6f;
  other.weight_decay = 0.1f;
  for (const AdamAttr& a : {AdamAttr{}, other}) {
    CAPTURE(a.beta1);
    Attrs at;
    at.lr = 0.01f;
    at.adam = a;
    const int64_t n = 37;
    std::vector<Tensor> ins = {random_tensor({n}, 5), tensor({n}, std::vector<float>(n)),
                               tensor({n}, std::vector<float>(n)), tensor({n}, std::vector<float>(n)), tensor({1}, {0})};
    std::vector<double> p(ins[0].data.begin(), ins[0].data.end()), m(n, 0.0), v(n, 0.0);
    for (int t = 1; t <= 6; ++t) {
      ins[1] = random_tensor({n}, 100 + static_cast<uint64_t>(t), -2.0f, 2.0f);
      run_adamw(OpKind::adamw, ins, at);
      torch_adamw_step(p, ins[1].data, m, v, t, at.lr, a);
      CHECK(ins[4].data[0] == static_cast<float>(t));
    }
    check_close(ins[0].data, p, 1e-6, 1e-5, "param");
    check_close(ins[2].data, m, 1e-7, 1e-5, "exp_avg");
    check_close(ins[3].data, v, 1e-8, 1e-5, "exp_avg_sq");
  }
}

TEST_CASE("adamw: the first step moves every parameter by about lr against its gradient's sign") {
  // Bias-corrected, m / sqrt(v) = g / |g| at step 1: p = p (1 - lr wd) - lr sign(g).
  Attrs at;
  at.lr = 0.1f;
  at.adam.weight_decay = 0.0f;
  std::vector<Tensor> ins = {tensor({3}, {1.0f, 1.0f, 1.0f}), tensor({3}, {0.5f, -3.0f, 2e-3f}),
                             tensor({3}, {0, 0, 0}), tensor({3}, {0, 0, 0}), tensor({1}, {0})};
  run_adamw(OpKind::adamw, ins, at);
  check_close(ins[0].data, std::vector<double>{0.9, 1.1, 0.9}, 1e-5, 0.0, "param");
}

TEST_CASE("adamw_multi: each group gets the bits of its own adamw") {
  Attrs at;
  at.lr = 0.02f;
  at.adam.weight_decay = 0.05f;
  const std::vector<Shape> shapes = {{3, 4}, {5}, {2, 3, 2}};
  std::vector<Tensor> multi;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor v = random_tensor(shapes[i], 60 + i);
    for (float& x : v.data) x = x * x;  // exp_avg_sq >= 0
    multi.insert(multi.end(), {random_tensor(shapes[i], 30 + i), random_tensor(shapes[i], 40 + i),
                               random_tensor(shapes[i], 50 + i), v, tensor({1}, {static_cast<float>(i + 2)})});
  }
  std::vector<Tensor> single = multi;
  for (int step = 0; step < 2; ++step) {
    run_adamw(OpKind::adamw_multi, multi, at);
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<Tensor> group(single.begin() + static_cast<std::ptrdiff_t>(5 * i),
                                single.begin() + static_cast<std::ptrdiff_t>(5 * i + 5));
      run_adamw(OpKind::adamw, group, at);
      std::copy(group.begin(), group.end(), single.begin() + static_cast<std::ptrdiff_t>(5 * i));
    }
  }
  for (size_t k = 0; k < multi.size(); ++k) {
    CAPTURE(k);
    CHECK(multi[k].data == single[k].data);
  }
}

TEST_CASE("adamw and adamw_multi with a found-inf flag: clear gives the unguarded bits, set moves nothing") {
  Attrs at;
  at.lr = 0.02f;
  at.adam.weight_decay = 0.05f;
  const std::vector<Shape> shapes = {{3, 4}, {5}};
  for (OpKind op : {OpKind::adamw, OpKind::adamw_multi}) {
    CAPTURE(op_name(op));
    const size_t groups = op == OpKind::adamw ? 1 : shapes.size();
    std::vector<Tensor> plain;
    for (size_t i = 0; i < groups; ++i)
      plain.insert(plain.end(), {random_tensor(shapes[i], 70 + i), random_tensor(shapes[i], 80 + i),
                                 tensor(shapes[i], std::vector<float>(static_cast<size_t>(shapes[i].numel()))),
                                 tensor(shapes[i], std::vector<float>(static_cast<size_t>(shapes[i].numel()))),
                                 tensor({1}, {0})});
    std::vector<Tensor> guarded = plain;
    guarded.push_back(tensor({1}, {0}));
    const size_t flag = guarded.size() - 1;
    // One step of both on the same fresh gradients, the flag clear: the same bits everywhere.
    auto clear_step = [&](uint64_t seed) {
      for (size_t i = 0; i < groups; ++i) {
        plain[5 * i + 1] = random_tensor(shapes[i], seed + i);
        guarded[5 * i + 1] = plain[5 * i + 1];
      }
      run_adamw(op, plain, at);
      run_adamw(op, guarded, at);
      for (size_t k = 0; k < plain.size(); ++k) {
        CAPTURE(k);
        CHECK(bitwise_equal(guarded[k].data, plain[k].data));
      }
    };
    clear_step(100);
    clear_step(110);
    // A set flag (an overflowed step's gradient): no parameter, moment or step count moves.
    const std::vector<Tensor> before = guarded;
    for (size_t i = 0; i < groups; ++i)
      guarded[5 * i + 1].data.assign(guarded[5 * i + 1].data.size(), std::numeric_limits<float>::infinity());
    guarded[flag].data[0] = 1.0f;
    run_adamw(op, guarded, at);
    for (size_t k = 0; k < flag; ++k) {
      CAPTURE(k);
      if (k % 5 != 1) CHECK(bitwise_equal(guarded[k].data, before[k].data));
    }
    for (size_t i = 0; i < groups; ++i) CHECK(guarded[5 * i + 4].data[0] == 2.0f);
    // The next clear step is the unguarded run's third: the skipped one left no trace.
    guarded[flag].data[0] = 0.0f;
    clear_step(200);
    for (size_t i = 0; i < groups; ++i) CHECK(guarded[5 * i + 4].data[0] == 3.0f);
  }
}

TEST_CASE("global_norm and clip_by_norm: torch.nn.utils.clip_grad_norm_'s norm and factor") {
  const std::vector<Tensor> grads = {random_tensor({3, 4}, 11), random_tensor({7}, 12, -3.0f, 3.0f),
                                     random_tensor({2, 3, 2}, 13)};
  double sum = 0.0;
  for (const Tensor& t : grads)
    for (float x : t.data) sum += static_cast<double>(x) * x;
  const Tensor norm = run_op(OpKind::global_norm, grads);
  CHECK(norm.shape == Shape{1});
  check_close(norm.data, std::vector<double>{std::sqrt(sum)}, 0.0, 1e-7, "norm");
  // A norm of 2: max_norm 0.5 scales by 0.5 / (2 + 1e-6); max_norm 4 leaves the gradient as it is.
  const Tensor two = tensor({1}, {2.0f});
  Attrs at;
  at.max_norm = 0.5f;
  const Tensor clipped = run_op(OpKind::clip_by_norm, {grads[1], two}, at);
  const float coef = 0.5f / (2.0f + 1e-6f);
  for (size_t i = 0; i < clipped.data.size(); ++i) CHECK(clipped.data[i] == grads[1].data[i] * coef);
  at.max_norm = 4.0f;
  CHECK(run_op(OpKind::clip_by_norm, {grads[1], two}, at).data == grads[1].data);
  // A NaN norm makes every gradient NaN, as torch's clamp keeps the NaN.
  const Tensor nan = run_op(OpKind::clip_by_norm, {grads[1], tensor({1}, {NAN})}, at);
  for (float x : nan.data) CHECK(std::isnan(x));
}

#define CHECK_CONTAINS(text, part)                                    \
  do {                                                                \
    const std::string got_ = (text);                                  \
    CHECK_MESSAGE(got_.find(part) != std::string::npos, got_);        \
  } while (0)

TEST_CASE("adamw, global_norm and clip_by_norm: the shape rules refuse what they cannot use") {
  Attrs at;
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw, {{4}, {4}, {4}, {5}, {1}}, at, "u"), "exp_avg_sq [5] differs from the parameter [4]");
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw, {{4}, {4}, {4}, {4}, {2}}, at, "u"), "the step count (input 4) is [2]");
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw, {{4}, {4}, {4}, {4}, {1}, {2}}, at, "u"),
                 "found-inf flag (the last input) [2] must be [1]");
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw_multi, {{4}, {4}, {4}, {4}, {1}, {3}, {3}, {3}, {3}, {1}, {4}}, at, "u"),
                 "found-inf flag (the last input) [4] must be [1]");
  Attrs bad = at;
  bad.adam.beta2 = 1.0f;
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw, {{4}, {4}, {4}, {4}, {1}}, bad, "u"), "betas");
  bad = at;
  bad.adam.weight_decay = -0.1f;
  CHECK_CONTAINS(shape_rule_message(OpKind::adamw, {{4}, {4}, {4}, {4}, {1}}, bad, "u"), "weight_decay");
  CHECK_CONTAINS(shape_rule_message(OpKind::clip_by_norm, {{4}, {2}}, at, "c"), "must be one element");
  bad = at;
  bad.max_norm = 0.0f;
  CHECK_CONTAINS(shape_rule_message(OpKind::clip_by_norm, {{4}, {1}}, bad, "c"), "max_norm = 0");
  CHECK(shape_rule_message(OpKind::global_norm, {{4}, {2, 3}}, at, "n") == "accepted");
}
