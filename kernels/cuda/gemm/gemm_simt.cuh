#pragma once
// The main loop of the SIMT GEMMs that keep pace with cuBLASLt's FP32 kernel: matmul_sgd_momentum's
// (kernels/cuda/gemm/gemm_update.cu) and the probes that chose it and try its next layouts
// (dev/cuda/sgemm_update.cu, sgemm_dgrad.cu). Each output tile is kRows x kCols
// results a thread, accumulated over k steps of kStep rows copied global -> shared by cp.async
// through kStages stages. The kernels differ in their copies, their fragment loads and the
// order of a step's products, which they pass in; the loop is CUTLASS's multistage one:
//  - two fragment buffers: the shared-memory loads of k step k + 1 issue before the products
//    of step k, so their latency hides behind them;
//  - the stage switch (wait for the next tile's copies, then the barrier) inside the tile's
//    last k step, before its products, so the next tile's first fragments load while the last
//    products of this one issue; the barrier also frees the stage just read, which the next
//    tile's first k step refills;
//  - each output one chain of fused multiply-adds over k in order.
#include <cuda_runtime.h>

namespace tg::kernels::cuda {

// 16 (or 4) bytes global -> shared, asynchronously; the shared address as __cvta_generic_to_shared gives it.
__device__ __forceinline__ void cp_async16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// The fragments of one k step from k-major shared tiles (a_row, b_row: row k of a stage's A
// and B tiles), for a thread whose results are kRows x kCols: kRows / 4 float4s of A's row,
// kRowApart apart from row0, and kCols / 4 of B's, kColApart apart from col0.
template <int kRowApart, int kColApart, int kRows, int kCols>
__device__ __forceinline__ void load_kmajor_fragments(float (&av)[kRows], float (&bv)[kCols], const float* a_row,
                                                      const float* b_row, int row0, int col0) {
#pragma unroll
  for (int q = 0; q < kRows / 4; ++q) {
    const float4 x = *reinterpret_cast<const float4*>(a_row + kRowApart * q + row0);
    av[4 * q] = x.x, av[4 * q + 1] = x.y, av[4 * q + 2] = x.z, av[4 * q + 3] = x.w;
  }
#pragma unroll
  for (int h = 0; h < kCols / 4; ++h) {
    const float4 x = *reinterpret_cast<const float4*>(b_row + kColApart * h + col0);
    bv[4 * h] = x.x, bv[4 * h + 1] = x.y, bv[4 * h + 2] = x.z, bv[4 * h + 3] = x.w;
  }
}

// The loop over `tiles` k tiles:
//   issue(tile)               the copies of k tile `tile` into the next stage as one commit
//                             group (an empty group past the last tile); tiles come in order;
//   load(buf, stage, k)       av[buf], bv[buf] from row k of shared stage `stage`;
//   order(s)                  product s of a k step as {row, column};
//   at_step(tile, k)          anything else a k step does, before its products (the probes'
//                             prefetch; the kernels pass a no-op).
template <int kStep, int kStages, int kRows, int kCols, typename Issue, typename Load, typename Order,
          typename AtStep>
__device__ __forceinline__ void simt_main_loop(int tiles, float (&acc)[kRows][kCols], const float (&av)[2][kRows],
                                               const float (&bv)[2][kCols], Issue&& issue, Load&& load, Order order,
                                               AtStep&& at_step) {
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) issue(t);
  cp_async_wait<kStages - 2>();
  __syncthreads();
  load(0, 0, 0);
  int stage = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    const int next_stage = stage + 1 == kStages ? 0 : stage + 1;
#pragma unroll
    for (int k = 0; k < kStep; ++k) {
      if (k == kStep - 1) {
        cp_async_wait<kStages - 2>();
        __syncthreads();  // tile + 1's copies visible; every thread done reading this stage
      }
      // Past the last tile this reads a stage no copy filled; the values are never used.
      if (k + 1 < kStep) load((k + 1) % 2, stage, k + 1);
      else load(0, next_stage, 0);
      if (k == 0) issue(tile + kStages - 1);  // into the stage the last barrier freed
      at_step(tile, k);
#pragma unroll
      for (int s = 0; s < kRows * kCols; ++s) {
        const int2 rc = order(s);
        acc[rc.x][rc.y] = fmaf(av[k % 2][rc.x], bv[k % 2][rc.y], acc[rc.x][rc.y]);
      }
    }
    stage = next_stage;
  }
}

}  // namespace tg::kernels::cuda
