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
  // The buffer of `copy`, a parameter's persistent low-precision copy (the low_copies pass,
  // static/passes/pass.h), created on first use and filled from `master`'s buffer (bound
  // before) by a `cast`, so it holds the bits the cast the pass removed would give. A copy
  // with more rows than its master (copy_shape_fits; the vocab_pad pass) holds zeros past them. From
  // then on the store refreshes it after every write it makes to the master (write,
  // refresh_copies): the step's update writes it otherwise.
  float* bind_copy(const ValueInfo& copy, const ValueInfo& master, const std::function<std::string()>& held = nullptr,
                   const std::string& advice = "Reduce the model size.");
  // Writes host values into a bound parameter or optimizer-state buffer (rounded to its
  // dtype as initial values are), then refreshes the low-precision copies of it. The one
  // way to set weights from outside a step. Throws std::invalid_argument for a name the
  // store does not hold, a size that differs from its element count, or a copy (which
  // only follows its parameter).
  void write(const std::string& name, const std::vector<float>& host);
  // Makes this store's parameters and optimizer state equal to `from`'s (same backend): every
  // buffer this store holds, but the low-precision copies, copied from `from`'s of the same
  // name, shape and dtype, then the copies refreshed. Two plans of one model compiled with
  // different passes then step from the same state. Returns the names of this store's
  // buffers that `from` lacks (left as they were), sorted; throws std::invalid_argument when
  // the stores live on different backends.
  std::vector<std::string> assign_from(const ParameterStore& from);
  // Fills every low-precision copy from its parameter again: after writing through a
  // pointer from find(), which the store cannot see.
  void refresh_copies();
  // The same for the copies of one parameter but those in `except` (none: nothing to do),
  // waiting for the device first: after a write to the parameter, or a step that updated it
  // and wrote `except` itself (StaticExecutable).
  void refresh_copies_of(const std::string& master, const std::vector<std::string>& except = {});
  // How many copies were bound so far: a plan that watches for copies of the parameters it
  // updates asks again when it changes (StaticExecutable).
  uint64_t copies_bound() const { return copy_of_.size(); }
  // The copies bound so far: copy name -> its parameter's name.
  const std::unordered_map<std::string, std::string>& copies() const { return copy_of_; }
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
  // The buffer for v, allocated (the error naming what is held) and left unfilled.
  float* allocate(const ValueInfo& v, const std::function<std::string()>& held, const std::string& advice);
  // Rounds the master's buffer into the copy's (a cast on the backend) and waits for it.
  void fill_copy(const std::string& copy);

  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, std::string> copy_of_;  // copy -> parameter
  int64_t bytes_ = 0;
};

}  // namespace tg
