#include <cmath>
#include <string>

#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/model_layers.h"
#include "graph/models.h"

namespace tg {

using namespace model_layers;

Gpt2Config gpt2_small_config() { return Gpt2Config{}; }

Gpt2Config gpt2_tiny_config() {
  Gpt2Config t;
  t.batch = 4;
  t.seq = 32;
  t.vocab = 512;
  t.context = 64;
  t.d_model = 64;
  t.heads = 2;
  t.layers = 2;
  return t;
}

ModelOutputs gpt2(Builder& b, const Gpt2Config& c) {
  const char* m = "gpt2";
  require_positive(m, "batch", c.batch);
  require_positive(m, "seq", c.seq);
  require_positive(m, "vocab", c.vocab);
  require_positive(m, "context", c.context);
  require_positive(m, "d_model", c.d_model);
  require_positive(m, "heads", c.heads);
  require_positive(m, "layers", c.layers);
  require_positive(m, "mlp_ratio", c.mlp_ratio);
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f))
    graph_error("{}: dropout = {} must be in [0, 1) (0: none; GPT-2 trains with 0.1)", m, c.dropout);
  if (c.seq > c.context)
    graph_error("{}: seq = {} is longer than the context = {} the position embedding has rows for", m, c.seq,
                c.context);
  if (c.d_model % c.heads != 0)
    graph_error("{}: d_model = {} is not a multiple of heads = {}; each head needs d_model / heads dims", m,
                c.d_model, c.heads);
  if (c.ids_dtype != DType::I64 && c.ids_dtype != DType::I32)
    graph_error("{}: ids_dtype {} is not an integer type; token ids are i64 or i32", m, dtype_name(c.ids_dtype));
  const int64_t B = c.batch, S = c.seq, D = c.d_model;
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(D / c.heads));
  ParamInit embed_init;
  embed_init.a = 0.02f;

  const Value wte = b.parameter("gpt2.wte", Shape{c.vocab, D}, embed_init);
  const Value wpe = b.parameter("gpt2.wpe", Shape{c.context, D}, embed_init);
  const Value ids = b.input("ids", Shape{B, S}, c.ids_dtype);
  const Value positions = broadcast(b, slice(b, wpe, 0, 0, S), 0, B);  // [B, S, D]
  // Each dropout draws from its own rng stream: 0 for the embeddings, 1 + 2l and 2 + 2l in block l.
  Value x = dropout(b, add(b, embedding(b, wte, ids), positions), c.dropout, 0);
  const Value lengths = c.padding ? b.input("lengths", Shape{B}, DType::I32) : Value{};
  for (int l = 0; l < c.layers; ++l) {
    const std::string n = "gpt2.h" + std::to_string(l);
    const Value h = layer_norm(b, x, n + ".ln1");
    const Value q = linear(b, h, D, n + ".attn.q");
    const Value k = linear(b, h, D, n + ".attn.k");
    const Value v = linear(b, h, D, n + ".attn.v");
    const Value attn = linear(b, attention(b, q, k, v, c.heads, score_scale, true, lengths), D, n + ".attn.o");
    x = add(b, x, dropout(b, attn, c.dropout, 1 + 2 * int64_t{l}));
    const Value f = gelu(b, linear(b, layer_norm(b, x, n + ".ln2"), c.mlp_ratio * D, n + ".mlp.fc"));
    x = add(b, x, dropout(b, linear(b, f, D, n + ".mlp.proj"), c.dropout, 2 + 2 * int64_t{l}));
  }
  const Value hidden = reshape(b, layer_norm(b, x, "gpt2.ln_f"), Shape{B * S, D});
  ModelOutputs out;
  out.prediction = matmul(b, hidden, wte, false, true);  // [B * S, vocab]
  if (c.with_loss) {
    const Value labels = reshape(b, b.input("labels", Shape{B, S}, c.ids_dtype), Shape{B * S});
    out.loss = cross_entropy(b, out.prediction, labels, c.ignore_index);
  }
  return out;
}

}  // namespace tg
