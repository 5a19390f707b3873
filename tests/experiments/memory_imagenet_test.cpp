// tg-memory's ImageNet networks on the CPU backend, at 32 x 32: ResNet-18's and ResNet-50's
// per-role formulas equal the planner's count.
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
