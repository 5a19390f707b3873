// The static executor on the CPU backend: bitwise equal to the interpreter for
// inference and training steps, with the arena poisoned first; memory plans of
// the real models within 10% of the lower bound.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/validate.h"
#include "graph/json_io.h"
#include "graph/float_formats.h"
#include "graph/training.h"
#include "kernels/interpreter.h"
#include "static/compiler.h"
#include "tests/common/models.h"
#include "tests/static/random_graph.h"
#include "tests/static/static_test_util.h"

namespace tg {
namespace {

using testing::bitwise_diff;
using testing::feeds_from;
using testing::mlp_model;
using testing::transformer_model;

MlpConfig small_mlp() { return testing::mlp_config(8, 24, 32, 4, 6); }
TransformerConfig small_transformer() { return testing::transformer_config(2, 8, 16, 2); }

// Inference: the prediction, poisoned arena, both plan modes.
void check_inference(const ModelFn& model, const char* what) {
  for (PlanMode mode : {PlanMode::naive, PlanMode::planned}) {
    CompileOptions opt;
    opt.training = false;
    opt.plan.mode = mode;
    opt.poison_arena = true;
    opt.seed = 11;
    CompiledPlan p = compile(model, opt);
    std::vector<std::vector<float>> want = make_values(*p.graph, 11);
    p.run(feeds_from(*p.graph, want));
    interpret(*p.graph, want);
    INFO(what, " inference, ", plan_mode_name(mode), ": ", p.memory().summary());
    CHECK(bitwise_diff(p.read(p.prediction), want[static_cast<size_t>(p.prediction)]) == "");
  }
}

// Training: 5 steps, the loss of each and every parameter and velocity after.
void check_training(const ModelFn& model, const char* what, bool momentum) {
  for (PlanMode mode : {PlanMode::naive, PlanMode::planned}) {
    CompileOptions opt;
    opt.plan.mode = mode;
    opt.poison_arena = true;
    opt.seed = 5;
    opt.train.use_momentum = momentum;
    CompiledPlan p = compile(model, opt);
    const Graph& g = *p.graph;
    std::vector<std::vector<float>> want = make_values(g, 5);
    const Feeds feeds = feeds_from(g, want);
    INFO(what, " training, ", plan_mode_name(mode), ", momentum ", momentum, ": ", p.memory().summary());
    REQUIRE(p.loss >= 0);
    for (int s = 0; s < 5; ++s) {
      const float loss = p.step(s == 0 ? feeds : Feeds{});
      interpret(g, want);
      CHECK(bitwise_diff({loss}, want[static_cast<size_t>(p.loss)]) == "");
    }
    int checked = 0;
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].role == Role::parameter || g.values[v].role == Role::optimizer_state) {
        INFO("value ", g.values[v].name);
        CHECK(bitwise_diff(p.read(static_cast<int>(v)), want[v]) == "");
        ++checked;
      }
    CHECK(checked >= 2);
  }
}

TEST_CASE("static on the CPU: fed labels a loss cannot use are an InputError naming the node") {
  MlpConfig c = small_mlp();
  c.loss = MlpConfig::Loss::cross_entropy;
  CompileOptions opt;
  opt.seed = 5;
  CompiledPlan p = compile(mlp_model(c), opt);
  const std::vector<std::vector<float>> values = make_values(*p.graph, 5);
  Feeds feeds = feeds_from(*p.graph, values);
  REQUIRE(feeds.count("labels") == 1);
  CHECK_NOTHROW(p.step(feeds));
  for (float bad : {-1.0f, 2.5f, 1e9f}) {
    CAPTURE(bad);
    feeds["labels"][1] = bad;
    const std::string want = fmt::format("': labels[1] is {}; cross_entropy needs", bad);
    CHECK_THROWS_WITH_AS(p.step(feeds), doctest::Contains(want.c_str()), InputError);
  }
}

TEST_CASE("static == interpreter bitwise: mlp inference and 5 training steps") {
  check_inference(mlp_model(small_mlp()), "mlp");
  check_training(mlp_model(small_mlp()), "mlp", true);
  check_training(mlp_model(small_mlp()), "mlp", false);
  MlpConfig ce = small_mlp();
  ce.loss = MlpConfig::Loss::cross_entropy;
  ce.in_place_relu = true;
  check_training(mlp_model(ce), "mlp cross_entropy in-place relu", true);
}

TEST_CASE("static == interpreter bitwise: transformer_block inference and 5 training steps") {
  check_inference(transformer_model(small_transformer()), "transformer");
  check_training(transformer_model(small_transformer()), "transformer", true);
}

TEST_CASE("static == interpreter bitwise: chain of 300 ops") {
  check_training(testing::chain_model(testing::chain_config(300, 64)), "chain", true);
}

TEST_CASE("planned arena <= 1.10x the lower bound: mlp and transformer_block, training and inference") {
  struct Case {
    const char* name;
    ModelFn fn;
  };
  const Case cases[] = {{"mlp(32, 256, 8)", mlp_model(MlpConfig{})},
                        {"transformer_block(8, 64, 128)", transformer_model(TransformerConfig{})}};
  for (const Case& c : cases)
    for (bool training : {false, true}) {
      Graph g = training ? build_training_graph(c.fn) : build_inference_graph(c.fn);
      const std::vector<int> order = g.topo_order();
      const MemoryPlan p = plan_memory(g, order);
      PlanOptions nopt;
      nopt.mode = PlanMode::naive;
      const MemoryPlan n = plan_memory(g, order, nopt);
      const std::string label = std::string(c.name) + (training ? " training: " : " inference: ");
      INFO(label, p.summary(), "; naive ", n.arena_bytes);
      CHECK(check_plan(g, order, p) == "");
      CHECK(p.arena_bytes >= p.lower_bound);
      CHECK(static_cast<double>(p.arena_bytes) <= 1.10 * static_cast<double>(p.lower_bound));
      CHECK(p.arena_bytes <= n.arena_bytes);
      MESSAGE(label, p.summary(), " (naive ", static_cast<double>(n.arena_bytes) / (1 << 20), " MiB)");
    }
}

TEST_CASE("static executor on random graphs: poisoned arena, results equal the interpreter") {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Graph g = testing::random_graph(seed, 10 + static_cast<int>(seed % 30));
    std::vector<std::vector<float>> want = make_values(g, seed);
    const Feeds feeds = feeds_from(g, want);
    interpret(g, want);
    for (PlanMode mode : {PlanMode::naive, PlanMode::planned}) {
      CompileOptions opt;
      opt.plan.mode = mode;
      opt.poison_arena = true;
      opt.seed = seed;
      CompiledPlan p = compile_graph(g, -1, opt);
      p.run(feeds);
      for (int o : g.outputs) {
        INFO("seed ", seed, " ", plan_mode_name(mode), " output ", g.values[static_cast<size_t>(o)].name);
        CHECK(bitwise_diff(p.read(o), want[static_cast<size_t>(o)]) == "");
      }
    }
  }
}

TEST_CASE("static executor on the CPU in bf16 and f16: random graphs and a mixed graph file equal the interpreter") {
  for (DType dt : {DType::BF16, DType::F16}) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      Graph g = testing::random_graph(seed, 10 + static_cast<int>(seed % 30));
      for (ValueInfo& v : g.values) v.dtype = dt;
      REQUIRE(validation_errors(g).empty());
      std::vector<std::vector<float>> want = make_values(g, seed);
      const Feeds feeds = feeds_from(g, want);  // unrounded: the executor and the interpreter round them
      interpret(g, want);
      CompileOptions opt;
      opt.poison_arena = true;
      opt.seed = seed;
      CompiledPlan p = compile_graph(g, -1, opt);
      Graph g32 = g;
      for (ValueInfo& v : g32.values) v.dtype = DType::F32;
      CHECK(p.memory().arena_bytes <= compile_graph(g32, -1, CompileOptions{}).memory().arena_bytes);
      p.run(feeds);
      for (int o : g.outputs) {
        INFO(dtype_name(dt), " seed ", seed, " output ", g.values[static_cast<size_t>(o)].name);
        const std::vector<float> got = p.read(o);
        CHECK(bitwise_diff(got, want[static_cast<size_t>(o)]) == "");
        for (float x : got) CHECK(x == round_to_dtype(x, dt));  // read back widened from the dtype
      }
    }
  }
  const Graph mixed = load_graph_file("tests/graphs/mixed_precision.json");
  std::vector<std::vector<float>> want = make_values(mixed, 5);
  const Feeds feeds = feeds_from(mixed, want);
  interpret(mixed, want);
  CompileOptions opt;
  opt.seed = 5;
  CompiledPlan p = compile_graph(mixed, -1, opt);
  p.run(feeds);
  const int out = mixed.outputs[0];
  CHECK(bitwise_diff(p.read(out), want[static_cast<size_t>(out)]) == "");
}

TEST_CASE("static executor: timings, schedule and clear errors") {
  CompileOptions opt;
  CompiledPlan p = compile(mlp_model(small_mlp()), opt);
  // A phase of a tiny model may take less than the clock resolves (a VM's clock
  // source can be coarse): each must be measured (>= 0), and the whole be > 0.
  CHECK(p.timings.record >= 0);
  CHECK(p.timings.autodiff >= 0);
  CHECK(p.timings.plan >= 0);
  CHECK(p.timings.total() > 0);
  CHECK(p.timings.total() >= p.timings.plan);
  CHECK(p.exec->schedule().size() <= p.graph->nodes.size());
  CHECK_FALSE(p.exec->uses_cuda_graph());
  CHECK_THROWS_WITH_AS(p.run({{"nope", {1.0f}}}), doctest::Contains("is not an input"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(p.run({{"x", {1.0f}}}), doctest::Contains("has 1 elements"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(p.read("nope"), doctest::Contains("no value named"), std::invalid_argument);
  CompileOptions inf;
  inf.training = false;
  CompiledPlan q = compile(mlp_model(small_mlp()), inf);
  CHECK_THROWS_AS(q.step(), std::logic_error);
  // Fast path: write straight into the input slot.
  const Graph& g = *q.graph;
  std::vector<std::vector<float>> want = make_values(g, 0);
  const int x = g.find_value("x");
  REQUIRE(x >= 0);
  std::copy(want[static_cast<size_t>(x)].begin(), want[static_cast<size_t>(x)].end(), q.exec->input_slot("x"));
  q.run();
  interpret(g, want);
  CHECK(bitwise_diff(q.read(q.prediction), want[static_cast<size_t>(q.prediction)]) == "");
}

TEST_CASE("parameter store: plans share parameters by name and reject a changed shape") {
  auto backend = std::shared_ptr<Backend>(make_cpu_backend());
  auto store = std::make_shared<ParameterStore>(backend, 3);
  CompileOptions opt;
  opt.backend = backend;
  opt.params = store;
  MlpConfig a = small_mlp();
  CompiledPlan p1 = compile(mlp_model(a), opt);
  const size_t n = store->size();
  a.batch = 5;
  CompiledPlan p2 = compile(mlp_model(a), opt);
  CHECK(store->size() == n);
  p1.step();
  // p2 sees p1's update: the same buffer.
  CHECK(bitwise_diff(p2.read("mlp.l0.w"), p1.read("mlp.l0.w")) == "");
  MlpConfig wider = small_mlp();
  wider.width = 40;
  CHECK_THROWS_AS(compile(mlp_model(wider), opt), GraphError);
}

}  // namespace
}  // namespace tg
