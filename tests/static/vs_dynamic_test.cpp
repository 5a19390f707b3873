// static == dynamic bitwise on the CPU backend: mlp and transformer_block,
// inference and training steps; every shape strategy at every shape.
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

TEST_CASE("static == dynamic bitwise on the CPU: mlp (mse and cross_entropy) and transformer_block") {
  MlpConfig m;
  m.batch = 8;
  m.in = 24;
  m.width = 32;
  m.depth = 4;
  m.out = 6;
  testing::check_static_vs_dynamic(cpu, [m](Builder& b) { return mlp(b, m); }, "mlp", false);
  MlpConfig ce = m;
  ce.loss = MlpConfig::Loss::cross_entropy;
  testing::check_static_vs_dynamic(cpu, [ce](Builder& b) { return mlp(b, ce); }, "mlp ce", false, ce.out);
  TransformerConfig t;
  t.batch = 2;
  t.seq = 8;
  t.d_model = 16;
  t.heads = 2;
  testing::check_static_vs_dynamic(cpu, [t](Builder& b) { return transformer_block(b, t); }, "transformer", false);
}

TEST_CASE("shape strategies == dynamic bitwise at every shape on the CPU: mlp, transformer_block (variable batch)") {
  testing::check_strategies_vs_dynamic(cpu, testing::small_mlp_at(), "mlp", {5, 8, 3, 8, 5, 7}, {4, 8}, false);
  testing::check_strategies_vs_dynamic(cpu, testing::small_transformer_at(), "transformer", {3, 1, 4, 2, 3}, {2, 4},
                                       false);
}

}  // namespace
}  // namespace tg
