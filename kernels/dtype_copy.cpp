#include "kernels/dtype_copy.h"

#include "graph/float_formats.h"

namespace tg {

void copy_to_device_as(Backend& be, void* dst, const std::vector<float>& host, DType dt) {
  if (dt == DType::F32) return be.copy_to_device(dst, host.data(), host.size() * sizeof(float));
  std::vector<uint16_t> bits(host.size());
  store_as_dtype(host.data(), host.size(), dt, bits.data());
  be.copy_to_device(dst, bits.data(), bits.size() * sizeof(uint16_t));
}

std::vector<float> copy_to_host_from(Backend& be, const void* src, int64_t n, DType dt) {
  std::vector<float> host(static_cast<size_t>(n));
  if (dt == DType::F32) {
    be.copy_to_host(host.data(), src, host.size() * sizeof(float));
    return host;
  }
  std::vector<uint16_t> bits(host.size());
  be.copy_to_host(bits.data(), src, bits.size() * sizeof(uint16_t));
  load_from_dtype(bits.data(), bits.size(), dt, host.data());
  return host;
}

}  // namespace tg
