// The convolutional networks of graph/models.h, NCHW, written from graph/model_layers.h's
// conv, batch norm and Linear layers.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "graph/errors.h"
#include "graph/model_layers.h"
#include "graph/models.h"

namespace tg {

using namespace model_layers;

ModelOutputs resnet_cifar(Builder& b, const ResNetConfig& c) {
  const char* m = "resnet";
  require_image_sizes(m, c.batch, c.image, c.width, c.classes);
  require_positive(m, "blocks", c.blocks);
  if (c.image % 4 != 0)
    graph_error("{}: image = {} is not a multiple of 4; the two stride-2 stages halve it twice", m, c.image);
  const bool train = c.with_loss;
  const bool ip = c.in_place_relu;
  Value h = b.input("x", Shape{c.batch, 3, c.image, c.image});
  h = bn_relu(b, conv(b, h, c.width, 3, 1, false, "stem.conv"), train, ip, "stem.bn");
  for (int s = 0; s < 3; ++s) {
    const int64_t width = c.width << s;
    for (int k = 0; k < c.blocks; ++k) {
      const std::string name = "s" + std::to_string(s) + ".b" + std::to_string(k);
      const int stride = s > 0 && k == 0 ? 2 : 1;
      const Value y = bn_relu(b, conv(b, h, width, 3, stride, false, name + ".conv1"), train, ip, name + ".bn1");
      const Value z = batch_norm_layer(b, conv(b, y, width, 3, 1, false, name + ".conv2"), train, name + ".bn2");
      h = residual(b, h, z, stride, train, ip, name);
    }
  }
  const Value features = reshape(b, global_avg_pool(b, h), Shape{c.batch, h.shape[1]});
  return classifier_head(b, features, c.classes, c.with_loss, "fc");
}

ModelOutputs vgg(Builder& b, const VggConfig& c) {
  const char* m = "vgg";
  require_image_sizes(m, c.batch, c.image, c.width, c.classes);
  require_positive(m, "fc", c.fc);
  require_stages(m, c.stages, "stages", "convs in a stage", "give the 3x3 convs of each stage, e.g. 2,2,3,3,3");
  const auto n = static_cast<int64_t>(c.stages.size());
  require_halvable(m, c.image, n, fmt::format("each of the {} stages halves it", n));
  Value h = b.input("x", Shape{c.batch, 3, c.image, c.image});
  ConvAttr pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  for (size_t s = 0; s < c.stages.size(); ++s) {
    const int64_t width = c.width << std::min<size_t>(s, 3);
    for (int k = 0; k < c.stages[s]; ++k)
      h = relu(b, conv(b, h, width, 3, 1, true, "s" + std::to_string(s) + ".conv" + std::to_string(k)),
               c.in_place_relu);
    h = max_pool2d(b, h, pool);
  }
  h = reshape(b, h, Shape{c.batch, h.shape[1] * h.shape[2] * h.shape[3]});
  for (int l = 0; l < 2; ++l) h = relu(b, linear(b, h, c.fc, "fc" + std::to_string(l)), c.in_place_relu);
  return classifier_head(b, h, c.classes, c.with_loss, "head");
}

ModelOutputs resnet_imagenet(Builder& b, const ImageNetResNetConfig& c) {
  const char* m = "resnet_imagenet";
  require_image_sizes(m, c.batch, c.image, c.width, c.classes);
  require_stages(m, c.blocks, "blocks", "blocks in a stage", "give the blocks of each stage, e.g. 3,4,6,3");
  const auto stages = static_cast<int64_t>(c.blocks.size());
  require_halvable(m, c.image, stages + 1,
                   fmt::format("the stem, its pool and the {} stride-2 stages halve it", stages - 1));
  const bool train = c.with_loss;
  const bool ip = c.in_place_relu;
  Value h = b.input("x", Shape{c.batch, 3, c.image, c.image});
  h = bn_relu(b, conv(b, h, c.width, 7, 2, false, "stem.conv"), train, ip, "stem.bn");
  ConvAttr pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  pool.pads = {1, 1, 1, 1};
  h = max_pool2d(b, h, pool);
  for (size_t s = 0; s < c.blocks.size(); ++s) {
    const int64_t width = c.width << s;
    for (int k = 0; k < c.blocks[s]; ++k) {
      const std::string name = "s" + std::to_string(s) + ".b" + std::to_string(k);
      const int stride = s > 0 && k == 0 ? 2 : 1;
      Value z;
      if (c.bottleneck) {
        const Value y1 = bn_relu(b, conv(b, h, width, 1, 1, false, name + ".conv1"), train, ip, name + ".bn1");
        const Value y2 = bn_relu(b, conv(b, y1, width, 3, stride, false, name + ".conv2"), train, ip, name + ".bn2");
        z = batch_norm_layer(b, conv(b, y2, 4 * width, 1, 1, false, name + ".conv3"), train, name + ".bn3");
      } else {
        const Value y = bn_relu(b, conv(b, h, width, 3, stride, false, name + ".conv1"), train, ip, name + ".bn1");
        z = batch_norm_layer(b, conv(b, y, width, 3, 1, false, name + ".conv2"), train, name + ".bn2");
      }
      h = residual(b, h, z, stride, train, ip, name);
    }
  }
  const Value features = reshape(b, global_avg_pool(b, h), Shape{c.batch, h.shape[1]});
  return classifier_head(b, features, c.classes, c.with_loss, "fc");
}

ImageNetResNetConfig resnet18_config() {
  ImageNetResNetConfig c;
  c.blocks = {2, 2, 2, 2};
  c.bottleneck = false;
  return c;
}

ImageNetResNetConfig resnet50_config() {
  ImageNetResNetConfig c;
  c.blocks = {3, 4, 6, 3};
  c.bottleneck = true;
  return c;
}

VggConfig vgg16_config() {
  VggConfig c;
  c.image = 224;
  c.width = 64;
  c.stages = {2, 2, 3, 3, 3};
  c.fc = 4096;
  c.classes = 1000;
  return c;
}

}  // namespace tg
