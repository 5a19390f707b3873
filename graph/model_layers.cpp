#include "graph/model_layers.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "graph/errors.h"

namespace tg::model_layers {

ParamInit constant(float v) {
  ParamInit p;
  p.kind = ParamInit::Kind::constant;
  p.a = v;
  return p;
}

void require_positive(const char* model, const char* field, int64_t v) {
  if (v < 1) graph_error("{}: {} = {} must be >= 1", model, field, v);
}

void require_image_sizes(const char* model, int64_t batch, int64_t image, int64_t width, int64_t classes) {
  require_positive(model, "batch", batch);
  require_positive(model, "image", image);
  require_positive(model, "width", width);
  require_positive(model, "classes", classes);
}

void require_stages(const char* model, const std::vector<int>& counts, const char* field, const char* each,
                    const char* fix) {
  if (counts.empty()) graph_error("{}: {} is empty; {}", model, field, fix);
  for (int n : counts) require_positive(model, each, n);
}

void require_halvable(const char* model, int64_t image, int64_t halvings, const std::string& why) {
  const int64_t step = int64_t{1} << halvings;
  if (image % step != 0)
    graph_error("{}: image = {} is not a multiple of 2^{} = {}; {}", model, image, halvings, step, why);
}

Value linear(Builder& b, const Value& x, int64_t out, const std::string& name) {
  const int64_t in = x.shape.last();
  ParamInit init;
  init.a = 1.0f / std::sqrt(static_cast<float>(in));
  const Value w = b.parameter(name + ".w", Shape{in, out}, init);
  const Value bias = b.parameter(name + ".b", Shape{out}, init);
  return bias_add(b, matmul(b, x, w), bias);
}

Value layer_norm(Builder& b, const Value& x, const std::string& name) {
  const int64_t d = x.shape.last();
  const Value gamma = b.parameter(name + ".gamma", Shape{d}, constant(1.0f));
  const Value beta = b.parameter(name + ".beta", Shape{d}, constant(0.0f));
  return layernorm(b, x, gamma, beta);
}

Value conv(Builder& b, const Value& x, int64_t out, int k, int stride, bool bias, const std::string& name) {
  const int64_t in = x.shape[1];
  ParamInit init;
  init.a = 1.0f / std::sqrt(static_cast<float>(in * k * k));
  const Value w = b.parameter(name + ".w", Shape{out, in, k, k}, init);
  ConvAttr a;
  a.stride = {stride, stride};
  const int pad = k / 2;
  a.pads = {pad, pad, pad, pad};
  if (!bias) return conv2d(b, x, w, a);
  return conv2d_bias(b, x, w, b.parameter(name + ".b", Shape{out}, init), a);
}

Value batch_norm_layer(Builder& b, const Value& x, bool training, const std::string& name) {
  const int64_t c = x.shape[1];
  const Value gamma = b.parameter(name + ".gamma", Shape{c}, constant(1.0f));
  const Value beta = b.parameter(name + ".beta", Shape{c}, constant(0.0f));
  const Value stats = b.parameter(name + ".stats", Shape{2, c}, ParamInit{ParamInit::Kind::running_stats, 0.0f});
  if (!training) return batch_norm_inference(b, x, gamma, beta, stats);
  const Value y = batch_norm(b, x, gamma, beta);
  batch_norm_stats_update(b, stats, x);
  return y;
}

Value bn_relu(Builder& b, const Value& x, bool training, bool in_place, const std::string& name) {
  return relu(b, batch_norm_layer(b, x, training, name), in_place);
}

Value residual(Builder& b, const Value& x, const Value& z, int stride, bool training, bool in_place,
               const std::string& name) {
  Value shortcut = x;
  if (stride != 1 || x.shape != z.shape)
    shortcut =
        batch_norm_layer(b, conv(b, x, z.shape[1], 1, stride, false, name + ".proj"), training, name + ".proj_bn");
  return relu(b, add(b, z, shortcut), in_place);
}

ModelOutputs classifier_head(Builder& b, const Value& features, int64_t classes, bool with_loss,
                             const std::string& name) {
  ModelOutputs out;
  out.prediction = linear(b, features, classes, name);
  if (with_loss) out.loss = cross_entropy(b, out.prediction, b.input("labels", Shape{features.shape[0]}));
  return out;
}

}  // namespace tg::model_layers
