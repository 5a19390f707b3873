#include "static/shape_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "graph/builder.h"
#include "graph/errors.h"

namespace tg {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

constexpr const char* kCount = "__count";

// Forwards everything to the builder it wraps, except mse_loss, which it records
// as padded_mse_loss over the real elements (see shape_strategy.h). cross_entropy
// masks itself: its padded labels are ignore_index (ShapeStrategyRunner::pad_feeds).
class MaskingBuilder final : public Builder {
 public:
  explicit MaskingBuilder(Builder& inner) : b_(inner) {}
  Value input(const std::string& name, const Shape& shape, DType dtype) override { return b_.input(name, shape, dtype); }
  Value parameter(const std::string& name, const Shape& shape, ParamInit init, DType dtype) override {
    return b_.parameter(name, shape, init, dtype);
  }
  Value apply(OpKind op, const std::vector<Value>& in, const Attrs& attrs, const std::string& name) override {
    if (op != OpKind::mse_loss) return b_.apply(op, in, attrs, name);
    if (masked_) graph_error("bucket strategy: the model has more than one mse_loss; only one can be masked");
    masked_ = true;
    return b_.apply(OpKind::padded_mse_loss, {in[0], in[1], b_.input(kCount, Shape{1})}, attrs, name);
  }
  void mark_output(const Value& v) override { b_.mark_output(v); }
  Value optimizer_state(const Value& param, const std::string& name) override { return b_.optimizer_state(param, name); }
  Value training_state(const std::string& name, const Shape& shape, ParamInit init, DType dtype) override {
    return b_.training_state(name, shape, std::move(init), dtype);
  }
  bool eval() const override { return b_.eval(); }

 private:
  Builder& b_;
  bool masked_ = false;
};

}  // namespace

ModelFn masked_model(const ModelFn& model) {
  return [model](Builder& b) {
    MaskingBuilder mb(b);
    return model(mb);
  };
}

const char* shape_strategy_name(ShapeStrategy s) {
  switch (s) {
    case ShapeStrategy::recapture: return "recapture";
    case ShapeStrategy::cache: return "cache";
    case ShapeStrategy::bucket: return "bucket";
    case ShapeStrategy::update: return "update";
  }
  return "?";
}

bool parse_shape_strategy(const std::string& s, ShapeStrategy& out) {
  for (ShapeStrategy v : {ShapeStrategy::recapture, ShapeStrategy::cache, ShapeStrategy::bucket, ShapeStrategy::update})
    if (s == shape_strategy_name(v)) {
      out = v;
      return true;
    }
  return false;
}

std::vector<float> pad_to(const std::vector<float>& src, const Shape& from, const Shape& to, float fill) {
  if (from.rank != to.rank || static_cast<int64_t>(src.size()) != from.numel())
    throw std::invalid_argument(fmt::format("pad_to: {} elements of shape {} cannot be padded to {}", src.size(),
                                            from.str(), to.str()));
  for (int d = 0; d < from.rank; ++d)
    if (from[d] > to[d]) throw std::invalid_argument(fmt::format("pad_to: {} is larger than {} in dim {}", from.str(), to.str(), d));
  std::vector<float> out(static_cast<size_t>(to.numel()), fill);
  const int64_t inner = from.rank > 0 ? from.last() : 1;
  const int64_t rows = from.rows();
  for (int64_t r = 0; r < rows; ++r) {
    // Row index r of `from` -> the offset of the same multi-index in `to`.
    int64_t rem = r, off = 0, stride = to.last();
    for (int d = from.rank - 2; d >= 0; --d) {
      off += (rem % from[d]) * stride;
      rem /= from[d];
      stride *= to[d];
    }
    std::copy_n(src.begin() + r * inner, inner, out.begin() + off);
  }
  return out;
}

std::vector<float> crop_to(const std::vector<float>& src, const Shape& from, const Shape& to) {
  if (from.rank != to.rank || static_cast<int64_t>(src.size()) != from.numel())
    throw std::invalid_argument(fmt::format("crop_to: {} elements of shape {} cannot be cropped to {}", src.size(),
                                            from.str(), to.str()));
  std::vector<float> out(static_cast<size_t>(to.numel()));
  const int64_t inner = to.rank > 0 ? to.last() : 1;
  for (int64_t r = 0; r < to.rows(); ++r) {
    int64_t rem = r, off = 0, stride = from.last();
    for (int d = to.rank - 2; d >= 0; --d) {
      off += (rem % to[d]) * stride;
      rem /= to[d];
      stride *= from[d];
    }
    std::copy_n(src.begin() + off, inner, out.begin() + r * inner);
  }
  return out;
}

ShapeStrategyRunner::ShapeStrategyRunner(ShapedModelFn model, ShapeStrategyOptions opt)
    : model_(std::move(model)), opt_(std::move(opt)) {
  if (!model_) throw std::invalid_argument("ShapeStrategyRunner: the model factory is empty");
  if (!opt_.compile.backend) opt_.compile.backend = std::shared_ptr<Backend>(make_cpu_backend());
  params_ = opt_.compile.params ? opt_.compile.params
                                : std::make_shared<ParameterStore>(opt_.compile.backend, opt_.compile.seed);
  opt_.compile.params = params_;
  if (opt_.strategy == ShapeStrategy::bucket && opt_.buckets.empty())
    for (int64_t b = 1; b <= (int64_t{1} << 40); b *= 2) opt_.buckets.push_back(b);
  if (!std::is_sorted(opt_.buckets.begin(), opt_.buckets.end()))
    throw std::invalid_argument("ShapeStrategyRunner: buckets must be given in ascending order");
  if (opt_.cache_capacity == 0) throw std::invalid_argument("ShapeStrategyRunner: cache_capacity must be >= 1");
}

ShapeStrategyRunner::~ShapeStrategyRunner() = default;

int64_t ShapeStrategyRunner::bucket_for(int64_t extent) const {
  for (int64_t b : opt_.buckets)
    if (b >= extent) return b;
  throw std::invalid_argument(fmt::format("bucket strategy: extent {} is larger than the largest bucket {}; add a "
                                          "bucket of at least {}",
                                          extent, opt_.buckets.empty() ? 0 : opt_.buckets.back(), extent));
}

const ShapeStrategyRunner::Shapes& ShapeStrategyRunner::real_shapes(int64_t extent) {
  auto it = shapes_.find(extent);
  if (it != shapes_.end()) return it->second;
  Graph g;
  RecordingBuilder b(g);
  const ModelOutputs out = model_(extent)(b);
  Shapes s;
  for (int v : g.values_with_role(Role::input)) s.inputs[g.values[static_cast<size_t>(v)].name] = g.values[static_cast<size_t>(v)].shape;
  s.prediction = out.prediction.shape;
  return shapes_[extent] = s;
}

std::map<std::string, Shape> ShapeStrategyRunner::input_shapes(int64_t extent) { return real_shapes(extent).inputs; }

CompiledPlan ShapeStrategyRunner::build(int64_t key, bool instantiate) {
  CompileOptions co = opt_.compile;
  co.instantiate = instantiate;
  if (opt_.strategy != ShapeStrategy::bucket) return compile(model_(key), co);
  // Padding must not leak into real positions, and must be a suffix of every
  // tensor for padded_mse_loss to see the real elements first.
  Graph small, big;
  ModelOutputs small_out, big_out;
  try {
    RecordingBuilder b1(small), b2(big);
    small_out = model_(1)(b1);
    big_out = model_(2)(b2);
  } catch (const std::exception& e) {
    // An extent that is not a batch or a length (an image size, which must be a multiple of
    // something) has no model at 1 and 2; such an extent is not padded by adding rows.
    graph_error("bucket strategy: the model cannot be built at extents 1 and 2, which bucket compares to find the "
                "padded axis ({}); bucket pads a batch or a sequence; use the cache or update strategy", e.what());
  }
  if (small.nodes.size() != big.nodes.size())
    graph_error("bucket strategy: the model records {} ops at extent 1 but {} at extent 2; padding needs the same "
                "graph at every extent; use the cache or update strategy", small.nodes.size(), big.nodes.size());
  // The padded axis: the one axis along which the inputs at extent 1 and 2 differ.
  bool has_mse = false;
  for (const Node& n : small.nodes) has_mse = has_mse || n.op == OpKind::mse_loss;
  pad_axis_ = -1;
  for (int v : small.values_with_role(Role::input)) {
    const ValueInfo& vi = small.values[static_cast<size_t>(v)];
    const int w = big.find_value(vi.name);
    const Shape* other = w < 0 ? nullptr : &big.values[static_cast<size_t>(w)].shape;
    int differ = other && other->rank == vi.shape.rank ? 0 : 2, axis = -1;
    for (int d = 0; differ < 2 && d < vi.shape.rank; ++d)
      if (vi.shape[d] != (*other)[d]) {
        ++differ;
        axis = d;
      }
    if (differ == 0) continue;
    if (differ > 1 || (pad_axis_ >= 0 && axis != pad_axis_) || (has_mse && axis != 0))
      graph_error("bucket strategy: input {} does not vary along {} only ({} at extent 1); bucket pads one axis of "
                  "the inputs{}; use the cache or update strategy for this model", quote_name(vi.name),
                  has_mse ? "its leading axis" : "the axis the other inputs vary along", vi.shape.str(),
                  has_mse ? " (with an mse loss, the leading one: a batch)" : "");
    pad_axis_ = axis;
  }
  if (pad_axis_ < 0) pad_axis_ = 0;
  auto leading_only = [](const Shape& a, const Shape& b) {
    if (a.rank != b.rank || a.rank == 0) return false;
    for (int d = 1; d < a.rank; ++d)
      if (a[d] != b[d]) return false;
    return true;
  };
  if (has_mse && small_out.loss.valid() && !leading_only(small_out.prediction.shape, big_out.prediction.shape))
    graph_error("bucket strategy: the prediction {} does not vary in its leading axis only; the loss could not "
                "tell the padding from the real rows; use the cache or update strategy", small_out.prediction.shape.str());
  // cross_entropy's labels are padded with its ignore_index, so that padded rows count nowhere:
  // they must be an input, reshaped at most.
  pad_fill_.clear();
  for (const Node& n : small.nodes) {
    if (n.op != OpKind::cross_entropy) continue;
    int v = n.inputs[1];
    while (small.values[static_cast<size_t>(v)].producer >= 0) {
      const Node& p = small.nodes[static_cast<size_t>(small.values[static_cast<size_t>(v)].producer)];
      if (p.op != OpKind::reshape) break;
      v = p.inputs[0];
    }
    const ValueInfo& labels = small.values[static_cast<size_t>(v)];
    if (labels.role != Role::input)
      graph_error("bucket strategy: the labels of cross_entropy {} are computed ({}); bucket pads them with "
                  "ignore_index, so they must be an input (reshaped at most); use the cache or update strategy",
                  quote_name(n.name), quote_name(labels.name));
    pad_fill_[labels.name] = static_cast<float>(n.attrs.ignore_index);
  }
  for (size_t n = 0; n < small.nodes.size(); ++n) {
    const Node& ns = small.nodes[n];
    const Node& nb = big.nodes[n];
    const Shape& xs = small.values[static_cast<size_t>(ns.inputs.empty() ? ns.outputs[0] : ns.inputs[0])].shape;
    const Shape& xb = big.values[static_cast<size_t>(nb.inputs.empty() ? nb.outputs[0] : nb.inputs[0])].shape;
    const bool softmax_axis = ns.op == OpKind::softmax && xs.last() != xb.last();
    const bool reduce_axis = (ns.op == OpKind::reduce_sum || ns.op == OpKind::reduce_mean) && !ns.inputs.empty() &&
                             xs.rank > 0 && xs[(ns.attrs.axis % xs.rank + xs.rank) % xs.rank] !=
                                                xb[(ns.attrs.axis % xb.rank + xb.rank) % xb.rank];
    if (softmax_axis || reduce_axis)
      graph_error("bucket strategy: {} {} {} over the variable axis, so padding would change the real results "
                  "(attention over padded keys needs a key mask); use the cache or update strategy for this model",
                  op_name(ns.op), ns.name, softmax_axis ? "normalizes" : "reduces");
    // Training batch norm takes its statistics over every axis but the channels': whichever
    // axis varies, the padding would count in every real element's mean and variance.
    if (ns.op == OpKind::batch_norm && xs != xb)
      graph_error("bucket strategy: batch_norm {} normalizes over the variable axis with the batch's statistics, so "
                  "the padding would change every real result; use the cache or update strategy, or bucket the "
                  "inference graph (batch norm on its running statistics)", ns.name);
    // Fused attention over a padded sequence: real queries must not see the padded keys, which
    // the key lengths (graph/attention.h) or causal (keys after the query) keep out.
    const bool attention_over_axis = ns.op == OpKind::attention && xs.rank == 3 && xs[1] != xb[1];
    if (attention_over_axis && !ns.attrs.causal && !op_has_key_lengths(ns.op, static_cast<int>(ns.inputs.size())))
      graph_error("bucket strategy: attention {} attends over the variable axis without a key mask, so real queries "
                  "would see padded keys; give it key lengths (graph/attention.h) or use the cache or update strategy",
                  ns.name);
  }
  return compile(masked_model(model_(key)), co);
}

Feeds ShapeStrategyRunner::pad_feeds(const Feeds& feeds, int64_t extent, const CompiledPlan& plan) {
  const Shapes& real = real_shapes(extent);
  const Graph& g = *plan.graph;
  Feeds out;
  for (const auto& [name, data] : feeds) {
    const int id = g.find_value(name);
    auto it = real.inputs.find(name);
    if (it == real.inputs.end()) throw std::invalid_argument(fmt::format("feed {} is not an input of the model", quote_name(name)));
    if (id < 0) continue;  // an input the plan pruned (the loss's target in inference): ignored, as plan.run does
    auto fill = pad_fill_.find(name);
    out[name] = pad_to(data, it->second, g.values[static_cast<size_t>(id)].shape,
                       fill == pad_fill_.end() ? 0.0f : fill->second);
  }
  if (g.find_value(kCount) >= 0) {
    // The count is an f32 input: integers are exact in it up to 2^24.
    const int64_t real_n = real.prediction.numel();
    if (real_n > (int64_t{1} << 24))
      throw std::invalid_argument(fmt::format("bucket strategy: the loss has {} real elements at extent {}, more than "
                                              "the 2^24 its f32 count holds exactly; use the cache or update strategy",
                                              real_n, extent));
    out[kCount] = {static_cast<float>(real_n)};
  }
  return out;
}

void ShapeStrategyRunner::evict() {
  auto over = [&] {
    return plans_.size() > opt_.cache_capacity || (opt_.cache_bytes > 0 && plans_.size() > 1 && cached_bytes() > opt_.cache_bytes);
  };
  while (over()) plans_.pop_back();  // never the front: that is the plan about to run
}

ShapeStepReport ShapeStrategyRunner::step(int64_t extent, const Feeds& feeds) {
  if (extent < 1) throw std::invalid_argument(fmt::format("shape strategy: extent {} must be >= 1", extent));
  const auto t0 = Clock::now();
  ShapeStepReport r;
  r.extent = extent;
  const bool bucket = opt_.strategy == ShapeStrategy::bucket;
  const int64_t key = bucket ? bucket_for(extent) : extent;
  r.padded_extent = key;

  auto found = std::find_if(plans_.begin(), plans_.end(), [&](const Entry& e) { return e.key == key; });
  if (found != plans_.end()) {
    r.cache_hit = true;
    plans_.splice(plans_.begin(), plans_, found);
  } else {
    const auto tc = Clock::now();
    const bool cuda_graph = opt_.compile.backend->kind() == DeviceKind::cuda && opt_.compile.use_cuda_graph;
    const bool try_update = opt_.strategy == ShapeStrategy::update && cuda_graph && !plans_.empty();
    // recapture frees the old plan first, so that its peak memory is one plan's.
    if (opt_.strategy == ShapeStrategy::recapture) plans_.clear();
    CompiledPlan p = build(key, !try_update);
    if (try_update) r.graph_updated = p.exec->update_from(*plans_.front().plan.exec);
    if (opt_.strategy == ShapeStrategy::update) plans_.clear();
    plans_.push_front({key, std::move(p)});
    r.compiled = true;
    r.compile_ms = ms_since(tc);
    evict();
  }
  current_ = &plans_.front();
  current_extent_ = extent;
  CompiledPlan& plan = current_->plan;
  const Feeds padded = bucket ? pad_feeds(feeds, extent, plan) : Feeds{};
  const Feeds& use = bucket ? padded : feeds;
  if (plan.loss >= 0) {
    r.loss = plan.step(use);
  } else {
    plan.run(use);
    plan.exec->synchronize();
  }
  if (bucket) {
    const Shapes& real = real_shapes(extent);
    int64_t real_n = 0, pad_n = 0;
    for (const auto& [name, s] : real.inputs) {
      const int id = plan.graph->find_value(name);
      if (id < 0) continue;  // pruned by the plan (the loss's target in inference)
      real_n += s.numel();
      pad_n += plan.graph->values[static_cast<size_t>(id)].shape.numel();
    }
    r.padding_waste = pad_n > 0 ? 1.0 - static_cast<double>(real_n) / static_cast<double>(pad_n) : 0.0;
  }
  r.graphs_cached = plans_.size();
  r.cached_bytes = cached_bytes();
  r.iteration_ms = ms_since(t0);
  return r;
}

std::vector<float> ShapeStrategyRunner::prediction() const {
  if (!current_) throw std::logic_error("ShapeStrategyRunner::prediction: no iteration has run yet");
  const CompiledPlan& p = current_->plan;
  std::vector<float> v = p.read(p.prediction);
  if (opt_.strategy != ShapeStrategy::bucket) return v;
  auto it = shapes_.find(current_extent_);
  const Shape& padded = p.graph->values[static_cast<size_t>(p.prediction)].shape;
  bool apart = padded.rank == it->second.prediction.rank;  // only the padded axis differs: a corner crops it
  for (int d = 0; apart && d < padded.rank; ++d) apart = d == pad_axis_ || padded[d] == it->second.prediction[d];
  if (!apart)
    throw std::logic_error(fmt::format("ShapeStrategyRunner::prediction: the inputs were padded along axis {}, and "
                                       "the prediction {} does not keep that axis apart; read it at the padded shape "
                                       "through the plan, or use another strategy", pad_axis_, padded.str()));
  return crop_to(v, p.graph->values[static_cast<size_t>(p.prediction)].shape, it->second.prediction);
}

std::vector<float> ShapeStrategyRunner::parameter(const std::string& name) const {
  if (!current_) throw std::logic_error("ShapeStrategyRunner::parameter: no iteration has run yet");
  return current_->plan.read(name);
}

size_t ShapeStrategyRunner::graphs_cached() const { return plans_.size(); }

int64_t ShapeStrategyRunner::cached_bytes() const {
  int64_t b = 0;
  for (const Entry& e : plans_) b += e.plan.exec->device_bytes();
  return b;
}

}  // namespace tg
