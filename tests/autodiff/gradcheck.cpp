#include "tests/autodiff/gradcheck.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/autodiff.h"
#include "kernels/interpreter.h"

namespace tg::testing {

GradCheckResult check_graph_gradients(const Graph& g, const std::vector<int>& wrt, const std::vector<int>& grads,
                                      const std::function<double(const Values&)>& objective,
                                      const GradCheckOptions& opt) {
  REQUIRE(wrt.size() == grads.size());
  Values values = make_values(g, opt.seed);
  if (opt.away_from_zero)
    for (int w : wrt)
      if (g.values[static_cast<size_t>(w)].role == Role::input)
        for (float& x : values[static_cast<size_t>(w)]) x = std::copysign(0.25f + 0.75f * std::fabs(x), x);
  if (opt.positive)
    for (int w : wrt)
      if (g.values[static_cast<size_t>(w)].role == Role::input)
        for (float& x : values[static_cast<size_t>(w)]) x = 0.25f + 0.75f * std::fabs(x);
  if (opt.distinct)
    for (int w : wrt)
      if (g.values[static_cast<size_t>(w)].role == Role::input) {
        std::vector<float>& x = values[static_cast<size_t>(w)];
        std::vector<size_t> order(x.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
        for (size_t rank = 0; rank < order.size(); ++rank)
          x[order[rank]] = 5.0f * opt.eps * (static_cast<float>(rank) - 0.5f * static_cast<float>(order.size()));
      }
  interpret(g, values);

  GradCheckResult r;
  std::vector<std::vector<float>> analytic;
  for (int gid : grads) {
    analytic.push_back(values[static_cast<size_t>(gid)]);
    for (float a : analytic.back()) {
      REQUIRE(std::isfinite(a));
      r.max_abs_grad = std::max(r.max_abs_grad, static_cast<double>(std::fabs(a)));
    }
  }
  const double atol = opt.atol * std::max(r.max_abs_grad, 1e-3);
  for (size_t i = 0; i < wrt.size(); ++i) {
    std::vector<float>& x = values[static_cast<size_t>(wrt[i])];
    for (size_t k = 0; k < x.size(); ++k) {
      const float x0 = x[k];
      const float xp = x0 + opt.eps, xm = x0 - opt.eps;
      x[k] = xp;
      interpret(g, values);
      const double lp = objective(values);
      x[k] = xm;
      interpret(g, values);
      const double lm = objective(values);
      x[k] = x0;
      const double fd = (lp - lm) / (static_cast<double>(xp) - static_cast<double>(xm));
      const double an = analytic[i][k];
      ++r.checked;
      r.worst = std::max(r.worst, std::fabs(fd - an) / std::max({std::fabs(fd), std::fabs(an), 1e-2 * r.max_abs_grad}));
      if (!(std::fabs(fd - an) <= atol + opt.rtol * std::max(std::fabs(fd), std::fabs(an)))) {
        if (++r.mismatches <= 5)
          MESSAGE(fmt::format("d/d {}[{}]: analytic {:.7g}, finite difference {:.7g} (eps {})",
                              g.values[static_cast<size_t>(wrt[i])].name, k, an, fd, opt.eps));
      }
    }
  }
  CHECK(r.checked > 0);
  // Shown with a failure, or always under doctest's -s.
  MESSAGE(fmt::format("{} elements, worst relative error {:.2e}, max |grad| {:.3g}", r.checked, r.worst, r.max_abs_grad));
  CHECK(r.mismatches == 0);
  return r;
}

GradCheckResult check_op_gradients(const OpFn& fn, const GradCheckOptions& opt) {
  Graph g;
  RecordingBuilder b(g);
  std::vector<Value> wrt;
  const Value out = fn(b, wrt);
  REQUIRE(!wrt.empty());
  const Value proj = b.input("proj", out.shape);
  const Value loss = reduce_sum(b, reshape(b, mul(b, out, proj), Shape{out.shape.numel()}), 0);
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, wrt);
  std::vector<int> wrt_ids, grad_ids;
  for (size_t i = 0; i < wrt.size(); ++i) {
    REQUIRE_MESSAGE(grads[i].valid(), "no gradient for wrt value ", i);
    CHECK(grads[i].shape == wrt[i].shape);
    wrt_ids.push_back(wrt[i].id);
    grad_ids.push_back(grads[i].id);
  }
  const int out_id = out.id, proj_id = proj.id;
  auto objective = [out_id, proj_id](const Values& v) {
    const std::vector<float>& o = v[static_cast<size_t>(out_id)];
    const std::vector<float>& p = v[static_cast<size_t>(proj_id)];
    double s = 0.0;
    for (size_t i = 0; i < o.size(); ++i) s += static_cast<double>(o[i]) * p[i];
    return s;
  };
  return check_graph_gradients(g, wrt_ids, grad_ids, objective, opt);
}

}  // namespace tg::testing
