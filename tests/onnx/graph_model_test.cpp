// Graph files as model functions (graph/graph_model.h): replayed, a file is the same
// graph; both executors run it (CPU) with the same bits, training included; rebatch
// keeps the model and refuses shapes that do not follow the batch.
#include <doctest/doctest.h>

#include <cstring>

#include "dynamic/trainer.h"
#include "graph/errors.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/models.h"
#include "graph/training.h"
#include "kernels/backend.h"
#include "static/compiler.h"
#include "tests/graph/graph_equal.h"

namespace tg::testing {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_CASE("graph_model: the prediction, the loss and the other outputs of a file") {
  const GraphModel m = graph_model(load_graph_file("tests/graphs/classifier.json"));
  CHECK(m.loss == "loss");
  CHECK(m.prediction == "logits");
  CHECK(m.classes == 5);
  CHECK(m.other_outputs.empty());
  const GraphModel mlp = graph_model(load_graph_file("tests/graphs/mlp.json"));
  CHECK(mlp.loss.empty());
  CHECK(mlp.prediction == "logits");
  // The inference function runs what the prediction needs and nothing else.
  Graph g;
  RecordingBuilder b(g);
  graph_model(load_graph_file("tests/graphs/classifier.json")).infer_fn(b);
  CHECK(g.find_value("loss") < 0);
  CHECK(g.find_value("labels") < 0);
}

TEST_CASE("graph_model: a training step written out by hand and a graph without outputs are refused") {
  CHECK_THROWS_WITH_AS(graph_model(load_graph_file("tests/graphs/train_step.json")),
                       doctest::Contains("training step written out by hand"), GraphError);
  Graph none = load_graph_file("tests/graphs/mlp.json");
  none.outputs.clear();
  CHECK_THROWS_WITH_AS(graph_model(none), doctest::Contains("has no outputs"), GraphError);
}

TEST_CASE("graph_model: static and dynamic train a graph file with the same losses, bit for bit (CPU)") {
  auto be = std::shared_ptr<Backend>(make_cpu_backend());
  for (const char* file : {"tests/onnx/bench/transformer_d128_h4.json", "tests/graphs/classifier.json"}) {
    CAPTURE(file);
    Graph g = load_graph_file(file);
    if (graph_batch(g) > 2 && std::string(file).find("bench") != std::string::npos) g = rebatch(g, 1);
    const GraphModel m = graph_model(g);
    REQUIRE(!m.loss.empty());
    CompileOptions co;
    co.backend = be;
    CompiledPlan p = compile(m.fn, co);
    DynamicTrainer dyn(m.fn, *be, "caching", DynamicOptions{});
    Feeds f;
    for (int id : m.graph->values_with_role(Role::input)) {
      const ValueInfo& v = m.graph->values[static_cast<size_t>(id)];
      std::vector<float> data(static_cast<size_t>(v.shape.numel()));
      for (size_t i = 0; i < data.size(); ++i)
        data[i] = v.name == "labels" ? static_cast<float>(i % 5) : static_cast<float>((i * 13) % 7) * 0.1f - 0.3f;
      f[v.name] = data;
    }
    for (int step = 0; step < 3; ++step) CHECK(same_bits(p.step(f), dyn.step(f)));
  }
}

int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

// What `tg-graph model resnet20 -o FILE` writes: the training form, batch norms with their
// running-statistics updates.
Graph small_resnet_file() {
  ResNetConfig r;
  r.batch = 2;
  r.image = 8;
  r.width = 4;
  r.blocks = 1;
  r.classes = 3;
  Graph g;
  RecordingBuilder b(g);
  const ModelOutputs out = resnet_cifar(b, r);
  b.mark_output(out.prediction);
  b.mark_output(out.loss);
  return g;
}

TEST_CASE("graph_model: a CNN file keeps its batch norms' statistics updates, eval mode normalizes with them") {
  const Graph file = small_resnet_file();
  const int updates = count_op(file, OpKind::batch_norm_stats_update);
  REQUIRE(updates > 0);
  const GraphModel m = graph_model(file);
  Graph train;
  RecordingBuilder tb(train);
  m.fn(tb);
  CHECK(count_op(train, OpKind::batch_norm_stats_update) == updates);
  CHECK(count_op(train, OpKind::batch_norm) == updates);
  Graph infer;
  RecordingBuilder ib(infer);
  ib.set_eval(true);
  m.infer_fn(ib);
  CHECK(count_op(infer, OpKind::batch_norm_stats_update) == 0);
  CHECK(count_op(infer, OpKind::batch_norm) == 0);
  CHECK(count_op(infer, OpKind::batch_norm_inference) == updates);
  // Rebatched (tg-graph bench --batch), the updates stay.
  CHECK(count_op(rebatch(file, 3), OpKind::batch_norm_stats_update) == updates);

  auto be = std::shared_ptr<Backend>(make_cpu_backend());
  CompileOptions co;
  co.backend = be;
  CompiledPlan p = compile(m.fn, co);
  DynamicTrainer dyn(m.fn, *be, "caching", DynamicOptions{});
  Feeds f;
  std::vector<float> x(2 * 3 * 8 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 13) % 7) * 0.1f - 0.3f;
  f["x"] = x;
  f["labels"] = {0.0f, 2.0f};
  for (int step = 0; step < 3; ++step) CHECK(same_bits(p.step(f), dyn.step(f)));
}

TEST_CASE("rebatch: inputs' dim 0 and every reshape follow, the same file at its own batch is unchanged") {
  const Graph g = load_graph_file("tests/onnx/transformer.json");
  const Graph r = rebatch(g, 5);
  CHECK(r.values[static_cast<size_t>(r.find_value("x"))].shape == Shape{5, 8, 32});
  CHECK(r.values[static_cast<size_t>(r.find_value("y"))].shape == Shape{5, 8, 32});
  CHECK(r.values[static_cast<size_t>(r.find_value("matmul.bmm"))].shape == Shape{20, 8, 8});
  const Graph same = rebatch(g, graph_batch(g));
  for (size_t i = 0; i < g.values.size(); ++i) CHECK(same.values[i].shape == g.values[i].shape);
  CHECK_THROWS_WITH_AS(rebatch(load_graph_file("tests/graphs/classifier.json"), 8), doctest::Contains("sub"),
                       GraphError);
  CHECK_THROWS_AS(rebatch(g, 0), GraphError);
}

TEST_CASE("prune_to_outputs: a replayed graph file is the same graph") {
  const Graph g = load_graph_file("tests/onnx/transformer_ts14.json");
  CHECK(graph_difference(prune_to_outputs(g), g) == "");
}

}  // namespace
}  // namespace tg::testing
