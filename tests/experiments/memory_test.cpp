// tg-memory on the CPU backend: the per-role bytes measured from real
// allocations (dynamic executor's per-role peaks, static executor's device
// buffers and arena) equal the closed formulas for a small MLP, transformer, ResNet and VGG;
// inference has no gradient, momentum or activation bytes; the agreement check
// passes at 4% and fails at 6%. Per precision (fp32, bf16, fp16), the bytes by role
// and dtype of the planner, the static executor's allocations and the dynamic
// executor's per-role peaks equal the autocast formulas.
#include <doctest/doctest.h>

#include <stdexcept>

#include "dynamic/trainer.h"
#include "graph/training.h"
#include "experiments/memory/agreement.h"
#include "experiments/memory/precision_roles.h"
#include "tests/experiments/memory_checks.h"

namespace tg {
using namespace tg::testing;

TEST_CASE("tg-memory: per-role measured bytes equal the formulas on the CPU backend (mlp, transformer, resnet, vgg, 3 modes)") {
  check_roles_on(-1);
}

TEST_CASE("eager builder role tracking: off by default, refused inside an iteration, labels as the static graph") {
  const MemCase k = small_mem_cases()[0];
  auto be = make_cpu_backend();
  const Feeds feeds = bench::model_feeds(k.train, 3, 5);
  DynamicTrainer t(k.train, *be, "caching");
  t.step(feeds);
  for (Role r : {Role::parameter, Role::activation, Role::temporary, Role::gradient})
    CHECK(t.builder().role_peak(r) == 0);  // never tracked
  t.builder().begin_iteration(feeds, true);
  CHECK_THROWS_AS(t.builder().set_role_tracking(true), std::logic_error);
  t.builder().abort_iteration();
  t.builder().set_role_tracking(true);
  t.step(feeds);
  // The eager roles put every forward tensor under activation; the static graph's
  // labels keep only what backward reads (the hidden ReLU outputs).
  CHECK(t.builder().role_peak(Role::activation) == k.mom.at(memory::MemRole::activations));
  CHECK(t.builder().role_peak(Role::optimizer_state) == k.mom.at(memory::MemRole::momentum));
  t.builder().reset_role_peaks();
  CHECK(t.builder().role_peak(Role::parameter) == 0);
}

TEST_CASE("tg-memory: AdamW's optimizer state is two moments per parameter element and a step count per tensor") {
  for (const MemCase& k : small_mem_cases()) {
    INFO(k.name);
    TrainOptions adamw;
    adamw.adamw = true;
    const Graph g = build_training_graph(k.train, adamw);
    int64_t tensors = 0;  // the trained ones: one adamw update each
    for (const Node& n : g.nodes) tensors += n.op == OpKind::adamw;
    const int64_t want = memory::with_adamw_state(k.mom, tensors).at(memory::MemRole::momentum);
    int64_t in_graph = 0;
    for (int v : g.values_with_role(Role::optimizer_state)) in_graph += g.values[static_cast<size_t>(v)].bytes();
    CHECK(in_graph == want);
    CHECK(want > 2 * k.mom.at(memory::MemRole::momentum));
    auto be = make_cpu_backend();
    DynamicOptions o;
    o.adamw = true;
    DynamicTrainer t(k.train, *be, "caching", o);
    t.builder().set_role_tracking(true);
    t.step(bench::model_feeds(k.train, 3, 5));
    CHECK(t.builder().role_peak(Role::optimizer_state) == want);
  }
}

TEST_CASE("tg-memory agreement: within 5% passes, beyond fails, a role measured but not predicted fails") {
  auto verdict = [](harness::Report& r, const char* source) {
    for (const auto& m : r.measurements)
      if (m.name == "role_agreement_worst_pct" && m.params.at("source").str() == source)
        return m.params.at("verdict").str();
    return std::string("missing");
  };
  {
    harness::Report r;
    memory::Agreement a;
    a.role(r, "mlp", 8, "train_momentum", "static", memory::MemRole::activations, 1000, 1040, true);
    a.role(r, "mlp", 8, "train_momentum", "dynamic", memory::MemRole::workspace, 1000, 100, false);  // not checked
    CHECK(a.finish(r));
    CHECK(verdict(r, "static") == "pass");
    CHECK(verdict(r, "dynamic") == "missing");  // nothing checked from it
    CHECK(verdict(r, "all") == "pass");
    const auto* m = r.find("role_agreement_worst_pct", {{"source", "static"}, {"verdict", "pass"},
                                                         {"target_pct", memory::kTargetPct}, {"roles_checked", 1}});
    REQUIRE(m != nullptr);
    CHECK(m->stats.median == doctest::Approx(4.0));
  }
  {
    harness::Report r;
    memory::Agreement a;
    a.role(r, "mlp", 8, "train_momentum", "static", memory::MemRole::activations, 1000, 1060, true);
    a.role(r, "mlp", 8, "inference", "dynamic_keep_all", memory::MemRole::gradients, 0, 0, true);
    CHECK_FALSE(a.finish(r));
    CHECK(verdict(r, "static") == "fail");
    CHECK(verdict(r, "dynamic_keep_all") == "pass");
    CHECK(verdict(r, "all") == "fail");
  }
  {
    harness::Report r;
    memory::Agreement a;
    a.role(r, "mlp", 8, "inference", "static", memory::MemRole::gradients, 0, 64, true);
    CHECK_FALSE(a.finish(r));
    CHECK(verdict(r, "static") == "fail");
  }
}

}  // namespace tg

namespace tg {
using namespace tg::testing;

TEST_CASE("tg-memory per precision: bytes by role and dtype equal the autocast formulas on the CPU backend") {
  check_precision_roles_on(-1, {Precision::fp32, Precision::bf16, Precision::fp16});
}

TEST_CASE("tg-memory per precision: tf32 records the f32 graph, so its formula is fp32's") {
  const MlpConfig m = mlp_config(6, 12, 20, 3, 5);
  const TransformerConfig t = transformer_config(2, 8, 16, 2);
  for (bool training : {true, false}) {
    CHECK(memory::predict_mlp_precision(m, Precision::tf32, training, true).bytes.bytes ==
          memory::predict_mlp_precision(m, Precision::fp32, training, true).bytes.bytes);
    CHECK(memory::predict_transformer_precision(t, Precision::tf32, training, true).bytes.total() ==
          memory::predict_transformer(t, training, true).total());
  }
  // bf16 and fp16 are both 2 bytes: the same bytes, in another dtype.
  const auto b = memory::predict_transformer_precision(t, Precision::bf16, true, true).bytes;
  const auto h = memory::predict_transformer_precision(t, Precision::fp16, true, true).bytes;
  CHECK(b.total() == h.total());
  CHECK(b.at(memory::PrecRole::activations, DType::BF16) == h.at(memory::PrecRole::activations, DType::F16));
}

}  // namespace tg
