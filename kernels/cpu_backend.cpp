// The CPU backend: runs each op at once through the reference kernels. Device
// memory is host memory, so copies are memcpy and synchronize has nothing to wait for.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kernels/backend.h"
#include "kernels/communicator.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg {

namespace {

class CpuBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string name() const override { return "cpu"; }
  void run(const kernels::OpCall& call) override {
    if (call.op == OpKind::all_reduce && communicator()) return kernels::run_all_reduce(call, *communicator(), nullptr);
    kernels::run_cpu(call);
  }

  void* raw_alloc(size_t bytes) override {
    constexpr size_t kAlign = 256;
    // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a
    // unique pointer so that callers can treat every tensor alike.
    const size_t rounded = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = rounded < bytes ? nullptr : std::aligned_alloc(kAlign, rounded);
    if (!p)
      throw std::runtime_error(fmt::format("cpu backend: cannot allocate {} bytes ({:.1f} MiB) of host memory; "
                                           "reduce the batch or model size",
                                           bytes, static_cast<double>(bytes) / (1024.0 * 1024.0)));
    return p;
  }
  void raw_free(void* p) noexcept override { std::free(p); }

  void copy_to_device(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_on_device(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void synchronize() override {}

 private:
  static void copy(void* dst, const void* src, size_t bytes) {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace tg
