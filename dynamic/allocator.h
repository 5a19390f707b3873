#pragma once
// The allocator interface of the dynamic executor. Every tensor the eager
// builder creates gets its memory from one of these, chosen by name at run time:
//   raw      Backend::raw_alloc / raw_free per tensor (cudaMalloc / malloc): the
//            baseline that shows why frameworks cache;
//   caching  dynamic/caching_allocator.h: size classes, best fit, split/merge,
//            pools per stream (what PyTorch's CUDACachingAllocator does);
//   pool     CUDA's stream-ordered allocator (cudaMallocAsync on a cudaMemPool_t
//            that keeps its memory); CUDA only.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/out_of_memory.h"

namespace tg {

class Backend;

// `handle` is the allocator's own bookkeeping for the block (the caching
// allocator's block node), so that free() needs no lookup.
struct Block {
  void* ptr = nullptr;
  size_t size = 0;  // bytes requested
  void* handle = nullptr;
};

struct AllocatorStats {
  int64_t current = 0;        // bytes requested by live blocks
  int64_t peak = 0;           // max of current since construction or reset_peak()
  int64_t reserved = 0;       // bytes held from the device (segments, pool reservation)
  int64_t peak_reserved = 0;  // max of reserved since construction or reset_peak()
  int64_t allocs = 0;         // allocate() calls
  int64_t frees = 0;          // free() calls
  int64_t raw_allocs = 0;     // device allocations (cudaMalloc, malloc, pool growth)
  int64_t raw_frees = 0;      // device frees
};

// OutOfMemoryError (kernels/out_of_memory.h) is thrown when the device cannot
// satisfy a request even after the cache was emptied. The message states the
// request, the device's free and total memory, what is allocated and reserved,
// and the bytes per role.

// Called only when an OutOfMemoryError is being built: "parameter 1.2 MiB, ...".
using RoleBreakdownFn = std::function<std::string()>;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual const char* name() const = 0;
  // bytes == 0 still returns a distinct, valid pointer.
  virtual Block allocate(size_t bytes) = 0;
  // Returns the block; never synchronizes. A null block is ignored.
  virtual void free(Block b) noexcept = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Gives cached, unused memory back to the device (no-op for raw).
  virtual void empty_cache() {}
  void set_role_breakdown(RoleBreakdownFn fn) { roles_ = std::move(fn); }

 protected:
  std::string role_breakdown() const { return roles_ ? roles_() : std::string("(no breakdown)"); }

 private:
  RoleBreakdownFn roles_;
};

// "raw", "caching" or "pool". Throws std::invalid_argument for an unknown name
// or for "pool" on a backend that is not CUDA (or a build without CUDA).
std::unique_ptr<Allocator> make_allocator(const std::string& name, Backend& backend);

// The allocators, one per file, for make_allocator.
std::unique_ptr<Allocator> make_raw_allocator(Backend& backend);      // raw_allocator.cpp
std::unique_ptr<Allocator> make_caching_allocator(Backend& backend);  // caching_allocator.cpp
std::unique_ptr<Allocator> make_pool_allocator(Backend& backend);     // pool_allocator_cuda.cpp, CUDA builds only

// format_bytes and device_memory_info: kernels/out_of_memory.h.

}  // namespace tg
