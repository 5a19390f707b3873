// static == dynamic bitwise on the CPU backend: mlp and transformer_block,
// inference and training steps; every shape strategy at every shape.
#include "tests/static/vs_dynamic_test.h"

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
