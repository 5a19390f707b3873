// The "raw" allocator: one device allocation per tensor, freed at once. Nothing is
// cached, so every op pays cudaMalloc/cudaFree: the baseline that shows why
// frameworks cache (docs/launch.md).
#include <fmt/format.h>

#include <algorithm>

#include "dynamic/allocator.h"
#include "kernels/backend.h"

namespace tg {

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

std::unique_ptr<Allocator> make_raw_allocator(Backend& backend) { return std::make_unique<RawAllocator>(backend); }

}  // namespace tg
