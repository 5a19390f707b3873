// The ImageNet networks of graph/models.h: their trained parameters number exactly what
// torchvision's resnet18, resnet50 and vgg16 have (the structure is theirs), and at small
// images on the CPU both executors agree bit for bit in training and inference.
#include "graph/errors.h"
#include "tests/common/models.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

struct Counts {
  int64_t trained = 0;  // parameters with a gradient: what torchvision's parameters() holds
  int64_t stats = 0;    // batch norm's running statistics: buffers in PyTorch
};

Counts count_parameters(const ModelFn& model) {
  Graph g;
  RecordingBuilder b(g);
  model(b);
  Counts c;
  const std::string suffix = ".stats";
  for (const ValueInfo& v : g.values) {
    if (v.role != Role::parameter) continue;
    const bool stats = v.name.size() > suffix.size() &&
                       v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    (stats ? c.stats : c.trained) += v.shape.numel();
  }
  return c;
}

TEST_CASE("the ImageNet networks have torchvision's parameter counts at 224 x 224") {
  const Counts r18 = count_parameters(testing::resnet_imagenet_model(resnet18_config()));
  CHECK(r18.trained == 11689512);
  // torchvision's running_mean and running_var: one each per batch norm channel (20 layers,
  // 4,800 channels).
  CHECK(r18.stats == 2 * 4800);
  const Counts r50 = count_parameters(testing::resnet_imagenet_model(resnet50_config()));
  CHECK(r50.trained == 25557032);
  CHECK(r50.stats == 2 * 26560);  // 53 layers
  const Counts v16 = count_parameters(testing::vgg_model(vgg16_config()));
  CHECK(v16.trained == 138357544);
  CHECK(v16.stats == 0);
}

TEST_CASE("the ImageNet networks' shapes: the stem and four stages take 224 down to 7, the head gives the classes") {
  for (const auto& [what, model, features] :
       {std::tuple<const char*, ModelFn, int64_t>{"resnet18", testing::resnet_imagenet_model(resnet18_config()), 512},
        {"resnet50", testing::resnet_imagenet_model(resnet50_config()), 2048}}) {
    CAPTURE(what);
    Graph g;
    RecordingBuilder b(g);
    const ModelOutputs out = model(b);
    CHECK(out.prediction.shape == Shape{32, 1000});
    CHECK(out.loss.valid());
    bool found = false;  // the last block's output, before the global average pool
    for (const ValueInfo& v : g.values) found = found || v.shape == Shape{32, features, 7, 7};
    CHECK(found);
  }
}

TEST_CASE("static == dynamic bitwise on the CPU: ResNet-18 and ResNet-50 at 32 x 32, training and inference") {
  const ImageNetResNetConfig r18 = at_size(resnet18_config(), 2, 32);
  testing::check_static_vs_dynamic(cpu, testing::resnet_imagenet_model(r18), "resnet18", false, r18.classes);
  // ResNet-50's blocks at a quarter of the width: the same graph, a sixteenth of the work.
  ImageNetResNetConfig r50 = at_size(resnet50_config(), 2, 32);
  r50.width = 16;
  r50.classes = 10;
  r50.in_place_relu = true;
  testing::check_static_vs_dynamic(cpu, testing::resnet_imagenet_model(r50), "resnet50 width 16, in-place relu", false,
                                   r50.classes);
}

TEST_CASE("the ImageNet ResNet refuses sizes it cannot build, naming the field") {
  Graph g;
  RecordingBuilder b(g);
  ImageNetResNetConfig c = at_size(resnet18_config(), 2, 48);
  CHECK_THROWS_WITH_AS(resnet_imagenet(b, c), doctest::Contains("image = 48 is not a multiple of 2^5 = 32"),
                       GraphError);
  c.image = 32;
  c.blocks = {};
  CHECK_THROWS_WITH_AS(resnet_imagenet(b, c), doctest::Contains("blocks is empty"), GraphError);
  c.blocks = {2, 0};
  CHECK_THROWS_WITH_AS(resnet_imagenet(b, c), doctest::Contains("blocks in a stage = 0 must be >= 1"), GraphError);
}

}  // namespace
}  // namespace tg
