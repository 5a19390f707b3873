#pragma once
// The models, each written once as a function of a Builder: run it on a
// RecordingBuilder to get a graph, on the eager builder to run it now. Inputs
// and parameters get deterministic names ("x", "target", "labels",
// "mlp.l0.w", ...), so both executors see the same values and initial bits.
#include <cstdint>
#include <functional>

#include "graph/builder.h"

namespace tg {

struct ModelOutputs {
  Value prediction;
  Value loss;  // invalid when the config asks for no loss (with_loss = false)
};
using ModelFn = std::function<ModelOutputs(Builder&)>;

// N tiny elementwise ops on a [size] vector, cycling add(w), scale(0.5), relu
// (op i is i % 3 of that list), then mse_loss against a "target" input. One
// shared parameter "chain.w" [size]. scale by 0.5 keeps the values bounded for
// any N. Exactly n forward nodes before the loss: the launch-overhead workload.
struct ChainConfig {
  int n = 100;
  int64_t size = 64;
  bool in_place_relu = false;
  bool with_loss = true;
};
ModelOutputs chain(Builder& b, const ChainConfig& c);

// depth Linear layers (matmul + bias_add); every one but the last is followed
// by a ReLU. x [batch, in] -> [batch, out]. Loss: mse against "target"
// [batch, out], or cross_entropy against "labels" [batch] (class indices, out classes).
struct MlpConfig {
  enum class Loss { mse, cross_entropy };
  int64_t batch = 32;
  int64_t in = 256;
  int64_t width = 256;
  int depth = 8;       // Linear layers in all, >= 1
  int64_t out = 10;    // outputs, or classes for cross_entropy
  Loss loss = Loss::mse;
  bool in_place_relu = false;
  bool with_loss = true;
};
ModelOutputs mlp(Builder& b, const MlpConfig& c);

// One pre-LN transformer block on x [batch, seq, d_model]:
//   a = x + Wo·attention(LN1(x)),  y = a + W2·gelu(W1·LN2(a))  (W1: d -> 4d),
// attention with heads split by reshape + transpose into [batch*heads, seq, dh]
// batched matmuls, scores scaled by 1/sqrt(dh), softmax over keys (no mask),
// mse loss of y against a "target" [batch, seq, d_model].
struct TransformerConfig {
  int64_t batch = 8;
  int64_t seq = 64;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  bool with_loss = true;
};
ModelOutputs transformer_block(Builder& b, const TransformerConfig& c);

}  // namespace tg
