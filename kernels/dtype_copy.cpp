#include "kernels/dtype_copy.h"

#include "graph/float_formats.h"

namespace tg {

void copy_to_device_as(Backend& be, void* dst, const std::vector<float>& host, DType dt) {
  if (dt == DType::F32) return be.copy_to_device(dst, host.data(), host.size() * sizeof(float));
  const size_t bytes = host.size() * static_cast<size_t>(dtype_size(dt));
  std::vector<unsigned char> stored(bytes);
  store_as_dtype(host.data(), host.size(), dt, stored.data());
  be.copy_to_device(dst, stored.data(), bytes);
}

std::vector<float> copy_to_host_from(Backend& be, const void* src, int64_t n, DType dt) {
  std::vector<float> host(static_cast<size_t>(n));
  if (dt == DType::F32) {
    be.copy_to_host(host.data(), src, host.size() * sizeof(float));
    return host;
  }
  std::vector<unsigned char> stored(host.size() * static_cast<size_t>(dtype_size(dt)));
  be.copy_to_host(stored.data(), src, stored.size());
  load_from_dtype(stored.data(), host.size(), dt, host.data());
  return host;
}

}  // namespace tg
