#include "graph/builder.h"

#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/shape_inference.h"

namespace tg {

namespace {
Value apply1(Builder& b, OpKind op, std::vector<Value> in, Attrs at = {}) {
  return b.apply(op, in, at);
}
}  // namespace

Value matmul(Builder& b, Value x, Value w, bool trans_a, bool trans_b) {
  Attrs at;
  at.trans_a = trans_a;
  at.trans_b = trans_b;
  return apply1(b, OpKind::matmul, {x, w}, at);
}
Value add(Builder& b, Value x, Value y) { return apply1(b, OpKind::add, {x, y}); }
Value sub(Builder& b, Value x, Value y) { return apply1(b, OpKind::sub, {x, y}); }
Value mul(Builder& b, Value x, Value y) { return apply1(b, OpKind::mul, {x, y}); }
Value scale(Builder& b, Value x, float alpha) {
  Attrs at;
  at.alpha = alpha;
  return apply1(b, OpKind::scale, {x}, at);
}
Value bias_add(Builder& b, Value x, Value bias) { return apply1(b, OpKind::bias_add, {x, bias}); }
Value relu(Builder& b, Value x, bool in_place) {
  Attrs at;
  at.in_place = in_place;
  return apply1(b, OpKind::relu, {x}, at);
}
Value gelu(Builder& b, Value x) { return apply1(b, OpKind::gelu, {x}); }
Value softmax(Builder& b, Value x) { return apply1(b, OpKind::softmax, {x}); }
Value layernorm(Builder& b, Value x, Value gamma, Value beta, float eps) {
  Attrs at;
  at.eps = eps;
  return apply1(b, OpKind::layernorm, {x, gamma, beta}, at);
}
namespace {
Value reduce_over(Builder& b, OpKind op, Value x, int axis) {
  Attrs at;
  at.axis = axis;
  return apply1(b, op, {x}, at);
}
}  // namespace
Value reduce_sum(Builder& b, Value x, int axis) { return reduce_over(b, OpKind::reduce_sum, x, axis); }
Value reduce_mean(Builder& b, Value x, int axis) { return reduce_over(b, OpKind::reduce_mean, x, axis); }
Value broadcast(Builder& b, Value x, int axis, int64_t size) {
  Attrs at;
  at.axis = axis;
  at.size = size;
  return apply1(b, OpKind::broadcast, {x}, at);
}
Value transpose(Builder& b, Value x, Perm perm) {
  Attrs at;
  at.perm = perm;
  for (int d = x.shape.rank; d < kMaxRank; ++d) at.perm[static_cast<size_t>(d)] = d;
  return apply1(b, OpKind::transpose, {x}, at);
}
Value reshape(Builder& b, Value x, Shape shape) {
  Attrs at;
  at.shape = shape;
  return apply1(b, OpKind::reshape, {x}, at);
}
Value mse_loss(Builder& b, Value pred, Value target) { return apply1(b, OpKind::mse_loss, {pred, target}); }
Value padded_mse_loss(Builder& b, Value pred, Value target, Value count) {
  return apply1(b, OpKind::padded_mse_loss, {pred, target, count});
}
Value cross_entropy(Builder& b, Value logits, Value labels, int64_t ignore_index) {
  Attrs at;
  at.ignore_index = ignore_index;
  return apply1(b, OpKind::cross_entropy, {logits, labels}, at);
}
Value embedding(Builder& b, Value table, Value ids) { return apply1(b, OpKind::embedding, {table, ids}); }
Value fill(Builder& b, Shape shape, float value) {
  Attrs at;
  at.shape = shape;
  at.value = value;
  return apply1(b, OpKind::fill, {}, at);
}
Value copy(Builder& b, Value x) { return apply1(b, OpKind::copy, {x}); }
Value cast(Builder& b, Value x, DType to) {
  Attrs at;
  at.to = to;
  return apply1(b, OpKind::cast, {x}, at);
}
Value where(Builder& b, Value cond, Value x, Value y) { return apply1(b, OpKind::where, {cond, x, y}); }
Value masked_fill(Builder& b, Value x, Value mask, float value) {
  Value v = fill(b, Shape{1}, value);
  if (x.dtype != DType::F32) v = cast(b, v, x.dtype);
  return where(b, mask, v, x);
}

ParamInit optimizer_state_init() { return ParamInit{ParamInit::Kind::constant, 0.0f}; }

Value optimizer_state_of_shape(Builder& b, const Shape& shape, const std::string& name) {
  Value like;
  like.shape = shape;
  return b.optimizer_state(like, name);
}

// ---------------------------------------------------------------------------

Value RecordingBuilder::handle(const Graph& g, int id) {
  Value v;
  v.id = id;
  v.shape = g.values[static_cast<size_t>(id)].shape;
  v.dtype = g.values[static_cast<size_t>(id)].dtype;
  return v;
}

bool RecordingBuilder::taken(const std::string& name) {
  names_.sync();
  return names_.taken(name);
}

void RecordingBuilder::rename_output(const Value& v, const std::string& name) {
  names_.sync();
  ValueInfo& value = g_.values[static_cast<size_t>(v.id)];
  Node& node = g_.nodes[static_cast<size_t>(value.producer)];
  const std::string old_node = node.name, old_value = value.name;
  node.name = name;
  value.name = name;
  names_.node_renamed(value.producer, old_node);
  names_.value_renamed(v.id, old_value);
}

std::string RecordingBuilder::unique_name(const std::string& base) {
  names_.sync();
  std::string name = base;
  while (names_.taken(name)) name = base + "_" + std::to_string(++counter_);
  return name;
}

Value RecordingBuilder::input(const std::string& name, const Shape& shape, DType dtype) {
  names_.sync();
  if (names_.find_value(name) >= 0) graph_error("input {}: a value with this name already exists; names must be unique", quote_name(name));
  ValueInfo v;
  v.name = name;
  v.shape = shape;
  v.dtype = dtype;
  v.role = Role::input;
  return handle(g_, g_.add_value(v));
}

Value RecordingBuilder::parameter(const std::string& name, const Shape& shape, ParamInit init, DType dtype) {
  names_.sync();
  if (names_.find_value(name) >= 0)
    graph_error("parameter {}: a value with this name already exists; names must be unique", quote_name(name));
  ValueInfo v;
  v.name = name;
  v.shape = shape;
  v.dtype = dtype;
  v.role = Role::parameter;
  v.init = init;
  return handle(g_, g_.add_value(v));
}

Value RecordingBuilder::optimizer_state(const Value& param, const std::string& name) {
  return training_state(name, param.shape, optimizer_state_init());
}

Value RecordingBuilder::training_state(const std::string& name, const Shape& shape, ParamInit init, DType dtype) {
  names_.sync();
  const int existing = names_.find_value(name);
  if (existing >= 0) return handle(g_, existing);
  ValueInfo v;
  v.name = name;
  v.shape = shape;
  v.role = Role::optimizer_state;
  v.init = std::move(init);
  v.dtype = dtype;
  return handle(g_, g_.add_value(v));
}

Value RecordingBuilder::apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs,
                              const std::string& name) {
  const std::string node_name = unique_name(name.empty() ? std::string("n") + std::to_string(g_.nodes.size()) : name);
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  shapes.reserve(inputs.size());
  dtypes.reserve(inputs.size());
  Node n;
  n.name = node_name;
  n.op = op;
  n.attrs = attrs;
  for (const Value& v : inputs) {
    if (v.id < 0 || v.id >= static_cast<int>(g_.values.size()))
      graph_error("{} {}: input is not a value of this graph (id {})", op_name(op), quote_name(node_name), v.id);
    shapes.push_back(g_.values[static_cast<size_t>(v.id)].shape);
    dtypes.push_back(g_.values[static_cast<size_t>(v.id)].dtype);
    n.inputs.push_back(v.id);
  }
  const std::vector<Shape> out_shapes = infer_shapes(op, shapes, attrs, quote_name(node_name));  // the name as messages show it
  const std::vector<DType> out_dtypes = infer_dtypes(op, dtypes, attrs, quote_name(node_name));
  if (out_shapes.empty()) {
    g_.add_node(std::move(n));
    return Value{};
  }
  for (size_t k = 0; k < out_shapes.size(); ++k) {
    ValueInfo out;
    // A node's output carries the node's name; a second output (fused ops) "<name>:1".
    out.name = k == 0 ? node_name : second_output_name(node_name);
    out.shape = out_shapes[k];
    out.dtype = out_dtypes[k];
    out.role = default_role_;
    n.outputs.push_back(g_.add_value(out));
  }
  const int first = n.outputs[0];
  g_.add_node(std::move(n));
  return handle(g_, first);
}

bool RecordingBuilder::is_output(int id) {
  if (g_.outputs.size() < outputs_seen_) {
    outputs_.clear();
    outputs_seen_ = 0;
  }
  for (; outputs_seen_ < g_.outputs.size(); ++outputs_seen_) outputs_.insert(g_.outputs[outputs_seen_]);
  return outputs_.count(id) > 0;
}

void RecordingBuilder::mark_output(const Value& v) {
  if (is_output(v.id)) return;
  g_.outputs.push_back(v.id);
  ValueInfo& info = g_.values[static_cast<size_t>(v.id)];
  if (info.role == Role::temporary || info.role == Role::activation) info.role = Role::output;
}

namespace {
Value conv_apply(Builder& b, OpKind op, std::vector<Value> in, const ConvAttr& conv) {
  Attrs at;
  at.conv = conv;
  return b.apply(op, std::move(in), at);
}
}  // namespace

Value conv2d(Builder& b, Value x, Value w, const ConvAttr& conv) { return conv_apply(b, OpKind::conv2d, {x, w}, conv); }

Value conv2d_bias(Builder& b, Value x, Value w, Value bias, const ConvAttr& conv) {
  const Value y = conv2d(b, x, w, conv);
  if (bias.shape.rank != 1 || bias.shape[0] != y.shape[1])
    graph_error("conv2d_bias: bias {} does not match the {} output channels of {}; the bias must be [{}]",
                bias.shape.str(), y.shape[1], y.shape.str(), y.shape[1]);
  // [K] -> [K, P] -> [K, P, Q] -> [N, K, P, Q]
  const Value plane = broadcast(b, broadcast(b, bias, 1, y.shape[2]), 2, y.shape[3]);
  return add(b, y, broadcast(b, plane, 0, y.shape[0]));
}

Value max_pool2d(Builder& b, Value x, const ConvAttr& window) { return conv_apply(b, OpKind::max_pool2d, {x}, window); }
Value avg_pool2d(Builder& b, Value x, const ConvAttr& window) { return conv_apply(b, OpKind::avg_pool2d, {x}, window); }

Value global_avg_pool(Builder& b, Value x) {
  if (x.shape.rank != 4) graph_error("global_avg_pool: x is {}; it must be NCHW [N, C, H, W]", x.shape.str());
  const Value m = reduce_mean(b, reduce_mean(b, x, 3), 2);
  return reshape(b, m, Shape{x.shape[0], x.shape[1], 1, 1});
}

Value concat(Builder& b, const std::vector<Value>& xs, int axis) {
  Attrs at;
  at.axis = axis;
  return b.apply(OpKind::concat, xs, at);
}

Value slice(Builder& b, Value x, int axis, int64_t start, int64_t size) {
  Attrs at;
  at.axis = axis;
  at.start = start;
  at.size = size;
  return b.apply(OpKind::slice, {x}, at);
}

Value attention(Builder& b, Value q, Value k, Value v, int64_t heads, float scale, bool causal, const Value& lengths) {
  Attrs a;
  a.heads.count = heads;
  a.alpha = scale;
  a.causal = causal;
  if (lengths.valid()) return b.apply(OpKind::attention, {q, k, v, lengths}, a);
  return b.apply(OpKind::attention, {q, k, v}, a);
}

Value batch_norm(Builder& b, Value x, Value gamma, Value beta, float eps) {
  Attrs at;
  at.eps = eps;
  return b.apply(OpKind::batch_norm, {x, gamma, beta}, at);
}

Value batch_norm_inference(Builder& b, Value x, Value gamma, Value beta, Value stats, float eps) {
  Attrs at;
  at.eps = eps;
  return b.apply(OpKind::batch_norm_inference, {x, gamma, beta, stats}, at);
}

void batch_norm_stats_update(Builder& b, Value stats, Value x, float momentum) {
  Attrs at;
  at.momentum = momentum;
  b.apply(OpKind::batch_norm_stats_update, {stats, x}, at);
}

}  // namespace tg
