// static == dynamic bitwise on the CPU backend: mlp and transformer_block,
// inference and training steps; every shape strategy at every shape.
#include "tests/static/vs_dynamic_test.h"

#include "graph/errors.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

TEST_CASE("static == dynamic bitwise on the CPU: mlp (mse and cross_entropy) and transformer_block") {
  const MlpConfig m = testing::mlp_config(8, 24, 32, 4, 6);
  testing::check_static_vs_dynamic(cpu, testing::mlp_model(m), "mlp", false);
  MlpConfig ce = m;
  ce.loss = MlpConfig::Loss::cross_entropy;
  testing::check_static_vs_dynamic(cpu, testing::mlp_model(ce), "mlp ce", false, ce.out);
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(testing::transformer_config(2, 8, 16, 2)),
                                   "transformer", false);
}

// transformer_block with the fused attention op, causal or not.
TransformerConfig fused_transformer(bool causal) {
  TransformerConfig c = testing::transformer_config(2, 8, 16, 2);
  c.fused_attention = true;
  c.causal = causal;
  return c;
}

TEST_CASE("static == dynamic bitwise on the CPU: transformer_block with fused attention, causal and not, fp32 and bf16") {
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(fused_transformer(false)), "fused attention",
                                   false);
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(fused_transformer(true)), "fused causal", false);
  // Autocast stores q, k, v and the output in bf16; the statistic goes as its pair.
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(fused_transformer(true)), "fused causal bf16", false,
                                   0, Precision::bf16);
}

TEST_CASE("transformer_block trains alike with fused and unfused attention, with and without the passes") {
  const std::vector<float> unfused = testing::train_losses(
      testing::transformer_model(testing::transformer_config(2, 8, 16, 2)), Precision::fp32, PassSet::none(), 4);
  for (const PassSet passes : {PassSet::none(), PassSet::all()}) {
    const std::vector<float> fused =
        testing::train_losses(testing::transformer_model(fused_transformer(false)), Precision::fp32, passes, 4);
    REQUIRE(fused.size() == unfused.size());
    for (size_t i = 0; i < fused.size(); ++i) CHECK(fused[i] == doctest::Approx(unfused[i]).epsilon(1e-4));
    CHECK(fused.back() < fused.front());  // it learns
  }
  // The causal block is another model: its losses differ.
  const std::vector<float> causal =
      testing::train_losses(testing::transformer_model(fused_transformer(true)), Precision::fp32, PassSet::none(), 1);
  CHECK(causal[0] != unfused[0]);
}

TEST_CASE("fused attention's training graph holds no S x S value, and its arena grows linearly in the sequence") {
  auto plan_at = [](int64_t seq, bool fused) {
    TransformerConfig c = testing::transformer_config(1, seq, 16, 2, 1);
    c.fused_attention = fused;
    return compile(testing::transformer_model(c));
  };
  auto largest = [](const CompiledPlan& p) {
    int64_t n = 0;
    for (const ValueInfo& v : p.graph->values) n = std::max(n, v.shape.numel());
    return n;
  };
  const int64_t S = 64;
  const CompiledPlan fused = plan_at(S, true), fused4 = plan_at(4 * S, true);
  const CompiledPlan unfused = plan_at(S, false), unfused4 = plan_at(4 * S, false);
  CHECK(largest(unfused) >= 2 * S * S);  // the scores of both heads: what the test would catch
  CHECK(largest(fused) < S * S);
  const double fused_growth = static_cast<double>(fused4.memory().arena_bytes) / fused.memory().arena_bytes;
  const double unfused_growth = static_cast<double>(unfused4.memory().arena_bytes) / unfused.memory().arena_bytes;
  MESSAGE("arena growth from seq ", S, " to ", 4 * S, ": fused ", fused_growth, "x, unfused ", unfused_growth, "x");
  CHECK(fused_growth <= 4.2);
  CHECK(unfused_growth > fused_growth + 1.0);
}

TEST_CASE("transformer_block refuses causal without fused attention") {
  TransformerConfig c = testing::transformer_config(2, 8, 16, 2);
  c.causal = true;
  Graph g;
  RecordingBuilder b(g);
  CHECK_THROWS_WITH_AS(transformer_block(b, c), doctest::Contains("causal needs fused_attention"), GraphError);
}

TEST_CASE("random_labels refuses a class count below 1 instead of dividing by zero") {
  std::vector<float> labels(4);
  CHECK_THROWS_WITH_AS(random_labels(labels, 1, 0), doctest::Contains("class count >= 1"), std::invalid_argument);
  std::vector<float> none;
  random_labels(none, 1, 0);  // nothing to fill: nothing to divide
  random_labels(labels, 1, 3);
  for (float l : labels) CHECK((l >= 0.0f && l < 3.0f && l == static_cast<float>(static_cast<int>(l))));
}

TEST_CASE("static == dynamic bitwise on the CPU: a token model with i64 ids and labels, embedding, ignore_index") {
  // Labels of class 3 are ignored; the ids repeat (24 of 11), so embedding_grad sums rows.
  testing::check_static_vs_dynamic(cpu, testing::token_model(11, 3), "tokens", false, 11);
  TrainOptions adamw;
  adamw.adamw = true;
  testing::check_static_vs_dynamic(cpu, testing::token_model(11, -100), "tokens adamw", false, 11, Precision::fp32,
                                   adamw);
  testing::check_static_vs_dynamic(cpu, testing::token_model(11, 3), "tokens bf16", false, 11, Precision::bf16);
}

TEST_CASE("static == dynamic bitwise on the CPU with AdamW, with and without gradient clipping") {
  const MlpConfig m = testing::mlp_config(8, 24, 32, 4, 6);
  TrainOptions adamw;
  adamw.adamw = true;
  adamw.adam.weight_decay = 0.1f;
  testing::check_static_vs_dynamic(cpu, testing::mlp_model(m), "mlp adamw", false, 0, Precision::fp32, adamw);
  TrainOptions clipped = adamw;
  clipped.clip_grad_norm = 0.05f;  // below the gradients' norm: every step clips
  testing::check_static_vs_dynamic(cpu, testing::mlp_model(m), "mlp adamw clipped", false, 0, Precision::fp32, clipped);
  // 16 parameters: the norm's tree has two levels (graph/optimizers.h).
  testing::check_static_vs_dynamic(cpu, testing::transformer_model(testing::transformer_config(2, 8, 16, 2)),
                                   "transformer adamw clipped", false, 0, Precision::fp32, clipped);
  TrainOptions sgd_clipped;
  sgd_clipped.clip_grad_norm = 0.05f;
  testing::check_static_vs_dynamic(cpu, testing::mlp_model(m), "mlp momentum clipped", false, 0, Precision::fp32,
                                   sgd_clipped);
}

TEST_CASE("shape strategies == dynamic bitwise at every shape on the CPU: mlp, transformer_block (variable batch)") {
  testing::check_strategies_vs_dynamic(cpu, testing::small_mlp_at(), "mlp", {5, 8, 3, 8, 5, 7}, {4, 8}, false);
  testing::check_strategies_vs_dynamic(cpu, testing::small_transformer_at(), "transformer", {3, 1, 4, 2, 3}, {2, 4},
                                       false);
}

}  // namespace
}  // namespace tg
