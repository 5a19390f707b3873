// The convolutional models of graph/models.h on the CPU: static == dynamic bitwise in
// training and in inference (running statistics), training moves the running statistics
// as PyTorch's BatchNorm does, and a few training steps on one batch lower the loss.
#include <algorithm>
#include <memory>

#include "graph/errors.h"
#include "static/parameter_store.h"
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

// x [N, C, H, W] -> batch_norm -> mse against "target", with the running statistics "bn.stats"
// updated from x itself: the statistics a step must leave depend on the feeds alone.
ModelFn batch_norm_model(const Shape& x_shape) {
  return [x_shape](Builder& b) {
    const Value x = b.input("x", x_shape);
    const int64_t c = x_shape[1];
    ParamInit one, zero;
    one.kind = zero.kind = ParamInit::Kind::constant;
    one.a = 1.0f;
    zero.a = 0.0f;
    const Value y = batch_norm(b, x, b.parameter("bn.gamma", Shape{c}, one), b.parameter("bn.beta", Shape{c}, zero));
    ParamInit init;
    init.kind = ParamInit::Kind::data;
    auto data = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * c), 0.0f);
    std::fill(data->begin() + c, data->end(), 1.0f);
    init.data = std::move(data);
    batch_norm_stats_update(b, b.parameter("bn.stats", Shape{2, c}, init), x);
    ModelOutputs out;
    out.prediction = y;
    out.loss = mse_loss(b, y, b.input("target", x_shape));
    return out;
  };
}

TEST_CASE("batch norm's running statistics: PyTorch's momentum rule over the batches, on both executors") {
  const Shape xs{3, 2, 2, 3};  // N, C, H, W: 18 elements a channel
  auto be = cpu();
  CompileOptions co;
  co.backend = be;
  co.params = std::make_shared<ParameterStore>(be, 0);
  CompiledPlan p = compile(batch_norm_model(xs), co);
  // The statistics are parameters the optimizer leaves alone: no gradient, no velocity.
  for (const Node& n : p.graph->nodes)
    for (int in : n.inputs) {
      const ValueInfo& v = p.graph->values[static_cast<size_t>(in)];
      if (v.name == "bn.stats") CHECK(n.op == OpKind::batch_norm_stats_update);
    }
  CHECK(p.exec->parameters().find("bn.stats.velocity") == nullptr);
  DynamicTrainer dyn(batch_norm_model(xs), *be, "caching", DynamicOptions{});
  std::vector<double> want = {0, 0, 1, 1};  // mean per channel, then variance
  const double m = 0.1;
  for (uint64_t i = 0; i < 3; ++i) {
    const Feeds f = testing::random_feeds(testing::input_shapes_of(*p.graph), 200 + i);
    p.step(f);
    dyn.step(f);
    const std::vector<float>& x = f.at("x");
    for (int64_t ch = 0; ch < 2; ++ch) {
      std::vector<double> v;
      for (int64_t nn = 0; nn < 3; ++nn)
        for (int64_t e = 0; e < 6; ++e) v.push_back(x[static_cast<size_t>((nn * 2 + ch) * 6 + e)]);
      double mean = 0, sq = 0;
      for (double t : v) mean += t / static_cast<double>(v.size());
      for (double t : v) sq += (t - mean) * (t - mean);
      want[static_cast<size_t>(ch)] = (1 - m) * want[static_cast<size_t>(ch)] + m * mean;
      want[static_cast<size_t>(2 + ch)] = (1 - m) * want[static_cast<size_t>(2 + ch)] + m * sq / (v.size() - 1);
    }
    const std::vector<float> got = p.read("bn.stats");
    INFO("step ", i);
    CHECK(testing::bitwise_diff(got, dyn.parameter("bn.stats")) == "");
    REQUIRE(got.size() == 4);
    for (size_t k = 0; k < 4; ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-5));
  }
  // gamma and beta did train.
  CHECK(p.read("bn.beta") != std::vector<float>(2, 0.0f));
  // Inference of the training form (batch statistics) updates nothing: the static inference
  // graph has no update, and the dynamic executor skips it.
  CompileOptions ico = co;
  ico.training = false;
  const std::vector<float> before = dyn.parameter("bn.stats");
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*p.graph), 250);
  CompiledPlan inf = compile(batch_norm_model(xs), ico);
  inf.run(f);
  CHECK(testing::bitwise_diff(inf.read(inf.prediction), dyn.run_inference(f)) == "");
  CHECK(testing::bitwise_diff(dyn.parameter("bn.stats"), before) == "");
  CHECK(testing::bitwise_diff(p.read("bn.stats"), before) == "");
}

TEST_CASE("the ResNet's inference reads the running statistics that its training steps left") {
  ResNetConfig r = small_resnet();
  auto be = cpu();
  auto store = std::make_shared<ParameterStore>(be, 0);
  CompileOptions co;
  co.backend = be;
  co.params = store;
  CompiledPlan train = compile(resnet_model(r), co);
  DynamicTrainer dyn(resnet_model(r), *be, "caching", DynamicOptions{});
  for (uint64_t i = 0; i < 3; ++i) {
    const Feeds f = testing::random_feeds(testing::input_shapes_of(*train.graph), 300 + i, r.classes);
    train.step(f);
    dyn.step(f);
  }
  std::vector<std::string> stats;
  for (const std::string& name : dyn.parameter_names())
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".stats") == 0) stats.push_back(name);
  CHECK(stats.size() == 9);  // the stem's, two a block (one block a stage), the two projections'
  auto initial = [](size_t n) {
    std::vector<float> v(n, 0.0f);
    std::fill(v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end(), 1.0f);
    return v;
  };
  for (const std::string& name : stats) {
    INFO(name);
    const std::vector<float> got = train.read(name);
    CHECK(testing::bitwise_diff(got, dyn.parameter(name)) == "");
    CHECK(got != initial(got.size()));
  }
  co.training = false;
  CompiledPlan inference = compile(resnet_model(testing::without_loss(r)), co);  // the training plan's parameters
  const Feeds f = testing::random_feeds(testing::input_shapes_of(*inference.graph), 400);
  inference.run(f);
  const std::vector<float> trained = inference.read(inference.prediction);
  // The same weights with the initial statistics (the CPU store's buffers are host memory).
  for (const std::string& name : stats) {
    float* buf = store->find(name);
    REQUIRE(buf != nullptr);
    const std::vector<float> v = initial(train.read(name).size());
    std::copy(v.begin(), v.end(), buf);
  }
  inference.run(f);
  CHECK(testing::bitwise_diff(trained, inference.read(inference.prediction)) != "");
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
