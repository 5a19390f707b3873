#include "static/parameter_store.h"

#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/dtype_copy.h"
#include "kernels/out_of_memory.h"

namespace tg {

ParameterStore::~ParameterStore() {
  for (auto& [name, e] : entries_) backend_->raw_free(e.data);
}

float* ParameterStore::bind(const ValueInfo& v, const std::function<std::string()>& held,
                            const std::string& advice) {
  auto it = entries_.find(v.name);
  if (it != entries_.end()) {
    if (it->second.shape != v.shape)
      graph_error("parameter {} is {} in this graph but {} in the plans compiled before; a parameter's shape "
                  "must not depend on the input shape (only activations may vary)",
                  quote_name(v.name), v.shape.str(), it->second.shape.str());
    if (it->second.dtype != v.dtype)
      graph_error("parameter {} is {} in this graph but {} in the plans compiled before; one store holds one dtype "
                  "per parameter", quote_name(v.name), dtype_name(v.dtype), dtype_name(it->second.dtype));
    return it->second.data;
  }
  // Allocated before the host values are generated: a buffer that does not fit
  // fails at once, without first computing (possibly GiBs of) initial values.
  const size_t bytes = static_cast<size_t>(v.bytes());
  auto* p = static_cast<float*>(raw_alloc_or_throw(
      *backend_, bytes, fmt::format("parameter store ({}, {})", quote_name(v.name), role_name(v.role)),
      [&] {
        std::string s = fmt::format("the parameter store holds {} in {} buffers", format_bytes(bytes_), entries_.size());
        return held ? s + "; " + held() : s;
      },
      advice));
  std::vector<float> init;
  try {
    init = initial_values(v, seed_);
    if (static_cast<int64_t>(init.size()) != v.shape.numel())
      graph_error("parameter {}: initial_values gave {} floats for shape {}", quote_name(v.name), init.size(), v.shape.str());
    copy_to_device_as(*backend_, p, init, v.dtype);  // rounded as a kernel storing in that dtype would
  } catch (...) {
    backend_->raw_free(p);
    throw;
  }
  entries_[v.name] = {v.shape, p, v.dtype};
  bytes_ += static_cast<int64_t>(bytes);
  return p;
}

float* ParameterStore::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.data;
}

}  // namespace tg
