// The CNN workloads of tg-shapes (workload.h): for images, the extent that varies is the batch
// (an epoch's last batch, the request batches of a server) or the image size (multi-scale
// training, where the network pools globally before its head).
#include <fmt/format.h>

#include <algorithm>

#include "experiments/shapes/workload.h"

namespace tg::shapes {

namespace {

namespace th = harness;

// A model factory: the network `name` at (batch, image), with its loss (training) or without
// (inference: batch norm on its running statistics).
using CnnAt = std::function<ModelFn(int64_t batch, int64_t image, bool training)>;

CnnAt cnn_at(const std::string& name, bool gpu) {
  if (name == "resnet") {
    return [gpu](int64_t batch, int64_t image, bool training) -> ModelFn {
      ResNetConfig c;  // ResNet-20, width 16
      if (!gpu) {
        c.width = 8;
        c.blocks = 1;
      }
      c = at_size(c, batch, image);
      c.with_loss = training;
      return [c](Builder& b) { return resnet_cifar(b, c); };
    };
  }
  if (name == "vgg16") {
    return [](int64_t batch, int64_t image, bool training) -> ModelFn {
      VggConfig c = at_size(vgg16_config(), batch, image);
      c.with_loss = training;
      return [c](Builder& b) { return vgg(b, c); };
    };
  }
  return [name](int64_t batch, int64_t image, bool training) -> ModelFn {
    ImageNetResNetConfig c = at_size(name == "resnet18" ? resnet18_config() : resnet50_config(), batch, image);
    c.with_loss = training;
    return [c](Builder& b) { return resnet_imagenet(b, c); };
  };
}

// Powers of two from `cap` down, at most four of them, ascending.
std::vector<int64_t> buckets_up_to(int64_t cap) {
  std::vector<int64_t> b;
  for (int64_t v = cap; v >= 1 && b.size() < 4; v /= 2) b.push_back(v);
  std::reverse(b.begin(), b.end());
  return b;
}

// Draws over [lo, hi] (splitmix64): skewed, as the lengths are, the minimum of two uniform
// draws (a server sees many small request batches and a tail of large ones), else uniform.
std::vector<int64_t> draw_extents(int n, int64_t lo, int64_t hi, uint64_t state, bool skewed) {
  auto next = [&state] { return splitmix64(state); };
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) {
    const uint64_t a = next() >> 11;
    const double u = static_cast<double>(skewed ? std::min(a, next() >> 11) : a) * 0x1.0p-53;
    v.push_back(lo + static_cast<int64_t>(u * static_cast<double>(hi - lo + 1)));
  }
  return v;
}

struct Sizes {
  int64_t image;                  // the batch workloads' image size
  int64_t batch;                  // the training batch; the epoch's last one is shorter
  int64_t serve_max;              // the largest request batch of the serving workload
  std::vector<int64_t> images;    // the multi-scale training's image sizes (ResNets)
};

// GPU: tg-train's sizes (224 x 224, batch 32; the CIFAR ResNet-20 at 32 x 32, batch 128).
// CPU: what its reference convolutions run in tens of milliseconds per training step (the
// CIFAR ResNet, small enough for the ctest) or seconds (the ImageNet networks at 32 x 32).
Sizes sizes(const std::string& name, bool gpu) {
  if (name == "resnet") return gpu ? Sizes{32, 128, 128, {24, 28, 32}} : Sizes{16, 4, 8, {8, 12, 16}};
  return gpu ? Sizes{224, 32, 64, {160, 192, 224}} : Sizes{32, 2, 4, {32, 64}};
}

}  // namespace

const std::vector<std::string>& cnn_names() {
  static const std::vector<std::string> names{"resnet", "resnet18", "resnet50", "vgg16"};
  return names;
}

std::vector<Workload> cnn_workloads(const std::string& name, bool gpu, th::Report& rep) {
  const CnnAt at = cnn_at(name, gpu);
  const Sizes s = sizes(name, gpu);
  const bool batch_norm = name != "vgg16";
  std::vector<Workload> out;
  auto base = [&](const char* dimension, bool training) {
    Workload w;
    w.model = name;
    w.dimension = dimension;
    w.training = training;
    w.classes = name == "resnet" ? 10 : 1000;
    w.sweep = false;
    return w;
  };
  // Training: an epoch of ten batches whose last is 3/8 of the others (a dataset that is not
  // a multiple of the batch), two shapes in all. Bucket pads the last batch with zero images
  // whose labels are cross_entropy's ignore_index, which leaves every real sample's loss and
  // gradient as it was, except where the network normalizes over the batch.
  {
    Workload w = base("batch", true);
    const int64_t full = s.batch, tail = std::max<int64_t>(1, s.batch * 3 / 8);
    w.min_len = 1;
    w.max_len = full;
    w.buckets = {full};
    w.at = [at, image = s.image](int64_t batch) { return at(batch, image, true); };
    w.fixed = {{"image", s.image}};
    w.draw = [full, tail](int n) {
      std::vector<int64_t> v;
      for (int i = 0; i < n; ++i) v.push_back(i % 10 == 9 ? tail : full);
      return v;
    };
    w.distribution = fmt::format("epoch_of_10_batches_last_{}_of_{}", tail, full);
    w.check_extents = {full, tail, full, 1, tail, full};
    if (batch_norm)
      w.no_bucket = "batch norm normalizes over the batch in training: the padding images would change every real "
                    "sample's statistics (and the running statistics); a padded batch needs a masked batch norm";
    out.push_back(std::move(w));
  }
  // Serving: one forward per request batch, skewed towards small batches. Batch norm runs on
  // its running statistics, one sample at a time, so bucket pads with zero images here.
  {
    Workload w = base("batch", false);
    w.min_len = 1;
    w.max_len = s.serve_max;
    w.buckets = buckets_up_to(s.serve_max);
    w.at = [at, image = s.image](int64_t batch) { return at(batch, image, false); };
    w.fixed = {{"image", s.image}};
    w.draw = [max = s.serve_max](int n) { return draw_extents(n, 1, max, 42, true); };
    w.distribution = fmt::format("skewed_min_of_2_uniform_1_{}", s.serve_max);
    w.check_extents = {3, s.serve_max, 1, s.serve_max, std::max<int64_t>(1, s.serve_max / 2 + 1), 3};
    for (int64_t& e : w.check_extents) e = std::min(e, s.serve_max);
    out.push_back(std::move(w));
  }
  // Multi-scale training: an image size drawn each step, at the training batch. VGG's fully
  // connected layers take 7 x 7 x 512 features, so its image size is fixed.
  if (name == "vgg16") {
    rep.skip(fmt::format("cnn_iteration model={} dimension=image", name),
             "VGG-16 flattens its last feature map into fully connected layers, so the image size is fixed by its "
             "weights; only networks that pool globally before their head (the ResNets) take other image sizes");
  } else {
    Workload w = base("image", true);
    w.min_len = s.images.front();
    w.max_len = s.images.back();
    w.buckets = {};
    w.at = [at, batch = s.batch](int64_t image) { return at(batch, image, true); };
    w.fixed = {{"batch", s.batch}};
    w.draw = [images = s.images](int n) {
      std::vector<int64_t> v;
      for (int64_t k : draw_extents(n, 0, static_cast<int64_t>(images.size()) - 1, 7, false)) v.push_back(images[static_cast<size_t>(k)]);
      return v;
    };
    std::string list;
    for (int64_t i : s.images) list += (list.empty() ? "" : "_") + std::to_string(i);
    w.distribution = "uniform_over_" + list;
    w.check_extents = {s.images.back(), s.images.front(), s.images.back(), s.images[1], s.images.front()};
    w.no_bucket = "padding an image is not padding a batch: zero rows and columns at the border change every "
                  "convolution's output near it and the global average pool's mean, so the real results would "
                  "change; a bucket of image sizes needs resizing the data, which is another model input";
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace tg::shapes
