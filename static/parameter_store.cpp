#include "static/parameter_store.h"

#include "graph/errors.h"
#include "graph/init.h"

namespace tg {

ParameterStore::~ParameterStore() {
  for (auto& [name, e] : entries_) backend_->raw_free(e.data);
}

float* ParameterStore::bind(const ValueInfo& v) {
  auto it = entries_.find(v.name);
  if (it != entries_.end()) {
    if (it->second.shape != v.shape)
      graph_error("parameter '{}' is {} in this graph but {} in the plans compiled before; a parameter's shape "
                  "must not depend on the input shape (only activations may vary)",
                  v.name, v.shape.str(), it->second.shape.str());
    return it->second.data;
  }
  const std::vector<float> init = initial_values(v, seed_);
  const size_t bytes = init.size() * sizeof(float);
  auto* p = static_cast<float*>(backend_->raw_alloc(bytes));
  backend_->copy_to_device(p, init.data(), bytes);
  entries_[v.name] = {v.shape, p};
  bytes_ += static_cast<int64_t>(bytes);
  return p;
}

float* ParameterStore::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.data;
}

}  // namespace tg
