// The raw allocator, the factory that picks an allocator by name, and helpers.
#include "dynamic/allocator.h"

#include <fmt/format.h>

#include <algorithm>

#include "dynamic/caching_allocator.h"
#include "kernels/backend.h"

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
    void* p = raw_alloc_or_throw(
        b_, bytes, "raw allocator",
        [&] {
          return fmt::format("allocated {}, reserved {}; by role: {}", format_bytes(s_.current),
                             format_bytes(s_.reserved), role_breakdown());
        },
        "Reduce the batch or model size.");
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

}  // namespace tg
