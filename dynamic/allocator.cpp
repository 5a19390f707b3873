// The raw allocator, the factory that picks an allocator by name, and helpers.
#include "dynamic/allocator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "dynamic/caching_allocator.h"
#include "kernels/backend.h"

#ifdef TWOGRAPH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tg {

#ifdef TWOGRAPH_HAVE_CUDA
std::unique_ptr<Allocator> make_pool_allocator(Backend& backend);  // pool_allocator_cuda.cpp
#endif

namespace {

// One device allocation per tensor. Reserved equals current: nothing is kept.
class RawAllocator final : public Allocator {
 public:
  explicit RawAllocator(Backend& b) : b_(b) {}
  const char* name() const override { return "raw"; }
  Block allocate(size_t bytes) override {
    void* p = nullptr;
    try {
      p = b_.raw_alloc(bytes);
    } catch (const std::exception& e) {
      size_t dev_free = 0, dev_total = 0;
      device_memory_info(b_, dev_free, dev_total);
      throw OutOfMemoryError(fmt::format(
          "raw allocator: out of memory on {}: tried to allocate {}; device free {} of total {}; allocated {}, "
          "reserved {}; by role: {}. Reduce the batch or model size. ({})",
          b_.name(), format_bytes(static_cast<int64_t>(bytes)), format_bytes(static_cast<int64_t>(dev_free)),
          format_bytes(static_cast<int64_t>(dev_total)), format_bytes(s_.current), format_bytes(s_.reserved),
          role_breakdown(), e.what()));
    }
    ++s_.allocs;
    ++s_.raw_allocs;
    s_.current += static_cast<int64_t>(bytes);
    s_.reserved = s_.current;
    s_.peak = std::max(s_.peak, s_.current);
    s_.peak_reserved = std::max(s_.peak_reserved, s_.reserved);
    return Block{p, bytes, nullptr};
  }
  void free(Block blk) noexcept override {
    if (!blk.ptr) return;
    b_.raw_free(blk.ptr);
    ++s_.frees;
    ++s_.raw_frees;
    s_.current -= static_cast<int64_t>(blk.size);
    s_.reserved = s_.current;
  }
  AllocatorStats stats() const override { return s_; }
  void reset_peak() override {
    s_.peak = s_.current;
    s_.peak_reserved = s_.reserved;
  }

 private:
  Backend& b_;
  AllocatorStats s_;
};

}  // namespace

std::unique_ptr<Allocator> make_allocator(const std::string& name, Backend& backend) {
  if (name == "raw") return std::make_unique<RawAllocator>(backend);
  if (name == "caching") return std::make_unique<CachingAllocator>(make_backend_source(backend));
  if (name == "pool") {
    if (backend.kind() != DeviceKind::cuda)
      throw std::invalid_argument(fmt::format(
          "allocator 'pool' (cudaMallocAsync) needs a CUDA device but the backend is {}; use 'raw' or 'caching'",
          backend.name()));
#ifdef TWOGRAPH_HAVE_CUDA
    return make_pool_allocator(backend);
#else
    throw std::invalid_argument("allocator 'pool' needs a build with CUDA (TWOGRAPH_CUDA=ON)");
#endif
  }
  throw std::invalid_argument(
      fmt::format("unknown allocator '{}'; choose one of: raw, caching, pool (pool on CUDA only)", name));
}

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 0) return "-" + format_bytes(-bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (bytes < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

void device_memory_info(const Backend& backend, size_t& free_bytes, size_t& total_bytes) {
  free_bytes = total_bytes = 0;
#ifdef TWOGRAPH_HAVE_CUDA
  if (backend.kind() == DeviceKind::cuda) {
    // The backend made its device current; a failure here only blanks the report.
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      free_bytes = total_bytes = 0;
    }
    return;
  }
#endif
  (void)backend;
  const long page = sysconf(_SC_PAGESIZE);
  const long avail = sysconf(_SC_AVPHYS_PAGES), phys = sysconf(_SC_PHYS_PAGES);
  if (page > 0 && avail > 0 && phys > 0) {
    free_bytes = static_cast<size_t>(avail) * static_cast<size_t>(page);
    total_bytes = static_cast<size_t>(phys) * static_cast<size_t>(page);
  }
}

}  // namespace tg
