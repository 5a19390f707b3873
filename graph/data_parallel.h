#pragma once
// Data parallelism's part of the graph: the parameter gradients all-reduced in buckets, as
// PyTorch's DistributedDataParallel reduces them, through one Builder so that the static
// compiler (graph/training.cpp, into the recorded graph) and the dynamic executor
// (dynamic/trainer.cpp, eagerly) issue the same ops in the same order.
//
// Buckets are fixed from the parameters alone, as DDP fixes them when it wraps a model: the
// trained parameters in reverse order (backward produces the last layers' gradients first),
// a bucket closed once it holds at least bucket_bytes. While backward runs, each gradient is
// handed to the reducer as soon as it is final (graph/autodiff.h's GradientReady); a bucket
// whose gradients are all in is reduced at once if every bucket before it has been, so every
// rank issues its collectives in bucket order, whatever order its gradients arrive in. A
// bucket is flattened (reshape, a view), joined (concat, one copy in; a tree of concats past
// kMaxOpInputs gradients, the most inputs the dynamic executor applies), averaged over the
// ranks in place (all_reduce) and split back (slice, one copy out, then reshape): DDP's copies
// into and out of its bucket buffers.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace tg {

struct DataParallelOptions {
  // Reduce the gradients over the backend's communicator (kernels/communicator.h). Off: the
  // graph has no all_reduce, as in a one-process run.
  bool enabled = false;
  // The bytes of gradients a bucket holds before it is closed: DDP's bucket_cap_mb, 25 MiB.
  int64_t bucket_bytes = int64_t{25} << 20;
};

// The buckets of parameters of these shapes (f32 gradients): indices into `shapes`, in the
// order they are reduced. Throws std::invalid_argument unless bucket_bytes > 0.
std::vector<std::vector<int>> gradient_buckets(const std::vector<Shape>& shapes, int64_t bucket_bytes);

class GradientReducer {
 public:
  // params: the trained parameters in the order the optimizer updates them; names: theirs
  // (the reduced gradients are named "<name>.grad.reduced", the buckets "data_parallel.bucket<k>").
  GradientReducer(Builder& b, const std::vector<Value>& params, const std::vector<std::string>& names,
                  const DataParallelOptions& opt);
  // params[i]'s gradient is final (backward's GradientReady); invalid: it has none, and its
  // bucket is never reduced (the caller refuses such a parameter).
  void ready(size_t i, const Value& grad);
  // The reduced gradients in params' order, once every bucket has been reduced. Throws
  // std::logic_error when a bucket is still waiting for a gradient.
  std::vector<Value> reduced() const;

 private:
  void reduce_bucket(size_t k);

  Builder& b_;
  std::vector<Value> params_;
  std::vector<std::string> names_;
  std::vector<std::vector<int>> buckets_;
  std::vector<Value> grads_, reduced_;
  std::vector<int> bucket_of_;  // per parameter
  std::vector<int> waiting_;    // per bucket, gradients not yet in (-1: one will never come)
  size_t next_ = 0;           // the first bucket not reduced yet
};

}  // namespace tg
