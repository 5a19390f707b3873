#include "graph/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "graph/errors.h"
#include "graph/quote.h"

namespace tg {

std::vector<std::vector<int>> gradient_buckets(const std::vector<Shape>& shapes, int64_t bucket_bytes) {
  if (bucket_bytes <= 0)
    throw std::invalid_argument(fmt::format(
        "data parallel: bucket_bytes = {}; give a bucket size of at least one byte (DDP's default is 25 MiB)",
        bucket_bytes));
  std::vector<std::vector<int>> buckets;
  std::vector<int> open;
  int64_t bytes = 0;
  for (size_t i = shapes.size(); i-- > 0;) {
    open.push_back(static_cast<int>(i));
    bytes += shapes[i].numel() * static_cast<int64_t>(sizeof(float));
    if (bytes >= bucket_bytes) {
      buckets.push_back(std::move(open));
      open.clear();
      bytes = 0;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  return buckets;
}

namespace {

// One flat bucket from its flat gradients. The dynamic executor applies ops of at most
// kMaxOpInputs inputs, so more are joined in a tree of concats, each level one more copy.
// The tree's width is its own constant: the bucket graphs do not move with the op table.
constexpr size_t kJoinGroup = 6;
static_assert(kJoinGroup <= static_cast<size_t>(kMaxOpInputs), "the dynamic executor applies each concat");

Value join(Builder& b, std::vector<Value> parts, const std::string& name) {
  Attrs along_0;
  along_0.axis = 0;
  while (parts.size() > 1) {
    std::vector<Value> level;
    for (size_t i = 0; i < parts.size(); i += kJoinGroup) {
      const std::vector<Value> group(parts.begin() + static_cast<std::ptrdiff_t>(i),
                                     parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), i + kJoinGroup)));
      const bool last = parts.size() <= kJoinGroup;
      level.push_back(group.size() == 1 ? group[0] : b.apply(OpKind::concat, group, along_0, last ? name : ""));
    }
    parts = std::move(level);
  }
  return parts[0];
}

}  // namespace

GradientReducer::GradientReducer(Builder& b, const std::vector<Value>& params, const std::vector<std::string>& names,
                                 const DataParallelOptions& opt)
    : b_(b), params_(params), names_(names), grads_(params.size()), reduced_(params.size()) {
  if (names_.size() != params_.size())
    throw std::invalid_argument(fmt::format("GradientReducer: {} parameters but {} names", params_.size(), names_.size()));
  std::vector<Shape> shapes;
  for (const Value& p : params_) {
    if (p.dtype != DType::F32)
      graph_error("data parallel: parameter {} is {}; gradients are reduced in f32, the master weights' dtype",
                  quote_name(names_[shapes.size()]), dtype_name(p.dtype));
    shapes.push_back(p.shape);
  }
  buckets_ = gradient_buckets(shapes, opt.bucket_bytes);
  bucket_of_.resize(params_.size());
  for (size_t k = 0; k < buckets_.size(); ++k) {
    waiting_.push_back(static_cast<int>(buckets_[k].size()));
    for (int p : buckets_[k]) bucket_of_[static_cast<size_t>(p)] = static_cast<int>(k);
  }
}

void GradientReducer::ready(size_t i, const Value& grad) {
  if (i >= params_.size()) throw std::logic_error(fmt::format("GradientReducer::ready: no parameter {}", i));
  grads_[i] = grad;
  int& waiting = waiting_[static_cast<size_t>(bucket_of_[i])];
  waiting = grad.valid() && waiting > 0 ? waiting - 1 : -1;
  while (next_ < buckets_.size() && waiting_[next_] == 0) reduce_bucket(next_++);
}

void GradientReducer::reduce_bucket(size_t k) {
  const std::vector<int>& bucket = buckets_[k];
  const std::string name = fmt::format("data_parallel.bucket{}", k);
  std::vector<Value> flat;
  for (int p : bucket) {
    const size_t i = static_cast<size_t>(p);
    flat.push_back(reshape(b_, grads_[i], Shape{params_[i].shape.numel()}));
  }
  const Value joined = join(b_, flat, name);
  const Value mean = b_.apply(OpKind::all_reduce, {joined}, {}, name + ".reduced");
  int64_t start = 0;
  for (int p : bucket) {
    const size_t i = static_cast<size_t>(p);
    const int64_t n = params_[i].shape.numel();
    const Value part = flat.size() == 1 ? mean : slice(b_, mean, 0, start, n);
    Attrs as_param;
    as_param.shape = params_[i].shape;
    reduced_[i] = b_.apply(OpKind::reshape, {part}, as_param, names_[i] + ".grad.reduced");
    start += n;
  }
}

std::vector<Value> GradientReducer::reduced() const {
  if (next_ != buckets_.size())
    throw std::logic_error(fmt::format("GradientReducer: bucket {} of {} was never reduced: a gradient of it is "
                                       "missing; refuse parameters without a gradient before asking",
                                       next_, buckets_.size()));
  return reduced_;
}

}  // namespace tg
