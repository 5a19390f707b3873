#pragma once
// The models, each written once as a function of a Builder: run it on a
// RecordingBuilder to get a graph, on the eager builder to run it now. Inputs
// and parameters get deterministic names ("x", "target", "labels",
// "mlp.l0.w", ...), so both executors see the same values and initial bits.
#include <cstdint>
#include <functional>
#include <vector>

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
// fused_attention: the one attention op (graph/attention.h) on the projections' head views
// instead: no split, no merge, no S x S scores in memory, forward or backward. causal (only
// with fused_attention: the unfused block has no mask): query i attends to keys 0..i.
// padding (only with fused_attention): a "lengths" input [batch] (i32), each sequence's real
// length in a right-padded batch; keys past it are masked (graph/attention.h).
struct TransformerConfig {
  int64_t batch = 8;
  int64_t seq = 64;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  bool with_loss = true;
  bool fused_attention = false;
  bool causal = false;
  bool padding = false;
  // > 0: dropout (graph/dropout.h) of this probability on the attention and MLP outputs
  // before each residual add, as GPT-2 places it; none in eval mode.
  float dropout = 0.0f;
};
ModelOutputs transformer_block(Builder& b, const TransformerConfig& c);

// A GPT-2 language model (graph/gpt2_model.cpp): decoder-only and pre-LN. Token ids "ids"
// [batch, seq] (ids_dtype, i64 or i32) pick rows of the token embedding "gpt2.wte"
// [vocab, d_model], plus the first seq rows of the position embedding "gpt2.wpe" [context,
// d_model]; then `layers` blocks, each x + Wo·attention(LN1(x)) with causal fused
// attention over `heads` heads (graph/attention.h: no S x S scores in memory) and
// x + W2·gelu(W1·LN2(x)) (W1: d -> mlp_ratio d); a final layer norm and the logits
// [batch * seq, vocab] through the token embedding's transpose (tied weights, as GPT-2's
// LM head). With the loss: cross_entropy of the logits against "labels" [batch, seq]
// (ids_dtype: the next token at each place, ignore_index where there is none). With
// dropout > 0, dropout (graph/dropout.h) of that probability where GPT-2 has it (its own
// default is 0.1): on the embeddings' sum, and on the attention and MLP outputs before each
// residual add; none in eval mode, and none on the attention probabilities (the fused
// attention kernel has no dropout). Embeddings start uniform in +-0.02, the Linear layers
// as nn.Linear. padding: a "lengths" input [batch] (i32) masks the keys past each
// sequence's real length (a right-padded batch; graph/attention.h), whose labels the caller
// sets to ignore_index.
struct Gpt2Config {
  int64_t batch = 8;
  int64_t seq = 128;        // <= context
  int64_t vocab = 50257;
  int64_t context = 1024;   // rows of the position embedding
  int64_t d_model = 768;
  int64_t heads = 12;
  int layers = 12;
  int64_t mlp_ratio = 4;
  DType ids_dtype = DType::I64;
  int64_t ignore_index = -100;
  bool with_loss = true;
  bool padding = false;
  float dropout = 0.0f;  // 0: none, today's model; GPT-2 trains with 0.1
};
ModelOutputs gpt2(Builder& b, const Gpt2Config& c);
// GPT-2 small (124M parameters with the tied head): the defaults above.
Gpt2Config gpt2_small_config();
// A two-layer GPT-2 of width 64 (2 heads, vocabulary 512, context 64) at batch 4, sequence
// 32: the same graph at a size whose steps take milliseconds on the CPU.
Gpt2Config gpt2_tiny_config();

// Convolutional networks (graph/cnn_models.cpp), NCHW: images x [batch, 3, image, image],
// cross_entropy against "labels" [batch] (class indices). Batch norm takes the batch's
// statistics when the model has its loss (training) and the running statistics, a
// "<layer>.stats" [2, C] parameter (mean 0, variance 1), without it (inference).

// A CIFAR ResNet (He et al.'s ResNet-20/32/56: depth 6 n + 2): a 3x3 conv stem, three
// stages of `blocks` basic blocks (two 3x3 conv + batch norm, ReLU between, the input
// added back, ReLU) with width, 2 width, 4 width channels; the first block of stages 2
// and 3 halves H and W (stride 2) and its shortcut is a 1x1 stride-2 conv + batch norm.
// Then a global average pool and a Linear head. Convolutions have no bias (batch norm's
// beta is one).
struct ResNetConfig {
  int64_t batch = 32;
  int64_t image = 32;   // H = W, a multiple of 4
  int64_t width = 16;   // the first stage's channels
  int blocks = 3;       // basic blocks per stage: 3 is ResNet-20
  int64_t classes = 10;
  bool in_place_relu = false;
  bool with_loss = true;
};
ModelOutputs resnet_cifar(Builder& b, const ResNetConfig& c);

// A VGG network: stages of 3x3 convs (padding 1, with bias, each followed by a ReLU),
// each stage closed by a 2x2 stride-2 max pool, channels doubling per stage from `width`
// up to 8 width; then two Linear layers of fc units with ReLUs and the Linear head.
// stages {2, 2, 3, 3, 3} at image 224, width 64, fc 4096, classes 1000 is VGG-16 (138M
// parameters); {1, 1, 2, 2, 2} is VGG-11.
struct VggConfig {
  int64_t batch = 32;
  int64_t image = 32;  // H = W, a multiple of 2^stages
  int64_t width = 64;
  std::vector<int> stages{2, 2, 3, 3, 3};
  int64_t fc = 512;
  int64_t classes = 10;
  bool in_place_relu = false;
  bool with_loss = true;
};
ModelOutputs vgg(Builder& b, const VggConfig& c);

// An ImageNet ResNet (He et al.; torchvision's resnet18 ... resnet152, with the stride of a
// bottleneck block on its 3x3 conv as torchvision puts it): a 7x7 stride-2 conv stem with
// batch norm and ReLU, a 3x3 stride-2 max pool (padding 1), then one stage per entry of
// `blocks` at width, 2 width, 4 width, ... channels, the first block of every stage but the
// first halving H and W (stride 2). A basic block is two 3x3 conv + batch norm with a ReLU
// between; a bottleneck block is 1x1 (to the stage's width), 3x3, 1x1 (to 4x the width),
// each with batch norm, ReLUs between. The block's input is added back, through a 1x1 conv +
// batch norm (projection) where the shapes differ, and a ReLU follows. Then a global average
// pool and the Linear head. Convolutions have no bias.
struct ImageNetResNetConfig {
  int64_t batch = 32;
  int64_t image = 224;  // H = W, a multiple of 2^(stages + 1): 32 for four stages
  int64_t width = 64;   // the first stage's channels (a bottleneck's inner width)
  std::vector<int> blocks{3, 4, 6, 3};  // blocks per stage
  bool bottleneck = true;               // false: basic blocks
  int64_t classes = 1000;
  bool in_place_relu = false;
  bool with_loss = true;
};
ModelOutputs resnet_imagenet(Builder& b, const ImageNetResNetConfig& c);

// The standard networks at 224 x 224 with 1000 classes (the other fields: the defaults).
// Trained parameters (batch norm's running statistics, buffers in PyTorch, left out) equal
// torchvision's: resnet18 11,689,512, resnet50 25,557,032, vgg16 138,357,544.
ImageNetResNetConfig resnet18_config();  // basic blocks {2, 2, 2, 2}
ImageNetResNetConfig resnet50_config();  // bottleneck blocks {3, 4, 6, 3}
VggConfig vgg16_config();                // stages {2, 2, 3, 3, 3}, width 64, fc 4096

// An image network's config (ResNetConfig, VggConfig, ImageNetResNetConfig) at another batch
// and image size.
template <class Config>
Config at_size(Config c, int64_t batch, int64_t image) {
  c.batch = batch;
  c.image = image;
  return c;
}

}  // namespace tg
