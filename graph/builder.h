#pragma once
// The one idea: a model is a function of a Builder. The recording builder
// (static) appends nodes to a Graph; the eager builder (dynamic) runs each op at
// once. Gradient rules are written against Builder too, so both executors share them.
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/attrs.h"
#include "graph/graph.h"
#include "graph/name_index.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// A handle to a value inside some builder. `id` means what the builder says it
// means (a graph value id for the recording builder, a tensor slot for the
// eager one); shape and dtype are always known on the host.
struct Value {
  int id = -1;
  Shape shape;
  DType dtype = DType::F32;
  bool valid() const { return id >= 0; }
};

class Builder {
 public:
  virtual ~Builder() = default;
  // A value the user feeds every iteration (data, labels), in `dtype`.
  virtual Value input(const std::string& name, const Shape& shape, DType dtype = DType::F32) = 0;
  // A persistent trainable value, in `dtype`.
  virtual Value parameter(const std::string& name, const Shape& shape, ParamInit init = {},
                          DType dtype = DType::F32) = 0;
  // The only way to add a node. Infers the output shape (throwing GraphError on
  // a mismatch). Update ops return an invalid Value.
  virtual Value apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs = {},
                      const std::string& name = "") = 0;
  // Marks a value as something the user reads back.
  virtual void mark_output(const Value& v) = 0;
  // The persistent optimizer-state buffer (momentum) for a parameter, created on
  // first use with zeros.
  virtual Value optimizer_state(const Value& param, const std::string& name) = 0;
  // Persistent optimizer state of its own shape, not a parameter's (the loss scaler's,
  // graph/loss_scale.h; dropout's rng state, i64, graph/dropout.h), created on first use with `init`.
  virtual Value training_state(const std::string& name, const Shape& shape, ParamInit init,
                               DType dtype = DType::F32) = 0;
  // Eval mode, PyTorch's module.eval(): the model is built for inference, so dropout is the
  // identity and adds no node (graph/dropout.h). build_inference_graph and the dynamic
  // executor's inference runs build in it; training steps never do.
  virtual bool eval() const { return false; }
};

// The init every Builder gives optimizer state: zeros, so that the first update
// starts with no momentum.
ParamInit optimizer_state_init();
// Optimizer state of its own shape, f32 (AdamW's step count [1]), created on first use
// with zeros: Builder::optimizer_state reads only its param's shape and dtype.
Value optimizer_state_of_shape(Builder& b, const Shape& shape, const std::string& name);

// Typed helpers over Builder::apply.
Value matmul(Builder& b, Value x, Value w, bool trans_a = false, bool trans_b = false);
Value add(Builder& b, Value x, Value y);
Value sub(Builder& b, Value x, Value y);
Value mul(Builder& b, Value x, Value y);
Value scale(Builder& b, Value x, float alpha);
Value bias_add(Builder& b, Value x, Value bias);
Value relu(Builder& b, Value x, bool in_place = false);
Value gelu(Builder& b, Value x);
Value softmax(Builder& b, Value x);
Value layernorm(Builder& b, Value x, Value gamma, Value beta, float eps = 1e-5f);
Value reduce_sum(Builder& b, Value x, int axis);
Value reduce_mean(Builder& b, Value x, int axis);
Value broadcast(Builder& b, Value x, int axis, int64_t size);
Value transpose(Builder& b, Value x, Perm perm);
Value reshape(Builder& b, Value x, Shape shape);
Value mse_loss(Builder& b, Value pred, Value target);
// mse_loss over the first count[0] elements (row-major) of pred and target; the rest
// is padding that neither the loss nor the gradient sees. count is a [1] input
// holding an integer in [1, numel] (the bucket shape strategy feeds it).
Value padded_mse_loss(Builder& b, Value pred, Value target, Value count);
// labels: i32, i64 or f32 class indices; rows labelled ignore_index count nowhere.
Value cross_entropy(Builder& b, Value logits, Value labels, int64_t ignore_index = -100);
// Rows of table[V, D] picked by ids (i32 or i64, of up to 3 dims): [..ids, D].
Value embedding(Builder& b, Value table, Value ids);
Value fill(Builder& b, Shape shape, float value);
Value copy(Builder& b, Value x);
// x in dtype `to`: rounded to nearest even when it narrows (graph/float_formats.h).
Value cast(Builder& b, Value x, DType to);
// cond != 0 ? x : y, elementwise over numpy-broadcast shapes (graph/broadcast.h); cond i32,
// i64 or f32 (nonzero is true), x and y one float dtype, which the result takes.
Value where(Builder& b, Value cond, Value x, Value y);
// x with `value` wherever mask != 0 (torch's masked_fill): where(mask, value, x), the value
// a [1] constant in x's dtype.
Value masked_fill(Builder& b, Value x, Value mask, float value);
// Convolutional networks, NCHW (graph/conv.h). conv2d_bias adds a per-channel bias [K] to
// conv2d's output through broadcast and add, so its gradient is reduce_sum's and no op of
// its own; global_avg_pool is [N,C,H,W] -> [N,C,1,1] as two reduce_means.
Value conv2d(Builder& b, Value x, Value w, const ConvAttr& conv);
Value conv2d_bias(Builder& b, Value x, Value w, Value bias, const ConvAttr& conv);
Value max_pool2d(Builder& b, Value x, const ConvAttr& window);
Value avg_pool2d(Builder& b, Value x, const ConvAttr& window);
Value global_avg_pool(Builder& b, Value x);
// Batch normalization of [N, C, ...] per channel: with the batch's statistics (training), or
// with stats [2, C] (the running mean, then the running variance: inference).
Value batch_norm(Builder& b, Value x, Value gamma, Value beta, float eps = 1e-5f);
Value batch_norm_inference(Builder& b, Value x, Value gamma, Value beta, Value stats, float eps = 1e-5f);
// In place: stats [2, C] = (1 - momentum) stats + momentum (mean, unbiased variance) of x's
// channels, as PyTorch's BatchNorm updates its running statistics in training.
void batch_norm_stats_update(Builder& b, Value stats, Value x, float momentum = 0.1f);
// Joins the values along `axis` (every other dim equal): channels are axis 1 of NCHW.
Value concat(Builder& b, const std::vector<Value>& xs, int axis);
// x[.., start : start + size, ..] along `axis`. No gradient rule yet: it is concat's gradient.
Value slice(Builder& b, Value x, int axis, int64_t start, int64_t size);
// Fused scaled-dot-product attention over head views q, k, v [B, S, heads * dh]
// (graph/attention.h): softmax(scale q k^T, causal: query i sees keys 0..i) v per head, the
// result a head view of q's shape, never storing the S x S scores.
// lengths (i32 or i64 [B], optional): the padding mask, sequence b's keys at positions >=
// lengths[b] masked (graph/attention.h).
Value attention(Builder& b, Value q, Value k, Value v, int64_t heads, float scale, bool causal = false,
                const Value& lengths = Value{});

// Appends nodes to a Graph, inferring shapes as it goes. It indexes the graph's names
// (graph/name_index.h): what is appended to the graph meanwhile is picked up, but a name
// changed in place while recording goes through rename_output.
class RecordingBuilder : public Builder {
 public:
  explicit RecordingBuilder(Graph& g) : g_(g), names_(g) {}
  Value input(const std::string& name, const Shape& shape, DType dtype = DType::F32) override;
  Value parameter(const std::string& name, const Shape& shape, ParamInit init = {},
                  DType dtype = DType::F32) override;
  Value apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs = {},
              const std::string& name = "") override;
  void mark_output(const Value& v) override;
  Value optimizer_state(const Value& param, const std::string& name) override;
  Value training_state(const std::string& name, const Shape& shape, ParamInit init,
                       DType dtype = DType::F32) override;
  bool eval() const override { return eval_; }
  void set_eval(bool on) { eval_ = on; }

  // The role given to values created by apply() (the autodiff switches this to
  // gradient/temporary while it records the backward pass).
  void set_default_role(Role r) { default_role_ = r; }
  Graph& graph() { return g_; }
  static Value handle(const Graph& g, int id);
  // Whether a value or node of the graph has this name.
  bool taken(const std::string& name);
  // Value v and the node producing it (it must have one) take the name `name`.
  void rename_output(const Value& v, const std::string& name);

 private:
  std::string unique_name(const std::string& base);
  bool is_output(int id);
  Graph& g_;
  NameIndex names_;
  // The graph's outputs as a set, and how many of g_.outputs it holds.
  std::unordered_set<int> outputs_;
  size_t outputs_seen_ = 0;
  Role default_role_ = Role::temporary;
  int counter_ = 0;
  bool eval_ = false;
};

}  // namespace tg
