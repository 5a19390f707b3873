// Gradient checks of whole models at small sizes: d loss / d every parameter and
// d loss / d x, the loss recomputed in double from the float prediction.
#include <doctest/doctest.h>

#include <cmath>

#include "graph/autodiff.h"
#include "graph/models.h"
#include "kernels/interpreter.h"
#include "tests/autodiff/gradcheck.h"
#include "tests/common/models.h"

namespace tg::testing {
namespace {

double mse(const std::vector<float>& p, const std::vector<float>& t) {
  double s = 0.0;
  for (size_t i = 0; i < p.size(); ++i) s += (static_cast<double>(p[i]) - t[i]) * (static_cast<double>(p[i]) - t[i]);
  return s / static_cast<double>(p.size());
}

double cross_entropy(const std::vector<float>& logits, const std::vector<float>& labels) {
  const size_t rows = labels.size(), cols = logits.size() / rows;
  double total = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    double mx = logits[r * cols];
    for (size_t j = 1; j < cols; ++j) mx = std::max(mx, static_cast<double>(logits[r * cols + j]));
    double s = 0.0;
    for (size_t j = 0; j < cols; ++j) s += std::exp(logits[r * cols + j] - mx);
    total += mx + std::log(s) - logits[r * cols + static_cast<size_t>(labels[r])];
  }
  return total / static_cast<double>(rows);
}

// Differentiates the model's own loss with respect to its parameters and x.
GradCheckResult check_model(const ModelFn& model, bool ce, GradCheckOptions opt = {}) {
  Graph g;
  RecordingBuilder b(g);
  const ModelOutputs out = model(b);
  REQUIRE(out.loss.valid());
  std::vector<Value> wrt;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].role == Role::parameter || g.values[v].name == "x")
      wrt.push_back(RecordingBuilder::handle(g, static_cast<int>(v)));
  const std::vector<Value> grads = backward(b, tape_from_graph(g), out.loss, wrt);
  std::vector<int> wrt_ids, grad_ids;
  for (size_t i = 0; i < wrt.size(); ++i) {
    REQUIRE_MESSAGE(grads[i].valid(), "no gradient for ", g.values[static_cast<size_t>(wrt[i].id)].name);
    wrt_ids.push_back(wrt[i].id);
    grad_ids.push_back(grads[i].id);
  }
  const int pred = out.prediction.id;
  const int other = g.find_value(ce ? "labels" : "target");
  REQUIRE(other >= 0);
  auto objective = [=](const Values& v) {
    const auto& p = v[static_cast<size_t>(pred)];
    const auto& o = v[static_cast<size_t>(other)];
    return ce ? cross_entropy(p, o) : mse(p, o);
  };
  // The graph's own float loss agrees with the double one.
  Values values = make_values(g, opt.seed);
  interpret(g, values);
  CHECK(values[static_cast<size_t>(out.loss.id)][0] == doctest::Approx(objective(values)).epsilon(1e-5));
  return check_graph_gradients(g, wrt_ids, grad_ids, objective, opt);
}

GradCheckOptions model_options() {
  GradCheckOptions opt;
  opt.eps = 1e-3f;  // small, so that a perturbation rarely carries a ReLU input across 0
  opt.rtol = 5e-3;
  opt.atol = 1e-3;
  return opt;
}

TEST_CASE("grad model chain") {
  ChainConfig c = chain_config(8, 6);
  check_model(chain_model(c), false, model_options());
  c.in_place_relu = true;
  check_model(chain_model(c), false, model_options());
}

MlpConfig small_mlp(MlpConfig::Loss loss) { return mlp_config(4, 5, 6, 3, 3, loss); }

TEST_CASE("grad model mlp mse") {
  check_model(mlp_model(small_mlp(MlpConfig::Loss::mse)), false, model_options());
}

TEST_CASE("grad model mlp cross_entropy") {
  MlpConfig c = small_mlp(MlpConfig::Loss::cross_entropy);
  c.in_place_relu = true;
  check_model(mlp_model(c), true, model_options());
}

TEST_CASE("grad model transformer_block") {
  GradCheckOptions opt = model_options();
  opt.eps = 1e-2f;  // no ReLU: smooth, so a larger step has less rounding noise
  check_model(transformer_model(transformer_config(2, 3, 8, 2)), false, opt);
}

}  // namespace
}  // namespace tg::testing
