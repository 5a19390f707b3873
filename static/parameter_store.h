#pragma once
// Persistent buffers (parameters and optimizer state) that outlive any one
// compiled plan, TensorFlow-variable style: every plan compiled for a new shape
// (shape strategies) binds the same buffers by name, so training continues
// across shapes exactly as the dynamic executor's parameters do.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "kernels/backend.h"

namespace tg {

class ParameterStore {
 public:
  // `seed` is the one initial_values (graph/init.h) uses, so the buffers start
  // bit-identical to the interpreter's and the dynamic executor's.
  ParameterStore(std::shared_ptr<Backend> backend, uint64_t seed) : backend_(std::move(backend)), seed_(seed) {}
  ~ParameterStore();
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  // The buffer for a parameter or optimizer-state value, created and initialized
  // on first use. Throws GraphError when the name exists with another shape, and
  // OutOfMemoryError (kernels/out_of_memory.h) when the device refuses the buffer:
  // `held` (the binding plan's memory breakdown) and `advice` go into its message.
  float* bind(const ValueInfo& v, const std::function<std::string()>& held = nullptr,
              const std::string& advice = "Reduce the model size.");
  // -1-safe lookups for tools and tests; nullptr when absent.
  float* find(const std::string& name) const;
  int64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  uint64_t seed() const { return seed_; }
  Backend& backend() const { return *backend_; }

 private:
  struct Entry {
    Shape shape;
    float* data = nullptr;
    DType dtype = DType::F32;
  };
  std::shared_ptr<Backend> backend_;
  uint64_t seed_;
  std::unordered_map<std::string, Entry> entries_;
  int64_t bytes_ = 0;
};

}  // namespace tg
