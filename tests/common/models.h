#pragma once
// The tests' model set-ups in one place: configs of graph/models.h with every size
// spelled out at the call site (the tests compare bits, so a size is part of what a
// test checks and must stay visible there), and the configs wrapped as a ModelFn.
// Fields not taken here keep graph/models.h's defaults; set them on the result.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "graph/models.h"

namespace tg::testing {

// Initialized by position, so these follow graph/models.h's field order (the
// asserts below fail if that order changes); the fields after the last one given
// keep their defaults.
inline MlpConfig mlp_config(int64_t batch, int64_t in, int64_t width, int depth, int64_t out,
                            MlpConfig::Loss loss = MlpConfig{}.loss) {
  return MlpConfig{batch, in, width, depth, out, loss};
}
static_assert(offsetof(MlpConfig, batch) < offsetof(MlpConfig, in) && offsetof(MlpConfig, in) < offsetof(MlpConfig, width) &&
                  offsetof(MlpConfig, width) < offsetof(MlpConfig, depth) &&
                  offsetof(MlpConfig, depth) < offsetof(MlpConfig, out) && offsetof(MlpConfig, out) < offsetof(MlpConfig, loss),
              "mlp_config() needs MlpConfig's fields in the order batch, in, width, depth, out, loss");

inline TransformerConfig transformer_config(int64_t batch, int64_t seq, int64_t d_model, int64_t heads,
                                            int64_t mlp_ratio = TransformerConfig{}.mlp_ratio) {
  return TransformerConfig{batch, seq, d_model, heads, mlp_ratio};
}
static_assert(offsetof(TransformerConfig, batch) < offsetof(TransformerConfig, seq) &&
                  offsetof(TransformerConfig, seq) < offsetof(TransformerConfig, d_model) &&
                  offsetof(TransformerConfig, d_model) < offsetof(TransformerConfig, heads) &&
                  offsetof(TransformerConfig, heads) < offsetof(TransformerConfig, mlp_ratio),
              "transformer_config() needs TransformerConfig's fields in the order batch, seq, d_model, heads, mlp_ratio");

inline ResNetConfig resnet_config(int64_t batch, int64_t image, int64_t width, int blocks, int64_t classes) {
  ResNetConfig c;
  c.batch = batch;
  c.image = image;
  c.width = width;
  c.blocks = blocks;
  c.classes = classes;
  return c;
}

inline VggConfig vgg_config(int64_t batch, int64_t image, int64_t width, std::vector<int> stages, int64_t fc,
                            int64_t classes) {
  VggConfig c;
  c.batch = batch;
  c.image = image;
  c.width = width;
  c.stages = std::move(stages);
  c.fc = fc;
  c.classes = classes;
  return c;
}

inline ChainConfig chain_config(int n, int64_t size) {
  ChainConfig c;
  c.n = n;
  c.size = size;
  return c;
}

// The same config with with_loss = false (the inference-only model).
template <class Config>
Config without_loss(Config c) {
  c.with_loss = false;
  return c;
}

// By value: the ModelFn outlives the config it was made from.
inline ModelFn mlp_model(const MlpConfig& c) {
  return [c](Builder& b) { return mlp(b, c); };
}
inline ModelFn transformer_model(const TransformerConfig& c) {
  return [c](Builder& b) { return transformer_block(b, c); };
}
inline ModelFn resnet_model(const ResNetConfig& c) {
  return [c](Builder& b) { return resnet_cifar(b, c); };
}
inline ModelFn vgg_model(const VggConfig& c) {
  return [c](Builder& b) { return vgg(b, c); };
}
inline ModelFn resnet_imagenet_model(const ImageNetResNetConfig& c) {
  return [c](Builder& b) { return resnet_imagenet(b, c); };
}
inline ModelFn chain_model(const ChainConfig& c) {
  return [c](Builder& b) { return chain(b, c); };
}

// For the shape-strategy tests (the result is a static/shape_strategy.h
// ShapedModelFn): the model at extent n is `base` with its field `axis` set to n;
// base's own value of that field is not used.
template <class Config>
std::function<ModelFn(int64_t)> model_at(const Config& base, int64_t Config::*axis, ModelFn (*make)(const Config&)) {
  return [base, axis, make](int64_t n) {
    Config c = base;
    c.*axis = n;
    return make(c);
  };
}
inline std::function<ModelFn(int64_t)> mlp_model_at(const MlpConfig& base, int64_t MlpConfig::*axis = &MlpConfig::batch) {
  return model_at(base, axis, &mlp_model);
}
inline std::function<ModelFn(int64_t)> transformer_model_at(const TransformerConfig& base,
                                                           int64_t TransformerConfig::*axis = &TransformerConfig::batch) {
  return model_at(base, axis, &transformer_model);
}

// A GPT-2 of vocabulary 11 (ids and labels both in [0, 11)), context 12, two layers of two
// heads over batch 2, sequence 8; the labels equal to 3 are ignored.
inline Gpt2Config tiny_gpt2_config() {
  Gpt2Config c;
  c.batch = 2;
  c.seq = 8;
  c.vocab = 11;
  c.context = 12;
  c.d_model = 16;
  c.heads = 2;
  c.layers = 2;
  c.ignore_index = 3;
  return c;
}
inline ModelFn gpt2_model(const Gpt2Config& c) {
  return [c](Builder& b) { return gpt2(b, c); };
}
inline std::function<ModelFn(int64_t)> gpt2_model_at(const Gpt2Config& base, int64_t Gpt2Config::*axis) {
  return model_at(base, axis, &gpt2_model);
}

}  // namespace tg::testing
