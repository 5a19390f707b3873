#pragma once
// A caching allocator in the manner of PyTorch's CUDACachingAllocator, written
// against a RawSource so that the same code serves device memory (through the
// backend) and host memory, and is unit-tested on the CPU with a fake source.
// The design note is at the top of caching_allocator.cpp.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <set>
#include <string>
#include <vector>

#include "dynamic/allocator.h"

namespace tg {

// Where segments come from. alloc returns nullptr when the memory is not there
// (the caching allocator then empties its cache, retries, and reports OOM).
class RawSource {
 public:
  virtual ~RawSource() = default;
  virtual void* alloc(size_t bytes) noexcept = 0;
  virtual void free(void* p) noexcept = 0;
  virtual void memory_info(size_t& free_bytes, size_t& total_bytes) const = 0;
  virtual std::string device_name() const = 0;
};

// Segments from Backend::raw_alloc / raw_free.
std::unique_ptr<RawSource> make_backend_source(Backend& backend);

// Identifies a stream; pools are keyed by it so that two streams never share a
// block (reusing a block freed on another stream would need an event).
using StreamId = uintptr_t;

class CachingAllocator final : public Allocator {
 public:
  // Size classes (see the design note).
  static constexpr size_t kRound = 512;                  // every block is a multiple of this
  static constexpr size_t kSmallSize = 1u << 20;         // <= 1 MiB: small pool
  static constexpr size_t kSmallSegment = 2u << 20;      // small pool segments: 2 MiB
  static constexpr size_t kLargeSegment = 20u << 20;     // requests < 10 MiB share 20 MiB segments
  static constexpr size_t kMinLargeAlloc = 10u << 20;    // from here a segment per request
  static constexpr size_t kLargeRound = 2u << 20;        // ... rounded to 2 MiB

  explicit CachingAllocator(std::unique_ptr<RawSource> source);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  const char* name() const override { return "caching"; }
  Block allocate(size_t bytes) override;
  void free(Block b) noexcept override;
  AllocatorStats stats() const override { return stats_; }
  void reset_peak() override;
  void empty_cache() override;

  // Later allocations come from this stream's pools.
  void set_stream(StreamId s);
  StreamId stream() const { return stream_; }
  // Segments held and free blocks cached, for tests and reports.
  size_t num_segments() const;
  size_t num_free_blocks() const;

  static size_t round_size(size_t bytes);
  static size_t segment_size(size_t rounded);

 private:
  struct Pool;
  struct BlockNode {
    void* ptr = nullptr;
    size_t size = 0;        // rounded bytes this block spans
    size_t requested = 0;   // what allocate() asked for (0 while free)
    BlockNode* prev = nullptr;  // neighbours inside the segment
    BlockNode* next = nullptr;
    Pool* pool = nullptr;
    bool allocated = false;
  };
  struct BySize {
    bool operator()(const BlockNode* a, const BlockNode* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using FreeSet = std::pmr::set<BlockNode*, BySize>;
  struct Pool {
    FreeSet free_blocks;
    bool small = false;
    size_t segments = 0;
    explicit Pool(std::pmr::memory_resource* r, bool is_small) : free_blocks(r), small(is_small) {}
  };
  struct StreamPools {
    StreamId stream;
    std::unique_ptr<Pool> small, large;
  };

  StreamPools& pools_for(StreamId s);
  BlockNode* new_node();
  void recycle(BlockNode* n);
  BlockNode* find_free(Pool& pool, size_t size);
  BlockNode* new_segment(Pool& pool, size_t size, size_t requested);
  bool release_cached();
  [[noreturn]] void out_of_memory(size_t requested, size_t rounded, size_t segment);

  std::unique_ptr<RawSource> source_;
  // Set nodes come from this pool resource and node objects from spare_, so a
  // warm allocator does no heap allocation per allocate/free.
  std::pmr::unsynchronized_pool_resource node_memory_;
  std::vector<StreamPools> streams_;
  StreamPools* current_ = nullptr;
  StreamId stream_ = 0;
  std::vector<BlockNode*> spare_;
  std::vector<void*> segment_list_;  // every segment held, for the destructor
  std::vector<std::unique_ptr<BlockNode[]>> node_chunks_;
  AllocatorStats stats_;
};

}  // namespace tg
