// The GPT-2 model of graph/models.h: GPT-2 small has Hugging Face's parameter count with the
// tied head (the same structure: its fused qkv projection holds what q, k and v hold here),
// a bad configuration is refused by name, and a small one trains bit for bit alike in both
// executors on the CPU, in fp32 and bf16, with SGD and with AdamW.
#include "graph/errors.h"
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
