#include "static/parameter_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/dtype_copy.h"
#include "kernels/out_of_memory.h"

namespace tg {

ParameterStore::~ParameterStore() {
  for (auto& [name, e] : entries_) backend_->raw_free(e.data);
}

namespace {
void require_same_layout(const ValueInfo& v, const Shape& shape, DType dtype) {
  if (shape != v.shape)
    graph_error("parameter {} is {} in this graph but {} in the plans compiled before; a parameter's shape "
                "must not depend on the input shape (only activations may vary)",
                quote_name(v.name), v.shape.str(), shape.str());
  if (dtype != v.dtype)
    graph_error("parameter {} is {} in this graph but {} in the plans compiled before; one store holds one dtype "
                "per parameter", quote_name(v.name), dtype_name(v.dtype), dtype_name(dtype));
}
}  // namespace

float* ParameterStore::allocate(const ValueInfo& v, const std::function<std::string()>& held,
                                const std::string& advice) {
  const size_t bytes = static_cast<size_t>(v.bytes());
  return static_cast<float*>(raw_alloc_or_throw(
      *backend_, bytes, fmt::format("parameter store ({}, {})", quote_name(v.name), role_name(v.role)),
      [&] {
        std::string s = fmt::format("the parameter store holds {} in {} buffers", format_bytes(bytes_), entries_.size());
        return held ? s + "; " + held() : s;
      },
      advice));
}

float* ParameterStore::bind(const ValueInfo& v, const std::function<std::string()>& held,
                            const std::string& advice) {
  auto it = entries_.find(v.name);
  if (it != entries_.end()) {
    require_same_layout(v, it->second.shape, it->second.dtype);
    return it->second.data;
  }
  // Allocated before the host values are generated: a buffer that does not fit
  // fails at once, without first computing (possibly GiBs of) initial values.
  float* p = allocate(v, held, advice);
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
  bytes_ += v.bytes();
  return p;
}

float* ParameterStore::bind_copy(const ValueInfo& copy, const ValueInfo& master, const std::function<std::string()>& held,
                                 const std::string& advice) {
  auto m = entries_.find(master.name);
  if (m == entries_.end() || m->second.dtype != DType::F32 || !copy_shape_fits(copy.shape, m->second.shape))
    graph_error("low-precision copy {}: its parameter {} must be bound first, f32, of the copy's shape {} (or of "
                "fewer rows)", quote_name(copy.name), quote_name(master.name), copy.shape.str());
  auto it = entries_.find(copy.name);
  if (it != entries_.end()) {
    require_same_layout(copy, it->second.shape, it->second.dtype);
    auto c = copy_of_.find(copy.name);
    if (c == copy_of_.end() || c->second != master.name)
      graph_error("low-precision copy {} is bound as {} here but was bound before as something else; name copies "
                  "after their parameter only", quote_name(copy.name),
                  fmt::format("the copy of {}", quote_name(master.name)));
    return it->second.data;
  }
  float* p = allocate(copy, held, advice);
  entries_[copy.name] = {copy.shape, p, copy.dtype};
  bytes_ += copy.bytes();
  copy_of_[copy.name] = master.name;
  fill_copy(copy.name);
  return p;
}

void ParameterStore::fill_copy(const std::string& copy) {
  const Entry& c = entries_.at(copy);
  const Entry& m = entries_.at(copy_of_.at(copy));
  Attrs at;
  at.to = c.dtype;
  kernels::OpCall call;
  call.op = OpKind::cast;
  call.attrs = &at;
  call.num_inputs = 1;
  call.in[0] = {m.data, m.shape, m.dtype};
  call.out = {c.data, m.shape, c.dtype};
  backend_->run(call);
  backend_->synchronize();  // `at` lives on this frame; a plan replays on its own stream
  const size_t esize = static_cast<size_t>(dtype_size(c.dtype));
  const size_t filled = static_cast<size_t>(m.shape.numel()) * esize;
  const size_t padding = static_cast<size_t>(c.shape.numel()) * esize - filled;
  if (padding > 0) {  // the rows past the master's: zeros (all-zero bits in every float dtype)
    const std::vector<char> zeros(padding, 0);
    backend_->copy_to_device(reinterpret_cast<char*>(c.data) + filled, zeros.data(), padding);
  }
}

void ParameterStore::write(const std::string& name, const std::vector<float>& host) {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw std::invalid_argument(fmt::format("parameter store: no parameter or state named {}; compile a plan that "
                                            "binds it first", quote_name(name)));
  if (copy_of_.count(name))
    throw std::invalid_argument(fmt::format("parameter store: {} is the low-precision copy of {}; write the parameter "
                                            "and the copy follows", quote_name(name), quote_name(copy_of_.at(name))));
  if (static_cast<int64_t>(host.size()) != it->second.shape.numel())
    throw std::invalid_argument(fmt::format("parameter store: {} is {} ({} elements) but {} values were given",
                                            quote_name(name), it->second.shape.str(), it->second.shape.numel(),
                                            host.size()));
  backend_->synchronize();  // a replay still running may read or write it
  copy_to_device_as(*backend_, it->second.data, host, it->second.dtype);
  refresh_copies_of(name);
}

void ParameterStore::refresh_copies_of(const std::string& master, const std::vector<std::string>& except) {
  bool synced = false;
  for (const auto& [copy, of] : copy_of_) {
    if (of != master || std::find(except.begin(), except.end(), copy) != except.end()) continue;
    if (!synced) backend_->synchronize();
    synced = true;
    fill_copy(copy);
  }
}

std::vector<std::string> ParameterStore::assign_from(const ParameterStore& from) {
  if (from.backend_.get() != backend_.get())
    throw std::invalid_argument("parameter store: assign_from needs a store on the same backend (device buffers "
                                "are copied on the device)");
  std::vector<std::string> missing;
  backend_->synchronize();  // a replay of either plan may still read or write its buffers
  for (const auto& [name, e] : entries_) {
    if (copy_of_.count(name)) continue;
    const auto it = from.entries_.find(name);
    if (it == from.entries_.end() || it->second.shape != e.shape || it->second.dtype != e.dtype ||
        from.copy_of_.count(name)) {
      missing.push_back(name);
      continue;
    }
    backend_->copy_on_device(e.data, it->second.data, static_cast<size_t>(e.shape.numel()) * dtype_size(e.dtype));
  }
  refresh_copies();
  std::sort(missing.begin(), missing.end());
  return missing;
}

void ParameterStore::refresh_copies() {
  backend_->synchronize();
  for (const auto& entry : copy_of_) fill_copy(entry.first);
}

float* ParameterStore::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.data;
}

}  // namespace tg
