#include "graph/models.h"

#include <cmath>
#include <string>

#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/model_layers.h"

namespace tg {

using namespace model_layers;

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
  const Perm swap12 = perm_of({0, 2, 1, 3});
  // [B, S, D] -> [B*H, S, dh]
  auto split = [&](const Value& t) {
    return reshape(b, transpose(b, reshape(b, t, Shape{B, S, H, dh}), swap12), Shape{B * H, S, dh});
  };

  if ((c.causal || c.padding) && !c.fused_attention)
    graph_error("{}: {} needs fused_attention; the unfused block has no mask", m, c.causal ? "causal" : "padding");
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(dh));

  const Value x = b.input("x", Shape{B, S, D});
  const Value h = layer_norm(b, x, "block.ln1");
  Value merged;
  if (c.fused_attention) {
    const Value q = linear(b, h, D, "block.attn.q");
    const Value k = linear(b, h, D, "block.attn.k");
    const Value v = linear(b, h, D, "block.attn.v");
    const Value lengths = c.padding ? b.input("lengths", Shape{B}, DType::I32) : Value{};
    merged = attention(b, q, k, v, H, score_scale, c.causal, lengths);
  } else {
    const Value q = split(linear(b, h, D, "block.attn.q"));
    const Value k = split(linear(b, h, D, "block.attn.k"));
    const Value v = split(linear(b, h, D, "block.attn.v"));
    const Value scores = scale(b, matmul(b, q, k, false, true), score_scale);
    const Value ctx = matmul(b, softmax(b, scores), v);  // [B*H, S, dh]
    merged = reshape(b, transpose(b, reshape(b, ctx, Shape{B, H, S, dh}), swap12), Shape{B, S, D});
  }
  const Value a = add(b, x, dropout(b, linear(b, merged, D, "block.attn.o"), c.dropout, 0));
  const Value f = gelu(b, linear(b, layer_norm(b, a, "block.ln2"), c.mlp_ratio * D, "block.mlp.fc1"));
  const Value y = add(b, a, dropout(b, linear(b, f, D, "block.mlp.fc2"), c.dropout, 1));

  ModelOutputs out;
  out.prediction = y;
  if (c.with_loss) out.loss = mse_loss(b, y, b.input("target", Shape{B, S, D}));
  return out;
}

}  // namespace tg
