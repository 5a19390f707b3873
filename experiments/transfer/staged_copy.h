#pragma once
// A pageable host <-> device copy done by hand, the way a framework's data loader
// does it: through two pinned staging chunks, so that the CPU copy of one chunk
// overlaps the DMA of the other. cudaMemcpy from pageable memory does the same
// internally, but with small staging buffers and one CPU thread; here the chunk
// size and the number of copy threads are ours to choose.
#include <cstddef>

#include "kernels/parallel_memcpy.h"
#include "kernels/cuda/raii.h"

namespace tg::transfer {

class StagedCopier {
 public:
  StagedCopier(size_t chunk_bytes, int copy_threads);  // allocates 2 x chunk_bytes pinned, once

  // Both return when the data is at its destination.
  void h2d(void* device_dst, const void* host_src, size_t bytes);
  void d2h(void* host_dst, const void* device_src, size_t bytes);

  size_t chunk_bytes() const { return chunk_; }
  int copy_threads() const { return memcpy_.threads(); }

 private:
  size_t chunk_;
  cuda::PinnedBuffer stage_[2];
  cuda::Stream stream_[2];
  cuda::Event dma_done_[2];  // the last DMA that read or wrote stage_[i] has finished
  ParallelMemcpy memcpy_;
};

}  // namespace tg::transfer
