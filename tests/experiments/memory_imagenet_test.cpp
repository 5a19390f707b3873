// tg-memory's ImageNet networks on the CPU backend, at 32 x 32: the VGG-16 table layer by layer
// (vgg_layers.h) equals the planner's storage in training and inference, in-place ReLU off and
// on; the dynamic executor's allocations with nothing freed early equal the formula, per role
// and in total; ResNet-18's and ResNet-50's per-role formulas equal the planner's count.
#include <doctest/doctest.h>

#include <numeric>

#include "graph/training.h"
#include "tests/experiments/memory_checks.h"

namespace tg {
using namespace tg::testing;

namespace {

Graph graph_for(const ModelFn& fn, const MemMode& m) {
  if (!m.training) return build_inference_graph(fn);
  TrainOptions t;
  t.use_momentum = m.momentum;
  return build_training_graph(fn, t);
}

MemoryPlan plan_of(const Graph& g, PlanMode mode, InPlacePolicy ip) {
  std::vector<int> order(g.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  PlanOptions o;
  o.mode = mode;
  o.in_place = ip;
  return plan_memory(g, order, o);
}

}  // namespace

TEST_CASE("tg-memory: the VGG-16 table layer by layer equals the planner at 32 x 32, in-place ReLU off and on") {
  for (const MemMode& m : kMemModes)
    for (bool ip : {false, true}) {
      const VggConfig v = vgg16_at(2, 32, m.training, ip);
      const Graph g = graph_for(vgg_model(v), m);
      const std::vector<memory::LayerBytes> want = memory::predict_vgg_layers(v, m.training, m.momentum);
      const std::vector<memory::LayerBytes> got =
          memory::measure_vgg_layers(g, plan_of(g, PlanMode::planned, InPlacePolicy::flagged));
      REQUIRE(got.size() == 22);  // the input, 13 convs, 5 pools, 3 Linear layers
      REQUIRE(want.size() == got.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(m.name);
        CAPTURE(ip);
        CAPTURE(got[i].layer);
        CHECK(got[i].layer == want[i].layer);
        CHECK(got[i].kind == want[i].kind);
        for (const char* q : memory::kLayerQuantities) {
          CAPTURE(q);
          CHECK(memory::layer_quantity(got[i], q) == memory::layer_quantity(want[i], q));
        }
      }
      // The table accounts for every parameter, gradient and velocity of the graph.
      int64_t params = 0, grads = 0, velocities = 0;
      for (const ValueInfo& vi : g.values) {
        params += vi.role == Role::parameter ? vi.bytes() : 0;
        grads += vi.role == Role::gradient ? vi.bytes() : 0;
        velocities += vi.role == Role::optimizer_state ? vi.bytes() : 0;
      }
      CHECK(layers_sum(got, "parameters") == params);
      CHECK(layers_sum(got, "gradients") == grads);
      CHECK(layers_sum(got, "momentum") == velocities);
      if (!m.training) CHECK(layers_sum(got, "saved") == 0);
    }
}

TEST_CASE("tg-memory: an in-place ReLU saves its layer one buffer, the size of its output, and backward keeps as "
          "much") {
  for (const MemMode& m : kMemModes) {
    CAPTURE(m.name);
    const auto off = memory::predict_vgg_layers(vgg16_at(2, 32, m.training, false), m.training, m.momentum);
    const auto on = memory::predict_vgg_layers(vgg16_at(2, 32, m.training, true), m.training, m.momentum);
    for (size_t i = 0; i < off.size(); ++i) {
      CAPTURE(off[i].layer);
      const bool relu = off[i].kind == "conv" || (off[i].kind == "fc" && off[i].layer != "head");
      CHECK(off[i].forward - on[i].forward == (relu ? off[i].output : 0));
      CHECK(off[i].saved == on[i].saved);
    }
  }
}

TEST_CASE("tg-memory: VGG-16 at 32 x 32, the dynamic executor with nothing freed early: per role and in total as "
          "predicted") {
  check_vgg16_dynamic_on(-1);
}

TEST_CASE("tg-memory: ResNet-18's and ResNet-50's per-role formulas equal the planner's count at 32 x 32") {
  for (ImageNetResNetConfig r : {resnet18_config(), resnet50_config()})
    for (const MemMode& m : kMemModes) {
      CAPTURE(r.bottleneck);
      CAPTURE(m.name);
      r = at_size(r, 2, 32);
      r.with_loss = m.training;
      const Graph g = graph_for(resnet_imagenet_model(r), m);
      check_role_bytes(memory::plan_role_bytes(plan_of(g, PlanMode::naive, InPlacePolicy::none)),
                       memory::predict_resnet_imagenet(r, m.training, m.momentum));
    }
}

}  // namespace tg
