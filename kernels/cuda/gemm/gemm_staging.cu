// The copies of a staged GEMM (kernels/gemm/gemm_staging.h): a matrix into a buffer of
// padded extents, zeros in the padding, and the product's part back out. Consecutive
// threads take consecutive elements of a row, so each warp reads and writes one contiguous
// run whatever the leading dims' alignment.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/gemm/gemm_staging.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pdl.cuh"

namespace tg::kernels::cuda {

namespace {

constexpr int kUnroll = 4;  // elements a thread, a block's width apart

template <typename E>
__global__ void __launch_bounds__(256) copy_padded_kernel(const E* src, int64_t src_ld, int64_t src_rows,
                                                          int64_t src_cols, E* dst, int64_t dst_ld, int64_t dst_rows,
                                                          int64_t dst_cols) {
  pdl::prologue();
  const int64_t chunk = static_cast<int64_t>(blockDim.x) * kUnroll;
  for (int64_t r = blockIdx.y; r < dst_rows; r += gridDim.y) {
    const E* s = src + r * src_ld;
    E* d = dst + r * dst_ld;
    const bool row_in = r < src_rows;
    for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * chunk + threadIdx.x; c0 < dst_cols;
         c0 += static_cast<int64_t>(gridDim.x) * chunk) {
      E v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t c = c0 + static_cast<int64_t>(u) * blockDim.x;
        v[u] = row_in && c < src_cols ? s[c] : E{0};
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t c = c0 + static_cast<int64_t>(u) * blockDim.x;
        if (c < dst_cols) d[c] = v[u];
      }
    }
  }
}

template <typename E>
void launch_copy(const void* src, int64_t src_ld, int64_t src_rows, int64_t src_cols, void* dst, int64_t dst_ld,
                 int64_t dst_rows, int64_t dst_cols, cudaStream_t s) {
  const int64_t chunk = int64_t{detail::kBlock} * kUnroll;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((dst_cols + chunk - 1) / chunk, 1024)),
                  static_cast<unsigned>(std::min<int64_t>(dst_rows, 65535)));
  detail::launch(TG_LAUNCH_SITE, copy_padded_kernel<E>, grid, detail::kBlock, s, static_cast<const E*>(src), src_ld,
                 src_rows, src_cols, static_cast<E*>(dst), dst_ld, dst_rows, dst_cols);
}

}  // namespace

void copy_padded(const void* src, int64_t src_ld, int64_t src_rows, int64_t src_cols, void* dst, int64_t dst_ld,
                 int64_t dst_rows, int64_t dst_cols, int esize, cudaStream_t s) {
  if (dst_rows <= 0 || dst_cols <= 0) return;
  if (esize == 2) return launch_copy<uint16_t>(src, src_ld, src_rows, src_cols, dst, dst_ld, dst_rows, dst_cols, s);
  if (esize == 4) return launch_copy<uint32_t>(src, src_ld, src_rows, src_cols, dst, dst_ld, dst_rows, dst_cols, s);
  throw std::invalid_argument("copy_padded: elements of 2 or 4 bytes only");
}

}  // namespace tg::kernels::cuda
