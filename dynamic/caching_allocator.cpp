// Design note: the caching allocator.
//
// Why: cudaMalloc costs 40-80 us and cudaFree 35-320 us and synchronizes the
// device, while an eager executor allocates every op's output. A framework
// therefore keeps freed memory and hands it out again; after one warm-up
// iteration a steady training loop touches the device allocator not at all.
//
// Size classes (PyTorch's, kept because they are well understood):
//  - every request is rounded up to a multiple of 512 B (0 B too, to 512 B);
//  - small requests (<= 1 MiB) come from the small pool, whose segments are
//    2 MiB; large ones from the large pool, whose segments are 20 MiB for
//    requests under 10 MiB and the request rounded up to 2 MiB beyond that.
//    Separate pools keep many small tensors from fragmenting the big segments.
// Best fit: each pool keeps its free blocks in a set ordered by (size, address);
//    lower_bound gives the smallest free block that fits.
// Splitting: a block larger than needed is split when the rest is worth keeping:
//    any rest >= 512 B in the small pool, a rest > 1 MiB in the large pool (a
//    smaller rest stays inside the block as internal waste, as in PyTorch, so the
//    large pool does not fill with slivers).
// Merging: a freed block merges with free neighbours of the same segment
//    (prev/next links), so a segment whose blocks are all free is one block again.
// Streams: the pools are keyed by stream. A block freed on stream A is reused
//    only by allocations on A, so stream order alone makes reuse safe and free()
//    never synchronizes. Sharing across streams would need an event per block
//    (PyTorch's record_stream); there is one stream here, so it is not built.
// empty_cache() returns whole free segments to the device; so does an
//    allocation that fails, once, before it gives up with OutOfMemoryError.
// Hot path: allocate/free touch only the set and the block's links. Set nodes
//    come from a pool resource and block nodes from a free list, so once warm
//    neither does any heap allocation.
#include "dynamic/caching_allocator.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/backend.h"

namespace tg {

namespace {

class BackendSource final : public RawSource {
 public:
  explicit BackendSource(Backend& b) : b_(b) {}
  void* alloc(size_t bytes) noexcept override {
    try {
      return b_.raw_alloc(bytes);
    } catch (...) {
      return nullptr;  // the backend's message is rebuilt, with more, as OutOfMemoryError
    }
  }
  void free(void* p) noexcept override { b_.raw_free(p); }
  void memory_info(size_t& free_bytes, size_t& total_bytes) const override {
    device_memory_info(b_, free_bytes, total_bytes);
  }
  std::string device_name() const override { return b_.name(); }

 private:
  Backend& b_;
};

}  // namespace

std::unique_ptr<RawSource> make_backend_source(Backend& backend) { return std::make_unique<BackendSource>(backend); }

std::unique_ptr<Allocator> make_caching_allocator(Backend& backend) {
  return std::make_unique<CachingAllocator>(make_backend_source(backend));
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes == 0) return kRound;
  return (bytes + kRound - 1) / kRound * kRound;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::CachingAllocator(std::unique_ptr<RawSource> source) : source_(std::move(source)) {
  streams_.reserve(4);
  set_stream(0);
}

CachingAllocator::~CachingAllocator() {
  // Blocks still live at destruction are their owner's bug; the memory goes back regardless.
  for (void* seg : segment_list_) source_->free(seg);
}

CachingAllocator::StreamPools& CachingAllocator::pools_for(StreamId s) {
  for (StreamPools& sp : streams_)
    if (sp.stream == s) return sp;
  streams_.push_back(StreamPools{s, std::make_unique<Pool>(&node_memory_, true),
                                 std::make_unique<Pool>(&node_memory_, false)});
  return streams_.back();
}

void CachingAllocator::set_stream(StreamId s) {
  // push_back may move StreamPools, but the Pool objects are heap-owned and stay put.
  current_ = &pools_for(s);
  stream_ = s;
}

CachingAllocator::BlockNode* CachingAllocator::new_node() {
  if (spare_.empty()) {
    constexpr size_t kChunk = 256;
    node_chunks_.push_back(std::make_unique<BlockNode[]>(kChunk));
    spare_.reserve(spare_.size() + kChunk);
    for (size_t i = 0; i < kChunk; ++i) spare_.push_back(&node_chunks_.back()[i]);
  }
  BlockNode* n = spare_.back();
  spare_.pop_back();
  *n = BlockNode{};
  return n;
}

void CachingAllocator::recycle(BlockNode* n) { spare_.push_back(n); }

CachingAllocator::BlockNode* CachingAllocator::find_free(Pool& pool, size_t size) {
  BlockNode key;
  key.size = size;
  key.ptr = nullptr;
  auto it = pool.free_blocks.lower_bound(&key);
  if (it == pool.free_blocks.end()) return nullptr;
  BlockNode* n = *it;
  pool.free_blocks.erase(it);
  return n;
}

CachingAllocator::BlockNode* CachingAllocator::new_segment(Pool& pool, size_t size, size_t requested) {
  const size_t seg = segment_size(size);
  void* p = source_->alloc(seg);
  if (!p) {
    release_cached();
    p = source_->alloc(seg);
    if (!p) out_of_memory(requested, size, seg);
  }
  ++stats_.raw_allocs;
  stats_.reserved += static_cast<int64_t>(seg);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++pool.segments;
  segment_list_.push_back(p);
  BlockNode* n = new_node();
  n->ptr = p;
  n->size = seg;
  n->pool = &pool;
  return n;
}

Block CachingAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  Pool& pool = size <= kSmallSize ? *current_->small : *current_->large;
  BlockNode* n = find_free(pool, size);
  if (!n) n = new_segment(pool, size, bytes);
  const size_t rest = n->size - size;
  if (pool.small ? rest >= kRound : rest > kSmallSize) {
    BlockNode* r = new_node();
    r->ptr = static_cast<char*>(n->ptr) + size;
    r->size = rest;
    r->pool = &pool;
    r->prev = n;
    r->next = n->next;
    if (n->next) n->next->prev = r;
    n->next = r;
    n->size = size;
    pool.free_blocks.insert(r);
  }
  n->allocated = true;
  n->requested = bytes;
  ++stats_.allocs;
  stats_.current += static_cast<int64_t>(bytes);
  stats_.peak = std::max(stats_.peak, stats_.current);
  return Block{n->ptr, bytes, n};
}

void CachingAllocator::free(Block b) noexcept {
  if (!b.handle) return;
  BlockNode* n = static_cast<BlockNode*>(b.handle);
  Pool& pool = *n->pool;
  ++stats_.frees;
  stats_.current -= static_cast<int64_t>(n->requested);
  n->allocated = false;
  n->requested = 0;
  if (BlockNode* p = n->prev; p && !p->allocated) {
    pool.free_blocks.erase(p);
    p->size += n->size;
    p->next = n->next;
    if (n->next) n->next->prev = p;
    recycle(n);
    n = p;
  }
  if (BlockNode* q = n->next; q && !q->allocated) {
    pool.free_blocks.erase(q);
    n->size += q->size;
    n->next = q->next;
    if (q->next) q->next->prev = n;
    recycle(q);
  }
  pool.free_blocks.insert(n);
}

bool CachingAllocator::release_cached() {
  bool any = false;
  for (StreamPools& sp : streams_)
    for (Pool* pool : {sp.small.get(), sp.large.get()})
      for (auto it = pool->free_blocks.begin(); it != pool->free_blocks.end();) {
        BlockNode* n = *it;
        if (n->prev || n->next) {  // part of a segment that still has live blocks
          ++it;
          continue;
        }
        it = pool->free_blocks.erase(it);
        source_->free(n->ptr);
        segment_list_.erase(std::find(segment_list_.begin(), segment_list_.end(), n->ptr));
        ++stats_.raw_frees;
        stats_.reserved -= static_cast<int64_t>(n->size);
        --pool->segments;
        recycle(n);
        any = true;
      }
  return any;
}

void CachingAllocator::empty_cache() { release_cached(); }

void CachingAllocator::reset_peak() {
  stats_.peak = stats_.current;
  stats_.peak_reserved = stats_.reserved;
}

size_t CachingAllocator::num_segments() const {
  size_t n = 0;
  for (const StreamPools& sp : streams_) n += sp.small->segments + sp.large->segments;
  return n;
}

size_t CachingAllocator::num_free_blocks() const {
  size_t n = 0;
  for (const StreamPools& sp : streams_) n += sp.small->free_blocks.size() + sp.large->free_blocks.size();
  return n;
}

void CachingAllocator::out_of_memory(size_t requested, size_t rounded, size_t segment) {
  OutOfMemoryInfo info;
  info.who = "caching allocator";
  info.device = source_->device_name();
  info.requested = requested;
  info.request_note = fmt::format(" (rounded to {}, needing a new {} segment)", format_bytes(static_cast<int64_t>(rounded)),
                                  format_bytes(static_cast<int64_t>(segment)));
  source_->memory_info(info.device_free, info.device_total);
  info.held = fmt::format("allocated by this allocator {}, reserved {} (cache emptied and retried); by role: {}",
                          format_bytes(stats_.current), format_bytes(stats_.reserved), role_breakdown());
  info.advice = "Reduce the batch or model size, use in-place ReLU, or run inference without the tape.";
  throw OutOfMemoryError(out_of_memory_message(info));
}

}  // namespace tg
