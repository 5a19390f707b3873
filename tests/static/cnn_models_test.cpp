// The convolutional models of graph/models.h on the CPU: static == dynamic bitwise in
// training and in inference (running statistics), and a few training steps on one
// batch lower the loss.
#include "graph/errors.h"
#include "tests/common/models.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

using testing::resnet_model;
using testing::vgg_model;

ResNetConfig small_resnet() { return testing::resnet_config(2, 8, 4, 1, 5); }
VggConfig small_vgg() { return testing::vgg_config(2, 8, 4, {1, 2}, 8, 5); }

// The inference model (running statistics, no loss) on both executors, bit for bit.
void check_inference(const ModelFn& model, const std::string& what) {
  auto be = cpu();
  CompileOptions co;
  co.backend = be;
  co.training = false;
  CompiledPlan p = compile(model, co);
  DynamicOptions o;
  o.inference = true;
  DynamicTrainer dyn(model, *be, "caching", o);
  for (uint64_t i = 0; i < 2; ++i) {
    const Feeds f = testing::random_feeds(testing::input_shapes_of(*p.graph), 40 + i);
    INFO(what, " inference ", i);
    p.run(f);
    CHECK(testing::bitwise_diff(p.read(p.prediction), dyn.run_inference(f)) == "");
  }
}

TEST_CASE("static == dynamic bitwise on the CPU: the CIFAR ResNet and the VGG network, training and inference") {
  ResNetConfig r = small_resnet();
  testing::check_static_vs_dynamic(cpu, resnet_model(r), "resnet", false, r.classes);
  r.in_place_relu = true;
  testing::check_static_vs_dynamic(cpu, resnet_model(r), "resnet in-place relu", false, r.classes);
  check_inference(resnet_model(testing::without_loss(r)), "resnet");
  const VggConfig v = small_vgg();
  testing::check_static_vs_dynamic(cpu, vgg_model(v), "vgg", false, v.classes);
  check_inference(vgg_model(testing::without_loss(v)), "vgg");
}

TEST_CASE("the CNNs learn: training steps on one batch lower the cross-entropy loss") {
  for (const auto& [what, model, classes] :
       {std::tuple<std::string, ModelFn, int64_t>{"resnet", resnet_model(small_resnet()), small_resnet().classes},
        {"vgg", vgg_model(small_vgg()), small_vgg().classes}}) {
    CAPTURE(what);
    CompileOptions co;
    co.backend = cpu();
    co.training = true;
    CompiledPlan p = compile(model, co);
    const Feeds f = testing::random_feeds(testing::input_shapes_of(*p.graph), 7, classes);
    const float first = p.step(f);
    float last = first;
    for (int i = 0; i < 60; ++i) last = p.step(f);
    MESSAGE(what, ": loss ", first, " -> ", last, " after 60 more steps on the same batch");
    CHECK(std::isfinite(last));
    CHECK(last < 0.7f * first);  // far beyond the noise of one batch: the model fits it
  }
}

TEST_CASE("the CNN configs refuse sizes they cannot build, naming the field") {
  ResNetConfig r = small_resnet();
  r.image = 10;
  Graph g;
  RecordingBuilder b(g);
  CHECK_THROWS_WITH_AS(resnet_cifar(b, r), doctest::Contains("image = 10 is not a multiple of 4"), GraphError);
  VggConfig v = small_vgg();
  v.stages = {1, 1, 1, 1};
  CHECK_THROWS_WITH_AS(vgg(b, v), doctest::Contains("image = 8 is not a multiple of 2^4 = 16"), GraphError);
}

}  // namespace
}  // namespace tg
