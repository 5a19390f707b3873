// The graphs build_training_graph and build_inference_graph produce: roles, one
// update per parameter, pruning, and a loss that goes down on the interpreter.
#include <doctest/doctest.h>

#include <algorithm>

#include "graph/errors.h"
#include "graph/training.h"
#include "kernels/interpreter.h"
#include "tests/common/models.h"

namespace tg {
namespace {

using testing::chain_config;
using testing::chain_model;
using testing::mlp_model;

MlpConfig small_mlp(MlpConfig::Loss loss) { return testing::mlp_config(8, 6, 16, 3, 4, loss); }

int count_role(const Graph& g, Role r) { return static_cast<int>(g.values_with_role(r).size()); }

TEST_CASE("training graph: roles, one update per parameter, outputs") {
  const MlpConfig c = small_mlp(MlpConfig::Loss::mse);
  const Graph g = build_training_graph(mlp_model(c));
  const std::vector<int> params = parameter_ids(g);
  REQUIRE(params.size() == 6);
  CHECK(g.values[static_cast<size_t>(params[0])].name == "mlp.l0.w");
  CHECK(count_role(g, Role::gradient) == 6);
  CHECK(count_role(g, Role::optimizer_state) == 6);
  CHECK(count_role(g, Role::activation) > 0);
  for (int p : params) {
    int updates = 0;
    for (const Node& n : g.nodes) {
      if (!op_is_update(n.op) || n.inputs[0] != p) continue;
      ++updates;
      CHECK(n.op == OpKind::sgd_momentum);
      CHECK(n.attrs.lr == 0.01f);
      CHECK(g.values[static_cast<size_t>(n.inputs[1])].role == Role::gradient);
      CHECK(g.values[static_cast<size_t>(n.inputs[2])].role == Role::optimizer_state);
      CHECK(g.values[static_cast<size_t>(n.inputs[2])].name == g.values[static_cast<size_t>(p)].name + ".velocity");
      CHECK(g.values[static_cast<size_t>(n.inputs[1])].shape == g.values[static_cast<size_t>(p)].shape);
    }
    CHECK(updates == 1);
  }
  // Every activation is produced by a forward node and read by a backward one.
  const auto consumers = g.consumers();
  for (int a : g.values_with_role(Role::activation)) {
    const auto& readers = consumers[static_cast<size_t>(a)];
    CHECK(readers.size() >= 2);  // one forward reader, one backward reader at least
  }
  REQUIRE(g.outputs.size() == 2);
  CHECK(g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(g.outputs[0])].producer)].op == OpKind::mse_loss);
  CHECK(g.values[static_cast<size_t>(g.outputs[1])].role == Role::output);
  CHECK_NOTHROW(g.topo_order());
}

TEST_CASE("training graph with plain sgd has no optimizer state") {
  TrainOptions opt;
  opt.use_momentum = false;
  opt.lr = 0.1f;
  const Graph g = build_training_graph(mlp_model(small_mlp(MlpConfig::Loss::cross_entropy)), opt);
  CHECK(count_role(g, Role::optimizer_state) == 0);
  int sgd = 0;
  for (const Node& n : g.nodes) {
    CHECK(n.op != OpKind::sgd_momentum);
    if (n.op == OpKind::sgd) {
      ++sgd;
      CHECK(n.attrs.lr == 0.1f);
    }
  }
  CHECK(sgd == 6);
}

TEST_CASE("inference graph is the forward only, pruned to the prediction") {
  const MlpConfig c = small_mlp(MlpConfig::Loss::mse);
  const Graph g = build_inference_graph(mlp_model(c));
  CHECK(g.nodes.size() == 3 * 2 + 2);  // 3 x (matmul + bias_add) + 2 relu
  CHECK(g.find_value("target") < 0);
  for (const Node& n : g.nodes) CHECK(op_is_differentiable(n.op));
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.values[static_cast<size_t>(g.outputs[0])].shape == Shape{8, 4});
  CHECK(g.values[static_cast<size_t>(g.outputs[0])].role == Role::output);
  CHECK(parameter_ids(g).size() == 6);
  // Runs on the interpreter.
  auto values = make_values(g, 3);
  interpret(g, values);
  for (float v : values[static_cast<size_t>(g.outputs[0])]) CHECK(std::isfinite(v));

  ChainConfig cc;
  cc.n = 10;
  CHECK(build_inference_graph(chain_model(testing::without_loss(cc))).nodes.size() == 10);
}

TEST_CASE("training graph refuses a model without loss or with an unused parameter") {
  const MlpConfig c = testing::without_loss(small_mlp(MlpConfig::Loss::mse));
  CHECK_THROWS_WITH_AS(build_training_graph(mlp_model(c)), doctest::Contains("no loss"), GraphError);
  auto unused = [](Builder& b) {
    ModelOutputs o;
    const Value x = b.input("x", Shape{3});
    b.parameter("orphan", Shape{3});
    o.prediction = scale(b, x, 2.0f);
    o.loss = mse_loss(b, o.prediction, b.input("target", Shape{3}));
    return o;
  };
  CHECK_THROWS_WITH_AS(build_training_graph(unused), doctest::Contains("'orphan' does not influence the loss"),
                       GraphError);
}

// Five steps on the interpreter: the loss goes down at every step.
void check_loss_decreases(const ModelFn& model, const TrainOptions& opt) {
  const Graph g = build_training_graph(model, opt);
  auto values = make_values(g, 11);
  const size_t loss = static_cast<size_t>(g.outputs[0]);
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    interpret(g, values);
    losses.push_back(values[loss][0]);
  }
  CAPTURE(fmt::format("{}", fmt::join(losses, ", ")));
  for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
}

TEST_CASE("loss decreases over 5 SGD steps on the interpreter") {
  TrainOptions momentum;
  momentum.lr = 0.05f;
  TrainOptions plain;
  plain.lr = 0.1f;
  plain.use_momentum = false;
  SUBCASE("mlp mse, momentum") { check_loss_decreases(mlp_model(small_mlp(MlpConfig::Loss::mse)), momentum); }
  SUBCASE("mlp cross_entropy, sgd") { check_loss_decreases(mlp_model(small_mlp(MlpConfig::Loss::cross_entropy)), plain); }
  SUBCASE("chain, sgd") {
    check_loss_decreases(chain_model(chain_config(30, 16)), plain);
  }
  SUBCASE("transformer_block, momentum") {
    check_loss_decreases(testing::transformer_model(testing::transformer_config(2, 4, 8, 2)), momentum);
  }
}

}  // namespace
}  // namespace tg
