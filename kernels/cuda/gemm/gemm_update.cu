// matmul_sgd_momentum: the SGD-momentum update of a weight whose gradient is a^T dz, with
// the gradient computed in the update's own kernel and never stored (kernels/cpu/optimizer.cpp
// is the reference: the product, then sgd_momentum).
//
// Why a GEMM of our own: cuBLASLt's epilogues write one output, so with cuBLASLt the
// gradient goes to memory and a second kernel reads it back with the parameter and the
// velocity (five floats an element), and that kernel cannot run beside cuBLASLt's FP32 GEMMs.
// Here the epilogue of each 128 x 128 tile applies the update while other tiles are still
// multiplying. It pays only because the GEMM keeps pace with cuBLASLt's FP32 kernel
// (CUTLASS's SIMT SGEMM) on the large weight gradients: dev/cuda/sgemm_update.cu
// measures every choice below against it, and docs/compiler.md explains them.
//
// The kernel (fast path: k and n multiples of 128, rows of 16, 16-byte aligned rows):
//  - out[i][j] = sum over r of a[r][i] dz[r][j]: both operands are read along r (the batch)
//    in rows, so a k step of a tile is the outer product of two row segments;
//  - 128 threads, each 16 x 8 results; operands copied global -> shared by cp.async through
//    4 stages of 16 rows, the copies' addresses advanced tile by tile;
//  - CUTLASS's multistage main loop (kernels/cuda/gemm/gemm_simt.cuh): two fragment buffers (the
//    next k step's shared loads issue before this step's products) and the stage switch
//    inside the last k step;
//  - a k step's products in serpentine order (odd rows right to left), which through the
//    register allocation decides how many multiply-adds wait on a register bank;
//  - each output one chain of fused multiply-adds over r in order, as cuBLASLt's FP32 kernel
//    computes it for these shapes, so the gradient has its bits on the probe's data;
//  - the epilogue loads the velocity and parameter of 4 of the thread's rows before updating
//    any, so a wave of blocks ending together keeps enough loads in flight.
// Other shapes take a plain kernel (a thread an element, the same chain and update): correct
// and slow; the optimizer pass only fuses shapes of the fast path (gemm_update_fast_shape).
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda/gemm/gemm_simt.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/sgd_step.cuh"
#include "kernels/gemm/gemm_update_shape.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kTile = 128, kThreads = 128, kStep = 16, kStages = 4, kBatchRows = 4;
constexpr int kRowQuads = kTile * 4 / kThreads, kRows = 4 * kRowQuads, kCols = 8;
constexpr int kRowApart = kTile / kRowQuads;  // a thread's row quads are this far apart
constexpr int kQuadsPerRow = kTile / 4;       // float4 copies per operand row of a tile
constexpr int kCopies = kStep * kQuadsPerRow / kThreads, kCopyRowsApart = kThreads / kQuadsPerRow;
constexpr size_t kSmemBytes = sizeof(float) * kStages * kStep * 2 * kTile;
static_assert(kTile == kGemmUpdateTile && kStep == kGemmUpdateStep, "the fast shapes are this kernel's tiles");

// Product s of a k step (16 rows x 8 columns) in serpentine order.
__device__ constexpr int2 serpentine(int s) {
  return {s / kCols, (s / kCols) % 2 ? kCols - 1 - s % kCols : s % kCols};
}

__global__ void __launch_bounds__(kThreads, 2)
    gemm_update_tiles(const float* __restrict__ a, const float* __restrict__ dz, float* __restrict__ v,
                      float* __restrict__ p, int m, int n, int rows, float lr, float momentum) {
  pdl::prologue();
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                             // [kStages][kStep][kTile]
  float* bs = smem + kStages * kStep * kTile;  // [kStages][kStep][kTile]
  const int tid = threadIdx.x;
  const int row0 = tid / 16 * 4, col0 = tid % 16 * 4;  // the thread's first row and column in the tile
  const int tiles = rows / kStep;
  const int col_tiles = n / kTile, out_tiles = col_tiles * (m / kTile);
  const long long a_apart = static_cast<long long>(kCopyRowsApart) * m, b_apart = static_cast<long long>(kCopyRowsApart) * n;
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(as + tid / kQuadsPerRow * kTile + tid % kQuadsPerRow * 4));
  const unsigned sb = static_cast<unsigned>(__cvta_generic_to_shared(bs + tid / kQuadsPerRow * kTile + tid % kQuadsPerRow * 4));
  // Element offset of the thread's float4 g (its row g / 2, column quad g % 2) in the tile at (i0, j0).
  auto at_group = [&](int i0, int j0, int g) {
    const int r = g / 2, h = g % 2;
    return static_cast<long long>(i0 + kRowApart * (r / 4) + row0 + r % 4) * n + j0 + 64 * h + col0;
  };
  // The block's tile from its linear index, in a loop of one pass. Written so, rather than
  // as (blockIdx.y, blockIdx.x) directly, the B stages get their own base register in the
  // PTX instead of an offset from A's, which makes the kernel faster at the same bits. Keep
  // the form unless dev/cuda/gemm_update_runtime.cu says otherwise.
  const int first = static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x);
  for (int tile_at = first; tile_at < out_tiles; tile_at += out_tiles) {
    const int i0 = tile_at / col_tiles * kTile, j0 = tile_at % col_tiles * kTile;
    const float* ga = a + static_cast<long long>(tid / kQuadsPerRow) * m + i0 + tid % kQuadsPerRow * 4;
    const float* gb = dz + static_cast<long long>(tid / kQuadsPerRow) * n + j0 + tid % kQuadsPerRow * 4;
    int write_stage = 0;
    // The copies of the next k tile into the next stage, as one commit group (an empty one
    // past the last tile keeps the wait counts uniform). Tiles are issued in order.
    auto issue = [&](int tile) {
      if (tile < tiles) {
#pragma unroll
        for (int l = 0; l < kCopies; ++l) {
          const unsigned at = 4u * static_cast<unsigned>(write_stage * kStep * kTile + l * kCopyRowsApart * kTile);
          cp_async16(sa + at, ga + l * a_apart);
          cp_async16(sb + at, gb + l * b_apart);
        }
        ga += static_cast<long long>(kStep) * m;
        gb += static_cast<long long>(kStep) * n;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
      cp_async_commit();
    };
    float av[2][kRows], bv[2][kCols];
    auto load_fragments = [&](int buf, int stage, int k) {
      load_kmajor_fragments<kRowApart, 64>(av[buf], bv[buf], as + (stage * kStep + k) * kTile,
                                           bs + (stage * kStep + k) * kTile, row0, col0);
    };
    float acc[kRows][kCols] = {};
    simt_main_loop<kStep, kStages>(tiles, acc, av, bv, issue, load_fragments, serpentine, [](int, int) {});
    // The update: thread row r is tile row kRowApart * (r / 4) + row0 + r % 4, its columns
    // col0 + 64h + {0..3}.
#pragma unroll
    for (int r0 = 0; r0 < kRows; r0 += kBatchRows) {
      float4 vel[kBatchRows][2], par[kBatchRows][2];
      long long at[kBatchRows][2];
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          at[r][h] = at_group(i0, j0, 2 * (r0 + r) + h);
          vel[r][h] = *reinterpret_cast<const float4*>(v + at[r][h]);
          par[r][h] = *reinterpret_cast<const float4*>(p + at[r][h]);
        }
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float* g = &acc[r0 + r][4 * h];
          sgd_momentum_step(par[r][h].x, g[0], vel[r][h].x, lr, momentum);
          sgd_momentum_step(par[r][h].y, g[1], vel[r][h].y, lr, momentum);
          sgd_momentum_step(par[r][h].z, g[2], vel[r][h].z, lr, momentum);
          sgd_momentum_step(par[r][h].w, g[3], vel[r][h].w, lr, momentum);
          *reinterpret_cast<float4*>(v + at[r][h]) = vel[r][h];
          *reinterpret_cast<float4*>(p + at[r][h]) = par[r][h];
        }
    }
  }
}

// The same update with the product's k iterations (all tiles' k steps, in tile order) split
// evenly over `gridDim.x` persistent blocks (stream-K). A block's range starts and ends inside
// tiles at offsets that differ from block to block, so the blocks reach their tiles' updates
// at different times and one block's update traffic overlaps the others' products, where in
// gemm_update_tiles every block of a wave updates at once. A tile split between blocks b and
// b + 1 (ranges are at least a tile long, so at most in two) is a head, k steps [0, s), that
// block b computes first of all and leaves in partials[b], and a tail [s, end) that block
// b + 1 computes last and adds to the head (head + tail: one more rounding than one chain, so
// its bits differ from gemm_update_tiles's) before the update. Block b + 1 waits for flags[b]
// only at its end, and only on a block of lower index: blocks start in index order, so the
// block it waits for has started, and it waits on nothing before leaving its head. The
// flags return to zero when read, for the next launch. The tile body repeats
// gemm_update_tiles's rather than sharing a function with it: that kernel's code generation
// is sensitive to its form (its comment), and a shared body changed its PTX.
__global__ void __launch_bounds__(kThreads, 2)
    gemm_update_streamk(const float* __restrict__ a, const float* __restrict__ dz, float* __restrict__ v,
                        float* __restrict__ p, int m, int n, int rows, float lr, float momentum,
                        float* __restrict__ partials, unsigned* __restrict__ flags) {
  pdl::prologue();
  extern __shared__ __align__(16) float smem[];
  float* as = smem;                             // [kStages][kStep][kTile]
  float* bs = smem + kStages * kStep * kTile;  // [kStages][kStep][kTile]
  const int tid = threadIdx.x;
  const int row0 = tid / 16 * 4, col0 = tid % 16 * 4;  // the thread's first row and column in the tile
  const int tiles = rows / kStep;  // k steps of an output tile
  const int col_tiles = n / kTile, out_tiles = col_tiles * (m / kTile);
  const long long a_apart = static_cast<long long>(kCopyRowsApart) * m, b_apart = static_cast<long long>(kCopyRowsApart) * n;
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(as + tid / kQuadsPerRow * kTile + tid % kQuadsPerRow * 4));
  const unsigned sb = static_cast<unsigned>(__cvta_generic_to_shared(bs + tid / kQuadsPerRow * kTile + tid % kQuadsPerRow * 4));
  const int block = static_cast<int>(blockIdx.x);
  const long long total = static_cast<long long>(out_tiles) * tiles;
  const long long begin = total * block / gridDim.x, end = total * (block + 1) / gridDim.x;
  // The block's pieces from the tile holding its last k step down to the one holding its first.
  for (long long tile_at = (end - 1) / tiles; tile_at >= begin / tiles; --tile_at) {
    const long long k0 = tile_at * tiles;
    const int kb = static_cast<int>(begin > k0 ? begin - k0 : 0), ke = static_cast<int>(end < k0 + tiles ? end - k0 : tiles);
    const int i0 = static_cast<int>(tile_at / col_tiles) * kTile, j0 = static_cast<int>(tile_at % col_tiles) * kTile;
    cp_async_wait<0>();
    __syncthreads();  // every thread done with the last piece's stages
    const float* ga = a + static_cast<long long>(kb * kStep + tid / kQuadsPerRow) * m + i0 + tid % kQuadsPerRow * 4;
    const float* gb = dz + static_cast<long long>(kb * kStep + tid / kQuadsPerRow) * n + j0 + tid % kQuadsPerRow * 4;
    const int steps = ke - kb;
    int write_stage = 0;
    auto issue = [&](int tile) {
      if (tile < steps) {
#pragma unroll
        for (int l = 0; l < kCopies; ++l) {
          const unsigned at = 4u * static_cast<unsigned>(write_stage * kStep * kTile + l * kCopyRowsApart * kTile);
          cp_async16(sa + at, ga + l * a_apart);
          cp_async16(sb + at, gb + l * b_apart);
        }
        ga += static_cast<long long>(kStep) * m;
        gb += static_cast<long long>(kStep) * n;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
      cp_async_commit();
    };
    float av[2][kRows], bv[2][kCols];
    auto load_fragments = [&](int buf, int stage, int k) {
      load_kmajor_fragments<kRowApart, 64>(av[buf], bv[buf], as + (stage * kStep + k) * kTile,
                                           bs + (stage * kStep + k) * kTile, row0, col0);
    };
    float acc[kRows][kCols] = {};
    simt_main_loop<kStep, kStages>(steps, acc, av, bv, issue, load_fragments, serpentine, [](int, int) {});
    if (ke < tiles) {  // a head (the block's first piece): block + 1 finishes the tile
      float* const slot = partials + static_cast<long long>(block) * kTile * kTile;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int c = 0; c < kCols; ++c) __stcg(slot + (r * kCols + c) * kThreads + tid, acc[r][c]);
      __syncthreads();  // every thread's stores issued before the flag says they are there
      if (tid == 0) {
        __threadfence();
        atomicExch(flags + block, 1u);
      }
      continue;
    }
    if (kb > 0) {  // a tail (the block's last piece): add the head block - 1 left
      if (tid == 0) {
        while (atomicAdd(flags + block - 1, 0u) == 0u) __nanosleep(64);
        __threadfence();
      }
      __syncthreads();
      const float* const slot = partials + static_cast<long long>(block - 1) * kTile * kTile;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] = __fadd_rn(__ldcg(slot + (r * kCols + c) * kThreads + tid), acc[r][c]);
      if (tid == 0) flags[block - 1] = 0u;  // for the next launch (this one reads it no more)
    }
    auto at_group = [&](int g) {
      const int r = g / 2, h = g % 2;
      return static_cast<long long>(i0 + kRowApart * (r / 4) + row0 + r % 4) * n + j0 + 64 * h + col0;
    };
#pragma unroll
    for (int r0 = 0; r0 < kRows; r0 += kBatchRows) {
      float4 vel[kBatchRows][2], par[kBatchRows][2];
      long long at[kBatchRows][2];
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          at[r][h] = at_group(2 * (r0 + r) + h);
          vel[r][h] = *reinterpret_cast<const float4*>(v + at[r][h]);
          par[r][h] = *reinterpret_cast<const float4*>(p + at[r][h]);
        }
#pragma unroll
      for (int r = 0; r < kBatchRows; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float* g = &acc[r0 + r][4 * h];
          sgd_momentum_step(par[r][h].x, g[0], vel[r][h].x, lr, momentum);
          sgd_momentum_step(par[r][h].y, g[1], vel[r][h].y, lr, momentum);
          sgd_momentum_step(par[r][h].z, g[2], vel[r][h].z, lr, momentum);
          sgd_momentum_step(par[r][h].w, g[3], vel[r][h].w, lr, momentum);
          *reinterpret_cast<float4*>(v + at[r][h]) = vel[r][h];
          *reinterpret_cast<float4*>(p + at[r][h]) = par[r][h];
        }
    }
  }
}

// Any shape: a thread per element of the [m, n] weight, the same chain over the rows in
// order and the same update.
__global__ void gemm_update_elements(const float* a, const float* dz, float* v, float* p, int64_t m, int64_t n,
                                     int64_t rows, float lr, float momentum) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < m * n; e += stride) {
    const int64_t i = e / n, j = e % n;
    float acc = 0.0f;
    for (int64_t r = 0; r < rows; ++r) acc = fmaf(a[r * m + i], dz[r * n + j], acc);
    sgd_momentum_step(p[e], acc, v[e], lr, momentum);
  }
}

}  // namespace

void matmul_sgd_momentum(float* p, const float* a, float* v, const float* dz, int64_t rows, int64_t m, int64_t n,
                         float lr, float momentum, cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  const bool aligned = detail::aligned16(a) && detail::aligned16(dz) && detail::aligned16(v) && detail::aligned16(p);
  if (!gemm_update_fast_shape(rows, m, n) || !aligned) {
    detail::launch(TG_LAUNCH_SITE, gemm_update_elements, detail::grid_for(m * n), detail::kBlock, s, a, dz, v, p, m,
                   n, rows, lr, momentum);
    return;
  }
  // Past the default 48 KiB of dynamic shared memory: once per device and process.
  static std::once_flag opted_in[64];
  int device = 0;
  TG_CUDA_CHECK(cudaGetDevice(&device));
  std::call_once(opted_in[device % 64], [] {
    TG_CUDA_CHECK(cudaFuncSetAttribute(gemm_update_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSmemBytes)));
  });
  const dim3 grid(static_cast<unsigned>(n / kTile), static_cast<unsigned>(m / kTile));
  detail::launch_smem(TG_LAUNCH_SITE, gemm_update_tiles, grid, kThreads, kSmemBytes, s, a, dz, v, p,
                      static_cast<int>(m), static_cast<int>(n), static_cast<int>(rows), lr, momentum);
}


namespace {

// The stream-K workspace: kStreamKMaxBlocks flags (fixed at its start, so that a buffer serves
// every shape and stays zero between calls), then a 128 x 128 partial tile a block.
constexpr int kStreamKMaxBlocks = 4096;
constexpr size_t kStreamKFlagBytes = kStreamKMaxBlocks * sizeof(unsigned);

// The kernel's dynamic shared memory opted into past the default 48 KiB, and how many of its
// blocks the device then holds at once: once per device and process, since the op's dispatch
// comes here for every update.
int streamk_resident_blocks() {
  static std::once_flag once[64];
  static int resident[64];
  int device = 0;
  TG_CUDA_CHECK(cudaGetDevice(&device));
  std::call_once(once[device % 64], [device] {
    int sms = 0, per_sm = 0;
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TG_CUDA_CHECK(cudaFuncSetAttribute(gemm_update_streamk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSmemBytes)));
    TG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_update_streamk, kThreads, kSmemBytes));
    resident[device % 64] = sms * std::max(per_sm, 1);
  });
  return resident[device % 64];
}

// The stream-K kernel's blocks for a weight [m, n]: `blocks` if given, else as many as the
// device holds at once; at most one per output tile (so a block's range is at least a tile
// long) and at most kStreamKMaxBlocks.
int streamk_blocks(int64_t m, int64_t n, int blocks) {
  const int resident = streamk_resident_blocks();  // also the opt-in the launch needs
  if (blocks <= 0) blocks = resident;
  const int64_t out_tiles = (m / kTile) * (n / kTile);
  return static_cast<int>(std::min<int64_t>({blocks, out_tiles, kStreamKMaxBlocks}));
}

size_t streamk_bytes(int blocks) { return kStreamKFlagBytes + static_cast<size_t>(blocks) * kTile * kTile * sizeof(float); }

}  // namespace

size_t matmul_sgd_momentum_streamk_workspace(int64_t rows, int64_t m, int64_t n, int blocks) {
  if (rows <= 0) return 0;
  if (m <= 0 || n <= 0) return streamk_bytes(std::min(blocks > 0 ? blocks : streamk_resident_blocks(), kStreamKMaxBlocks));
  if (!gemm_update_fast_shape(rows, m, n)) return 0;
  return streamk_bytes(streamk_blocks(m, n, blocks));
}

void matmul_sgd_momentum_streamk(float* p, const float* a, float* v, const float* dz, int64_t rows, int64_t m,
                                 int64_t n, float lr, float momentum, void* workspace, size_t workspace_bytes,
                                 int blocks, cudaStream_t s) {
  const bool aligned = detail::aligned16(a) && detail::aligned16(dz) && detail::aligned16(v) && detail::aligned16(p);
  if (!gemm_update_fast_shape(rows, m, n) || !aligned || workspace == nullptr) {
    matmul_sgd_momentum(p, a, v, dz, rows, m, n, lr, momentum, s);
    return;
  }
  const int b = streamk_blocks(m, n, blocks);
  if (workspace_bytes < streamk_bytes(b))
    // (std::to_string, not fmt: including fmt here changes gemm_update_tiles's PTX)
    throw std::invalid_argument("matmul_sgd_momentum_streamk: " + std::to_string(b) + " blocks need " +
                                std::to_string(streamk_bytes(b)) + " bytes of workspace, given " +
                                std::to_string(workspace_bytes) +
                                "; size it with matmul_sgd_momentum_streamk_workspace");
  unsigned* flags = static_cast<unsigned*>(workspace);
  float* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + kStreamKFlagBytes);
  detail::launch_smem(TG_LAUNCH_SITE, gemm_update_streamk, dim3(static_cast<unsigned>(b)), kThreads, kSmemBytes, s, a, dz,
                      v, p, static_cast<int>(m), static_cast<int>(n), static_cast<int>(rows), lr, momentum, partials,
                      flags);
}

}  // namespace tg::kernels::cuda
