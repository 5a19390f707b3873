#pragma once
// A workload of tg-shapes: a model at each value of its variable extent, the extents a run
// steps through, and what the report calls it. The MLP and GPT-2 vary a sequence length
// (main.cpp); the CNNs (cnn_workloads.cpp) a batch size or an image size.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/harness/harness.h"
#include "graph/models.h"
#include "static/shape_strategy.h"

namespace tg::shapes {

struct Workload {
  std::string model = "mlp";  // "mlp", "gpt2_tiny" / "gpt2_small", or a CNN of tg-train's names
  // What varies: "length" (the MLP's tokens, GPT-2's sequence), "batch" or "image" (H = W).
  std::string dimension = "length";
  bool training = true;  // false: a forward per step (serving), its prediction checked
  int64_t min_len = 8, max_len = 128;
  std::vector<int64_t> buckets = {16, 32, 64, 128};  // ascending, up to max_len
  // Not empty: why bucket does not run on this workload (a note in the report instead).
  std::string no_bucket;
  ShapedModelFn at;
  Gpt2Config gpt2;         // the GPT-2 workloads' configuration (seq set per length)
  int64_t classes = 0;     // > 0: the CNNs' labels, in [0, classes), fed by bench::model_feeds
  // The extents of the timed run (n steps) and its name in the report; empty: the skewed
  // draw of the lengths over [min_len, max_len] (main.cpp).
  std::function<std::vector<int64_t>(int n)> draw;
  std::string distribution;
  std::vector<int64_t> check_extents;  // the check's steps; empty: the lengths' (main.cpp)
  bool sweep = true;                   // the sweep over distinct extents (the MLP and GPT-2)
  // The CNNs' size that stays fixed while the other varies: {"image", 224} for a batch
  // workload, {"batch", 32} for an image-size one; on every row beside params().
  harness::Params fixed;

  bool is_gpt2() const { return model.rfind("gpt2", 0) == 0; }
  bool is_cnn() const { return classes > 0; }
  // The report's row names: the MLP's as they always were, GPT-2's and the CNNs' apart.
  std::string row(const char* name) const {
    return is_gpt2() ? std::string("lm_") + name : is_cnn() ? std::string("cnn_") + name : std::string(name);
  }
  // The parameters that name the workload (none for the MLP, as it always was).
  harness::Params params() const {
    harness::Params p;
    if (is_gpt2()) p.insert_or_assign("model", harness::Param(model));
    if (is_cnn()) {
      p.insert_or_assign("model", harness::Param(model));
      p.insert_or_assign("dimension", harness::Param(dimension));
      p.insert_or_assign("mode", harness::Param(training ? "train" : "inference"));
    }
    return p;
  }
};

// The next of the deterministic pseudo-random draws (splitmix64) every extent sequence comes from.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// tg-train's CNN names that tg-shapes takes: resnet (the CIFAR ResNet), resnet18, resnet50, vgg16.
const std::vector<std::string>& cnn_names();

// The CNN `name`'s workloads, sized for a GPU or for the CPU: the batch of a training run
// (the last batch of each epoch shorter), the batch of a serving run (a forward per request
// batch), and, for the ResNets (global average pooling), the image size of multi-scale
// training. On the CPU the ImageNet networks run at 32 x 32 (the reference convolutions'
// pace), the CIFAR ResNet at width 8, one block per stage, 16 x 16. Parts a network cannot run (bucket with batch norm's batch statistics, VGG's image size)
// are noted in `rep`.
std::vector<Workload> cnn_workloads(const std::string& name, bool gpu, harness::Report& rep);

}  // namespace tg::shapes
