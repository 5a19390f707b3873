#pragma once
// Multi-tensor kernels (internal to kernels/cuda) cut their tensors into chunks of a fixed
// size and number the chunks of all tensors in order; first_chunk holds the prefix sums of
// the chunk counts (first_chunk[0] = 0, count + 1 entries). A block finds the tensor of
// its chunk by a binary search over them.
#include <cstdint>

#include <cuda_runtime.h>

namespace tg::kernels::cuda::detail {

// The last tensor in [0, count) whose first chunk is <= c.
__device__ __forceinline__ int tensor_of_chunk(const int64_t* first_chunk, int count, int64_t c) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_chunk[mid] <= c) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace tg::kernels::cuda::detail
