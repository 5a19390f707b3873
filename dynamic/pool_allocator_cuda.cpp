// The "pool" allocator: CUDA's stream-ordered allocator (cudaMallocFromPoolAsync
// / cudaFreeAsync) on a private cudaMemPool_t. Its release threshold is set to
// the maximum so that freed memory stays in the pool between iterations instead
// of going back to the driver at every synchronization; that makes it a cache
// run by the driver, to compare with our own caching allocator.
// Compiled only with TWOGRAPH_HAVE_CUDA.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "dynamic/allocator.h"
#include "kernels/backend.h"
#include "kernels/cuda/check.h"

#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#define TG_HAVE_CUDA_BACKEND_HEADER 1
#endif

namespace tg {

namespace {

class PoolAllocator final : public Allocator {
 public:
  PoolAllocator(const Backend& backend, int device, cudaStream_t stream) : backend_(backend), stream_(stream) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    TG_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    uint64_t threshold = UINT64_MAX;
    TG_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  ~PoolAllocator() override {
    // Outstanding frees are stream-ordered; wait for them before the pool goes.
    TG_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
    TG_CUDA_CHECK_NOTHROW(cudaMemPoolDestroy(pool_));
  }
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  const char* name() const override { return "pool"; }

  Block allocate(size_t bytes) override {
    void* p = nullptr;
    // A zero-byte request still gets a distinct pointer, like the other allocators.
    const cudaError_t e = cudaMallocFromPoolAsync(&p, std::max<size_t>(bytes, 1), pool_, stream_);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      oom(bytes);
    }
    if (e != cudaSuccess) cuda_detail::throw_cuda(e, "cudaMallocFromPoolAsync(&p, bytes, pool_, stream_)", __FILE__, __LINE__);
    ++s_.allocs;
    s_.current += static_cast<int64_t>(bytes);
    s_.peak = std::max(s_.peak, s_.current);
    sample_reserved();
    return Block{p, bytes, nullptr};
  }

  void free(Block b) noexcept override {
    if (!b.ptr) return;
    TG_CUDA_CHECK_NOTHROW(cudaFreeAsync(b.ptr, stream_));
    ++s_.frees;
    s_.current -= static_cast<int64_t>(b.size);
  }

  AllocatorStats stats() const override {
    const_cast<PoolAllocator*>(this)->sample_reserved();
    return s_;
  }
  void reset_peak() override {
    s_.peak = s_.current;
    s_.peak_reserved = s_.reserved;
  }
  void empty_cache() override {
    TG_CUDA_CHECK(cudaStreamSynchronize(stream_));
    TG_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
    sample_reserved();
  }

 private:
  // The pool does not tell us when it calls the driver; a growth of its
  // reservation is counted as one raw allocation and a shrink as one raw free.
  void sample_reserved() {
    uint64_t r = 0;
    if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &r) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    const int64_t now = static_cast<int64_t>(r);
    if (now > s_.reserved) ++s_.raw_allocs;
    if (now < s_.reserved) ++s_.raw_frees;
    s_.reserved = now;
    s_.peak_reserved = std::max(s_.peak_reserved, now);
  }

  [[noreturn]] void oom(size_t bytes) {
    OutOfMemoryInfo info;
    info.who = "pool allocator";
    info.device = backend_.name();
    info.requested = bytes;
    device_memory_info(backend_, info.device_free, info.device_total);
    sample_reserved();
    info.held = fmt::format("allocated {}, reserved by the pool {}; by role: {}", format_bytes(s_.current),
                            format_bytes(s_.reserved), role_breakdown());
    info.advice = "Reduce the batch or model size.";
    throw OutOfMemoryError(out_of_memory_message(info));
  }

  const Backend& backend_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  AllocatorStats s_;
};

}  // namespace

std::unique_ptr<Allocator> make_pool_allocator(Backend& backend) {
#ifdef TG_HAVE_CUDA_BACKEND_HEADER
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda)
    throw std::invalid_argument(fmt::format("allocator 'pool' needs the CUDA backend, got {}", backend.name()));
  int device = 0;
  TG_CUDA_CHECK(cudaGetDevice(&device));
  return std::make_unique<PoolAllocator>(backend, device, cuda->stream());
#else
  throw std::invalid_argument(fmt::format(
      "allocator 'pool' needs kernels/cuda/cuda_backend.h, which this build does not have (backend {})",
      backend.name()));
#endif
}

}  // namespace tg
