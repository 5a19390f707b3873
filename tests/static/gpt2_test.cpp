// The GPT-2 model of graph/models.h: GPT-2 small has Hugging Face's parameter count with the
// tied head (the same structure: its fused qkv projection holds what q, k and v hold here),
// a bad configuration is refused by name, and a small one trains bit for bit alike in both
// executors on the CPU, in fp32 and bf16, with SGD and with AdamW, with dropout too (fresh
// masks each step, the same ones from the same seed, none in inference).
#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/validate.h"
#include "tests/static/passes_test_util.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

using testing::gpt2_model;

Gpt2Config tiny() { return testing::tiny_gpt2_config(); }

TEST_CASE("gpt2: GPT-2 small has 124,439,808 parameters, a logit row per token over the vocabulary") {
  Graph g;
  RecordingBuilder b(g);
  Gpt2Config c = gpt2_small_config();
  c.batch = 1;
  c.seq = 16;
  const ModelOutputs out = gpt2(b, c);
  int64_t params = 0;
  for (const ValueInfo& v : g.values)
    if (v.role == Role::parameter) params += v.shape.numel();
  CHECK(params == 124439808);
  CHECK(out.prediction.shape == Shape{16, 50257});
  CHECK(out.loss.shape == Shape{1});
  CHECK(g.values[static_cast<size_t>(g.find_value("ids"))].dtype == DType::I64);
}

TEST_CASE("gpt2: a configuration that cannot be built is refused with the field named") {
  auto refused = [](Gpt2Config c, const char* why) {
    Graph g;
    RecordingBuilder b(g);
    CHECK_THROWS_WITH_AS(gpt2(b, c), doctest::Contains(why), GraphError);
  };
  Gpt2Config c = tiny();
  c.seq = 13;
  refused(c, "seq = 13 is longer than the context = 12");
  c = tiny();
  c.heads = 3;
  refused(c, "d_model = 16 is not a multiple of heads = 3");
  c = tiny();
  c.ids_dtype = DType::F32;
  refused(c, "ids_dtype f32 is not an integer type");
  c = tiny();
  c.layers = 0;
  refused(c, "layers = 0 must be >= 1");
}

TEST_CASE("gpt2: static == dynamic bitwise on the CPU, fp32 and bf16, SGD and AdamW") {
  const Gpt2Config c = tiny();
  testing::check_static_vs_dynamic(cpu, gpt2_model(c), "gpt2", false, c.vocab);
  testing::check_static_vs_dynamic(cpu, gpt2_model(c), "gpt2 bf16", false, c.vocab, Precision::bf16);
  TrainOptions adamw;
  adamw.adamw = true;
  adamw.clip_grad_norm = 1.0f;
  Gpt2Config i32 = c;
  i32.ids_dtype = DType::I32;
  testing::check_static_vs_dynamic(cpu, gpt2_model(i32), "gpt2 i32 adamw clipped", false, c.vocab, Precision::fp32,
                                   adamw);
}

TEST_CASE("gpt2 with dropout: static == dynamic bitwise on the CPU, fp32 and bf16, and none in inference") {
  Gpt2Config c = tiny();
  c.dropout = 0.1f;
  testing::check_static_vs_dynamic(cpu, gpt2_model(c), "gpt2 dropout", false, c.vocab);
  testing::check_static_vs_dynamic(cpu, gpt2_model(c), "gpt2 dropout bf16", false, c.vocab, Precision::bf16);
  const Graph train = build_training_graph(gpt2_model(c));
  int dropouts = 0, advances = 0;
  for (const Node& n : train.nodes) {
    dropouts += n.op == OpKind::dropout;
    advances += n.op == OpKind::rng_advance;
  }
  // The embeddings, then attention and MLP in each block; each once forward, once backward.
  CHECK(dropouts == 2 * (1 + 2 * c.layers));
  CHECK(advances == 1);
  CHECK(train.nodes.back().op == OpKind::rng_advance);
  const Graph infer = build_inference_graph(gpt2_model(c));
  for (const Node& n : infer.nodes) CHECK(n.op != OpKind::dropout);
  CHECK(infer.find_value(kRngStateName) < 0);
}

TEST_CASE("gpt2 with dropout: each step draws fresh masks, and the same seed the same ones in both executors") {
  Gpt2Config c = tiny();
  c.dropout = 0.3f;
  // lr 1e-30 (0 is refused): the updates move a parameter by ~1e-33, so a loss that moves by
  // more than 1e-4 from one step to the next moved because the masks did.
  TrainOptions frozen;
  frozen.lr = 1e-30f;
  frozen.use_momentum = false;
  auto run_static = [&](uint64_t seed, int steps, const Feeds& f) {
    CompileOptions co;
    co.seed = seed;
    co.train = frozen;
    CompiledPlan plan = compile(gpt2_model(c), co);
    CHECK(plan.read(kRngStateName) == std::vector<float>{static_cast<float>(seed), 0.0f});
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) losses.push_back(plan.step(f));
    CHECK(plan.read(kRngStateName) == std::vector<float>{static_cast<float>(seed), static_cast<float>(steps)});
    return losses;
  };
  const Shape tokens{c.batch, c.seq};
  const Feeds f = testing::random_feeds({{"ids", tokens}, {"labels", tokens}}, 5, c.vocab);
  const std::vector<float> a = run_static(7, 3, f);
  CHECK(std::fabs(a[0] - a[1]) > 1e-4f);
  CHECK(std::fabs(a[1] - a[2]) > 1e-4f);
  CHECK(testing::bitwise_diff(run_static(7, 3, f), a) == "");
  CHECK(run_static(8, 1, f)[0] != a[0]);  // another seed: other masks (and other weights)

  DynamicOptions d = dynamic_options_like(frozen);
  d.seed = 7;
  auto be = cpu();
  DynamicTrainer dyn(gpt2_model(c), *be, "caching", d);
  std::vector<float> b;
  for (int i = 0; i < 3; ++i) b.push_back(dyn.step(f));
  CHECK(testing::bitwise_diff(b, a) == "");
  CHECK(dyn.parameter(kRngStateName) == std::vector<float>{7.0f, 3.0f});
}

TEST_CASE("gpt2: the rows pass adds each layernorm's input gradient into the residual stream's, casts on store, "
          "reads 16-bit gradients, same bits") {
  const Gpt2Config c = tiny();
  const Graph train = build_training_graph(gpt2_model(c));
  const Graph f = pass_rows(train);
  validate(f);
  // ln1 and ln2 of every block add theirs into the sum that ln_f's gradient starts.
  CHECK(testing::count(f, OpKind::layernorm_grad_x_acc) == 2 * c.layers);
  CHECK(testing::count(f, OpKind::layernorm_grad_x) == 1);
  CHECK(testing::count(train, OpKind::add) - testing::count(f, OpKind::add) == 2 * c.layers);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    CompileOptions base;
    base.precision = p;
    CompileOptions rows = base;
    rows.passes = PassSet::only(PassId::rows);
    CompiledPlan a = compile(gpt2_model(c), base);
    CompiledPlan b = compile(gpt2_model(c), rows);
    CHECK(testing::count(*b.graph, OpKind::layernorm_grad_x_acc) == 2 * c.layers);
    // Under autocast ln1 and ln2 write bf16 for their GEMMs (ln_f's output is reshaped first).
    CHECK(testing::count(*b.graph, OpKind::layernorm_cast) == (p == Precision::bf16 ? 2 * c.layers : 0));
    // Under autocast every layernorm gradient reads its dy in bf16, ln_f's through the reshape
    // to the head's rows moved before the cast that widened it.
    int lowgrad = 0, low_dy = 0;
    for (const Node& n : b.graph->nodes)
      if (op_traits(n.op).dtype_rule == op_table::kTypeLowGrad) {
        ++lowgrad;
        low_dy += b.graph->values[static_cast<size_t>(n.inputs[0])].dtype == DType::BF16;
      }
    CHECK(lowgrad == 2 * (2 * c.layers + 1));  // each layernorm's input and parameter gradients
    CHECK(low_dy == (p == Precision::bf16 ? lowgrad : 0));
    testing::check_same_steps(a, b, 3, testing::random_feeds(testing::input_shapes_of(*a.graph), 4, c.vocab));
  }
}

TEST_CASE("gpt2: the loss falls over a few steps on fixed tokens") {
  CompileOptions co;
  co.passes = PassSet::all();
  co.train.lr = 0.05f;
  CompiledPlan plan = compile(gpt2_model(tiny()), co);
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*plan.graph), 11, tiny().vocab);
  const float first = plan.step(f);
  float last = first;
  for (int i = 0; i < 7; ++i) last = plan.step(f);
  CHECK(std::isfinite(last));
  CHECK(last < first);
}

}  // namespace
}  // namespace tg
