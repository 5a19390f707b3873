#include "graph/models.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "graph/errors.h"

namespace tg {

namespace {

ParamInit constant(float v) {
  ParamInit p;
  p.kind = ParamInit::Kind::constant;
  p.a = v;
  return p;
}

// Linear: x [.., in] · W [in, out] + b [out]; weights and bias uniform in
// ±1/sqrt(in), as PyTorch's nn.Linear.
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

void require_positive(const char* model, const char* field, int64_t v) {
  if (v < 1) graph_error("{}: {} = {} must be >= 1", model, field, v);
}

// A k x k conv to `out` channels; weights uniform in +-1/sqrt(fan_in), fan_in = C k k (as
// PyTorch's nn.Conv2d), with a bias of the same bound when `bias`.
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

// Batch norm over x's channels with its running statistics "<name>.stats" [2, C] (means 0,
// variances 1 at the start). Training normalizes with the batch's statistics and moves the
// running ones toward them (momentum 0.1, as PyTorch's BatchNorm2d); inference reads the
// running ones.
Value batch_norm_layer(Builder& b, const Value& x, bool training, const std::string& name) {
  const int64_t c = x.shape[1];
  const Value gamma = b.parameter(name + ".gamma", Shape{c}, constant(1.0f));
  const Value beta = b.parameter(name + ".beta", Shape{c}, constant(0.0f));
  ParamInit init;
  init.kind = ParamInit::Kind::data;
  auto data = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * c), 0.0f);
  std::fill(data->begin() + c, data->end(), 1.0f);
  init.data = std::move(data);
  const Value stats = b.parameter(name + ".stats", Shape{2, c}, init);
  if (!training) return batch_norm_inference(b, x, gamma, beta, stats);
  const Value y = batch_norm(b, x, gamma, beta);
  batch_norm_stats_update(b, stats, x);
  return y;
}

// The Linear head on [N, features] and, in training, cross_entropy against "labels".
ModelOutputs classifier_head(Builder& b, Value features, int64_t classes, bool with_loss, const std::string& name) {
  ModelOutputs out;
  out.prediction = linear(b, features, classes, name);
  if (with_loss) out.loss = cross_entropy(b, out.prediction, b.input("labels", Shape{features.shape[0]}));
  return out;
}

}  // namespace

ModelOutputs chain(Builder& b, const ChainConfig& c) {
  require_positive("chain", "n", c.n);
  require_positive("chain", "size", c.size);
  const Shape s{c.size};
  Value h = b.input("x", s);
  const Value w = b.parameter("chain.w", s);
  for (int i = 0; i < c.n; ++i) {
    switch (i % 3) {
      // add(w) first, so that even a one-op chain has a trainable parameter
      // (tg-launch compiles training chains of every length).
      case 0: h = add(b, h, w); break;
      case 1: h = scale(b, h, 0.5f); break;
      default: h = relu(b, h, c.in_place_relu); break;
    }
  }
  ModelOutputs out;
  out.prediction = h;
  if (c.with_loss) out.loss = mse_loss(b, h, b.input("target", s));
  return out;
}

ModelOutputs mlp(Builder& b, const MlpConfig& c) {
  require_positive("mlp", "batch", c.batch);
  require_positive("mlp", "in", c.in);
  require_positive("mlp", "width", c.width);
  require_positive("mlp", "depth", c.depth);
  require_positive("mlp", "out", c.out);
  Value h = b.input("x", Shape{c.batch, c.in});
  for (int l = 0; l < c.depth; ++l) {
    const bool last = l == c.depth - 1;
    h = linear(b, h, last ? c.out : c.width, "mlp.l" + std::to_string(l));
    if (!last) h = relu(b, h, c.in_place_relu);
  }
  ModelOutputs out;
  out.prediction = h;
  if (!c.with_loss) return out;
  if (c.loss == MlpConfig::Loss::mse)
    out.loss = mse_loss(b, h, b.input("target", Shape{c.batch, c.out}));
  else
    out.loss = cross_entropy(b, h, b.input("labels", Shape{c.batch}));
  return out;
}

ModelOutputs transformer_block(Builder& b, const TransformerConfig& c) {
  const char* m = "transformer_block";
  require_positive(m, "batch", c.batch);
  require_positive(m, "seq", c.seq);
  require_positive(m, "d_model", c.d_model);
  require_positive(m, "heads", c.heads);
  require_positive(m, "mlp_ratio", c.mlp_ratio);
  if (c.d_model % c.heads != 0)
    graph_error("{}: d_model = {} is not a multiple of heads = {}; each head needs d_model / heads dims", m,
                c.d_model, c.heads);
  const int64_t B = c.batch, S = c.seq, D = c.d_model, H = c.heads, dh = D / H;
  const std::array<int, kMaxRank> swap12{{0, 2, 1, 3}};
  // [B, S, D] -> [B*H, S, dh]
  auto split = [&](const Value& t) {
    return reshape(b, transpose(b, reshape(b, t, Shape{B, S, H, dh}), swap12), Shape{B * H, S, dh});
  };

  if (c.causal && !c.fused_attention)
    graph_error("{}: causal needs fused_attention; the unfused block has no mask", m);
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(dh));

  const Value x = b.input("x", Shape{B, S, D});
  const Value h = layer_norm(b, x, "block.ln1");
  Value merged;
  if (c.fused_attention) {
    const Value q = linear(b, h, D, "block.attn.q");
    const Value k = linear(b, h, D, "block.attn.k");
    const Value v = linear(b, h, D, "block.attn.v");
    merged = attention(b, q, k, v, H, score_scale, c.causal);
  } else {
    const Value q = split(linear(b, h, D, "block.attn.q"));
    const Value k = split(linear(b, h, D, "block.attn.k"));
    const Value v = split(linear(b, h, D, "block.attn.v"));
    const Value scores = scale(b, matmul(b, q, k, false, true), score_scale);
    const Value ctx = matmul(b, softmax(b, scores), v);  // [B*H, S, dh]
    merged = reshape(b, transpose(b, reshape(b, ctx, Shape{B, H, S, dh}), swap12), Shape{B, S, D});
  }
  const Value a = add(b, x, linear(b, merged, D, "block.attn.o"));
  const Value f = gelu(b, linear(b, layer_norm(b, a, "block.ln2"), c.mlp_ratio * D, "block.mlp.fc1"));
  const Value y = add(b, a, linear(b, f, D, "block.mlp.fc2"));

  ModelOutputs out;
  out.prediction = y;
  if (c.with_loss) out.loss = mse_loss(b, y, b.input("target", Shape{B, S, D}));
  return out;
}

ModelOutputs resnet_cifar(Builder& b, const ResNetConfig& c) {
  const char* m = "resnet";
  require_positive(m, "batch", c.batch);
  require_positive(m, "image", c.image);
  require_positive(m, "width", c.width);
  require_positive(m, "blocks", c.blocks);
  require_positive(m, "classes", c.classes);
  if (c.image % 4 != 0)
    graph_error("{}: image = {} is not a multiple of 4; the two stride-2 stages halve it twice", m, c.image);
  const bool train = c.with_loss;
  auto bn_relu = [&](const Value& x, const std::string& name) {
    return relu(b, batch_norm_layer(b, x, train, name), c.in_place_relu);
  };
  Value h = b.input("x", Shape{c.batch, 3, c.image, c.image});
  h = bn_relu(conv(b, h, c.width, 3, 1, false, "stem.conv"), "stem.bn");
  for (int s = 0; s < 3; ++s) {
    const int64_t width = c.width << s;
    for (int k = 0; k < c.blocks; ++k) {
      const std::string name = "s" + std::to_string(s) + ".b" + std::to_string(k);
      const int stride = s > 0 && k == 0 ? 2 : 1;
      const Value y = bn_relu(conv(b, h, width, 3, stride, false, name + ".conv1"), name + ".bn1");
      const Value z = batch_norm_layer(b, conv(b, y, width, 3, 1, false, name + ".conv2"), train, name + ".bn2");
      const Value shortcut =
          stride == 1 ? h
                      : batch_norm_layer(b, conv(b, h, width, 1, 2, false, name + ".proj"), train, name + ".proj_bn");
      h = relu(b, add(b, z, shortcut), c.in_place_relu);
    }
  }
  const Value features = reshape(b, global_avg_pool(b, h), Shape{c.batch, h.shape[1]});
  return classifier_head(b, features, c.classes, c.with_loss, "fc");
}

ModelOutputs vgg(Builder& b, const VggConfig& c) {
  const char* m = "vgg";
  require_positive(m, "batch", c.batch);
  require_positive(m, "image", c.image);
  require_positive(m, "width", c.width);
  require_positive(m, "fc", c.fc);
  require_positive(m, "classes", c.classes);
  if (c.stages.empty()) graph_error("{}: stages is empty; give the 3x3 convs of each stage, e.g. 2,2,3,3,3", m);
  for (int n : c.stages) require_positive(m, "convs in a stage", n);
  if (c.image % (int64_t{1} << c.stages.size()) != 0)
    graph_error("{}: image = {} is not a multiple of 2^{} = {}; each of the {} stages halves it", m, c.image,
                c.stages.size(), int64_t{1} << c.stages.size(), c.stages.size());
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

}  // namespace tg
