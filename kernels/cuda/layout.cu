// transpose of up to 4 dims. Two kernels: when the permutation swaps the last two
// dims (a stack of matrix transposes, the common case in attention and in matmul
// gradients) a 32x32 shared-memory tile keeps both the reads and the writes
// coalesced; any other permutation is a gather over the output in order.
#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

using detail::grid_for;
using detail::kBlock;

struct Dims4 {
  int64_t od[kMaxRank];  // output dims, padded to 4 with leading 1s
  int64_t st[kMaxRank];  // input stride of each output dim
};

__global__ void transpose_gather_kernel(const float* x, float* y, Dims4 d, int64_t total) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    int64_t rem = idx, src = 0;
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      const int64_t i = rem % d.od[k];
      rem /= d.od[k];
      src += i * d.st[k];
    }
    y[idx] = x[src];
  }
}

// x is [batch, r, c] -> y [batch, c, r]. The +1 pads the tile against bank conflicts.
__global__ void transpose_tile_kernel(const float* x, float* y, int64_t batch, int64_t r, int64_t c) {
  pdl::prologue();
  __shared__ float tile[32][33];
  const int64_t tiles_r = (r + 31) / 32, tiles_c = (c + 31) / 32;
  const int64_t per_batch = tiles_r * tiles_c;
  for (int64_t t = blockIdx.x; t < batch * per_batch; t += gridDim.x) {
    const int64_t b = t / per_batch, tr = (t % per_batch) / tiles_c, tc = t % tiles_c;
    const float* xb = x + b * r * c;
    float* yb = y + b * r * c;
    for (int i = threadIdx.y; i < 32; i += blockDim.y) {
      const int64_t row = tr * 32 + i, col = tc * 32 + threadIdx.x;
      if (row < r && col < c) tile[i][threadIdx.x] = xb[row * c + col];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += blockDim.y) {
      const int64_t row = tc * 32 + i, col = tr * 32 + threadIdx.x;  // in y: [c, r]
      if (row < c && col < r) yb[row * r + col] = tile[threadIdx.x][i];
    }
    __syncthreads();
  }
}

}  // namespace

void transpose(const float* x, const int64_t* in_dims, int rank, const int* perm, float* y, cudaStream_t s) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= in_dims[d];
  if (total <= 0) return;
  bool identity = true;
  for (int d = 0; d < rank; ++d) identity = identity && perm[d] == d;
  if (identity) return copy(x, y, total, s);
  bool swap_last = rank >= 2 && perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
  for (int d = 0; d + 2 < rank; ++d) swap_last = swap_last && perm[d] == d;
  if (swap_last) {
    const int64_t r = in_dims[rank - 2], c = in_dims[rank - 1];
    const int64_t tiles = (total / (r * c)) * ((r + 31) / 32) * ((c + 31) / 32);
    const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
    detail::launch(TG_LAUNCH_SITE, transpose_tile_kernel, static_cast<int>(tiles < cap ? tiles : cap), dim3(32, 8), s, x, y, total / (r * c), r, c);
  } else {
    int64_t in_stride[kMaxRank];
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; --d) {
      in_stride[d] = st;
      st *= in_dims[d];
    }
    Dims4 d4{{1, 1, 1, 1}, {0, 0, 0, 0}};
    const int pad = kMaxRank - rank;
    for (int d = 0; d < rank; ++d) {
      d4.od[pad + d] = in_dims[perm[d]];
      d4.st[pad + d] = in_stride[perm[d]];
    }
    detail::launch(TG_LAUNCH_SITE, transpose_gather_kernel, grid_for(total), kBlock, s, x, y, d4, total);
  }
}

}  // namespace tg::kernels::cuda
