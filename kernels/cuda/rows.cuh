#pragma once
// The row-wise kernel frame (internal to kernels/cuda; softmax.cu, layernorm.cu and the
// cross-entropy kernels of loss.cu): a group of G threads owns one
// row of `cols` values; thread t handles columns t, t+G, t+2G, ... (coalesced). G is
// 32 (a warp per row, several rows per block, no barriers) or the block size (a block
// per row). With VPT > 0 each thread keeps its VPT values in registers, so the row is
// read from memory once; VPT == 0 is the fallback for very long rows that re-reads it.
// All reductions are fixed-order trees: the same inputs give the same bits.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda::detail {

// Loops over this thread's columns j = t + G*k; fully unrolled when VPT > 0, so
// register arrays indexed by k stay in registers.
#define TG_ROW_LOOP(k, j)                                                                   \
  _Pragma("unroll") for (int k = 0; k < (VPT > 0 ? VPT : static_cast<int>((cols + G - 1) / G)); ++k) \
    if (const int64_t j = t + static_cast<int64_t>(G) * k; j < cols)

// VPT == 0's pass over a row x of `cols` values, too long for the register cache: thread t
// takes chunks of kRowChunk consecutive columns, chunks t, t + G, t + 2G, ... in that order,
// loads a whole chunk, then calls use(j, x[j]) (widened) for each of its columns in order.
// One 2-byte load a thread at a time left such a row latency-bound; whole-chunk vector loads
// keep 16 bytes a thread in flight. The order of the uses, and so the bits, do not depend on
// where the row starts.
constexpr int kRowChunk = 8;

// How far x lies past a 4-element boundary, in elements (0 to 3).
template <typename T>
__device__ __forceinline__ int misalignment4(const T* x) {
  return static_cast<int>((reinterpret_cast<uintptr_t>(x) / sizeof(T)) & 3);
}

// Columns j0 .. j0 + 7 of x (widened; 0 past cols), where x lies `mis` elements past a
// 4-element boundary. An aligned row takes two 4-element loads. A row that is not (the
// unpadded 50257-word vocabulary) takes three aligned loads from x + j0 - mis and keeps the
// 8 it needs: eight scalar loads a thread 16 bytes apart would cost eight times the L1
// wavefronts. The first and last chunk of such a row, whose aligned span would reach past
// the row, load column by column.
template <typename T>
__device__ __forceinline__ void load_chunk(const T* x, int64_t j0, int64_t cols, int mis, float (&v)[kRowChunk]) {
  if (mis == 0 && j0 + kRowChunk <= cols) {
    const float4 a = load4_wide(x + j0), b = load4_wide(x + j0 + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else if (mis != 0 && j0 >= mis && j0 - mis + 12 <= cols) {
    const T* base = x + (j0 - mis);
    const float4 a = load4_wide(base), b = load4_wide(base + 4), c = load4_wide(base + 8);
    const float w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
#pragma unroll
    for (int u = 0; u < kRowChunk; ++u) v[u] = mis == 1 ? w[u + 1] : mis == 2 ? w[u + 2] : w[u + 3];
  } else {
#pragma unroll
    for (int u = 0; u < kRowChunk; ++u) v[u] = j0 + u < cols ? static_cast<float>(x[j0 + u]) : 0.0f;
  }
}

// Stores the 8 values of a whole chunk at y + j0 (j0 a multiple of 8): one 16-byte store of a
// 16-bit type where y is 16-byte aligned, two of f32 where y is aligned4; each rounded once to
// T, streaming (written once). Returns false, storing nothing, where y is not aligned so.
template <typename T>
__device__ __forceinline__ bool store_chunk(T* y, int64_t j0, const float (&v)[kRowChunk]) {
  if constexpr (sizeof(T) == 4) {
    if (!aligned4(y)) return false;
    store4_streaming(y + j0, make_float4(v[0], v[1], v[2], v[3]));
    store4_streaming(y + j0 + 4, make_float4(v[4], v[5], v[6], v[7]));
  } else {
    if ((reinterpret_cast<uintptr_t>(y) & 15) != 0) return false;
    const auto pack = [](float lo, float hi) {
      return static_cast<uint32_t>(narrow<T>(lo).bits) | (static_cast<uint32_t>(narrow<T>(hi).bits) << 16);
    };
    __stcs(reinterpret_cast<uint4*>(y + j0), make_uint4(pack(v[0], v[1]), pack(v[2], v[3]), pack(v[4], v[5]), pack(v[6], v[7])));
  }
  return true;
}

template <int G, typename T, typename Use>
__device__ __forceinline__ void row_chunks(const T* x, int64_t cols, int t, const Use& use) {
  const int mis = misalignment4(x);
  for (int64_t j0 = static_cast<int64_t>(t) * kRowChunk; j0 < cols; j0 += static_cast<int64_t>(G) * kRowChunk) {
    float v[kRowChunk];
    load_chunk(x, j0, cols, mis, v);
#pragma unroll
    for (int u = 0; u < kRowChunk; ++u)
      if (j0 + u < cols) use(j0 + u, v[u]);
  }
}

// row_chunks writing y[j] = f(j, x[j]) (rounded to T): a whole chunk of an aligned output row
// goes out in one or two vector stores rather than eight 2-byte stores 16 bytes apart (each
// 32-byte sector written in eight pieces). Each value is f's, wherever the row lies. A
// thread loads its chunk before storing it, so y may be x (in place).
template <int G, typename T, typename F>
__device__ __forceinline__ void row_chunks_map(const T* x, T* y, int64_t cols, int t, const F& f) {
  const int mis = misalignment4(x);
  for (int64_t j0 = static_cast<int64_t>(t) * kRowChunk; j0 < cols; j0 += static_cast<int64_t>(G) * kRowChunk) {
    float v[kRowChunk];
    load_chunk(x, j0, cols, mis, v);
#pragma unroll
    for (int u = 0; u < kRowChunk; ++u) v[u] = f(j0 + u, v[u]);
    if (j0 + kRowChunk <= cols && store_chunk(y, j0, v)) continue;
#pragma unroll
    for (int u = 0; u < kRowChunk; ++u)
      if (j0 + u < cols) y[j0 + u] = narrow<T>(v[u]);
  }
}

// The sum (kMax false) or maximum over the G threads of a row group.
template <int G, bool kMax>
__device__ __forceinline__ float group_reduce(float v, float* smem) {
  if constexpr (G == 32) {
    return kMax ? warp_max(v) : warp_sum(v);
  } else {
    return block_reduce<float, kMax>(v, smem);
  }
}
template <int G>
__device__ __forceinline__ float group_sum(float v, float* smem) {
  return group_reduce<G, false>(v, smem);
}
template <int G>
__device__ __forceinline__ float group_max(float v, float* smem) {
  return group_reduce<G, true>(v, smem);
}

// The register cache of one input row: cache(k, x[j]) on the first pass,
// get(k, src, j) afterwards (from registers, or from memory when VPT == 0).
template <int VPT>
struct RowCache {
  float v[VPT > 0 ? VPT : 1];
  __device__ __forceinline__ void put(int k, float x) {
    if constexpr (VPT > 0) v[k] = x;
  }
  template <typename T>
  __device__ __forceinline__ float get(int k, const T* src, int64_t j) const {
    if constexpr (VPT > 0) {
      return v[k];
    } else {
      return src[j];
    }
  }
};

// Row ops implement: template <int G, int VPT> __device__ void run(int64_t row, int t, float* smem) const;
template <int G, int VPT, typename Op>
__global__ void __launch_bounds__(G == 32 ? 256 : G) rows_kernel(Op op, int64_t rows) {
  pdl::prologue();
  __shared__ float smem[32];
  if constexpr (G == 32) {
    const int64_t per_block = blockDim.x / 32;
    const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
    for (int64_t r = blockIdx.x * per_block + threadIdx.x / 32; r < rows; r += step)
      op.template run<G, VPT>(r, static_cast<int>(threadIdx.x & 31), smem);
  } else {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) op.template run<G, VPT>(r, threadIdx.x, smem);
  }
}

template <int G, int VPT, typename Op>
void launch_rows_as(const Op& op, int64_t rows, cudaStream_t s) {
  if constexpr (G == 32) {
    detail::launch(TG_LAUNCH_SITE, rows_kernel<32, VPT, Op>, grid_for(rows * 32, 256), 256, s, op, rows);
  } else {
    const int64_t cap = static_cast<int64_t>(sm_count()) * (2048 / G);
    detail::launch(TG_LAUNCH_SITE, rows_kernel<G, VPT, Op>, static_cast<int>(rows < cap ? rows : cap), G, s, op, rows);
  }
}

// ---- The float4 frame: rows of at most 1024 columns with cols % 4 == 0 and every row
// pointer 16-byte aligned (8-byte for 16-bit elements: aligned4, storage.h, 4 per load). A warp per row; lane t owns the float4 chunks q = t + 32k
// (k < NV), columns 4q..4q+3, so one warp instruction moves 512 contiguous bytes and a
// lane has all NV loads of its row in flight before the first reduction. Compared with
// the scalar frame above this needs a quarter of the memory instructions and far fewer
// registers (no per-column address or bounds predicate), so more warps (rows) fit on
// an SM. The sums use a different (still fixed) order than the scalar frame, so the
// bits of a result can differ between an aligned and an unaligned copy of the same data;
// run to run they are the same.
// Ops implement: template <int NV> __device__ void run4(int64_t row, int t, int nq) const;
// nq = cols / 4 chunks; a chunk q >= nq is neither loaded nor stored nor summed.
#define TG_CHUNK_LOOP(k) _Pragma("unroll") for (int k = 0; k < NV; ++k) if (t + 32 * k < nq)
#define TG_LANE_LOOP(i) _Pragma("unroll") for (int i = 0; i < 4; ++i)

// The first column of chunk k of lane t.
__device__ __forceinline__ int chunk_col(int t, int k) { return 4 * (t + 32 * k); }

template <typename T>
__device__ __forceinline__ void load4(const T* p, float (&o)[4]) {
  const float4 a = load4_wide(p);
  o[0] = a.x;
  o[1] = a.y;
  o[2] = a.z;
  o[3] = a.w;
}

// All loads of the row are issued here, before anything uses them.
template <int NV, typename T>
__device__ __forceinline__ void load_row4(const T* r, int t, int nq, float (&v)[NV][4]) {
  TG_CHUNK_LOOP(k) load4(r + chunk_col(t, k), v[k]);
}

// Outputs are written once and not read again by this kernel: streaming stores
// (evict-first) keep them from pushing the inputs still being read out of L2.
template <int NV, typename T>
__device__ __forceinline__ void store_row4(T* r, int t, int nq, const float (&v)[NV][4]) {
  TG_CHUNK_LOOP(k) store4_streaming(r + chunk_col(t, k), make_float4(v[k][0], v[k][1], v[k][2], v[k][3]));
}

// Four independent accumulators (one per float4 lane) shorten the dependent add chain;
// combined in a fixed order.
__device__ __forceinline__ float sum4(const float (&a)[4]) { return (a[0] + a[1]) + (a[2] + a[3]); }

// Three warp sums interleaved so their shuffle latencies overlap; each is the same
// tree as warp_sum.
__device__ __forceinline__ void warp_sum3(float& a, float& b, float& c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
    c += __shfl_xor_sync(0xffffffffu, c, o);
  }
}

template <int NV, typename Op>
__global__ void __launch_bounds__(256) rows4_kernel(Op op, int64_t rows, int nq) {
  pdl::prologue();
  const int64_t step = static_cast<int64_t>(gridDim.x) * 8;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32; r < rows; r += step)
    op.template run4<NV>(r, static_cast<int>(threadIdx.x & 31), nq);
}

// One warp per row and no grid-stride cap: the block scheduler refills SMs as blocks
// finish, so the tail is one block, and no wave of blocks waits behind a capped grid
// that does not fit the SMs at this kernel's occupancy.
template <int NV, typename Op>
void launch_rows4_as(const Op& op, int64_t rows, int64_t cols, cudaStream_t s) {
  const int64_t blocks = (rows + 7) / 8;
  const int grid = static_cast<int>(blocks < 0x7fffffff ? blocks : 0x7fffffff);
  detail::launch(TG_LAUNCH_SITE, rows4_kernel<NV, Op>, grid, 256, s, op, rows, static_cast<int>(cols / 4));
}

// Picks the group size and the register count from the row length. `vec_ok`: every
// row pointer of the op is aligned4 (then cols % 4 == 0 makes every row so). The choice
// does not depend on the element type, so a 16-bit row sums in its f32 form's order.
template <typename Op>
void launch_rows(const Op& op, int64_t rows, int64_t cols, bool vec_ok, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  if (vec_ok && cols % 4 == 0 && cols <= 1024) {
    if (cols <= 128) return launch_rows4_as<1>(op, rows, cols, s);
    if (cols <= 256) return launch_rows4_as<2>(op, rows, cols, s);
    if (cols <= 512) return launch_rows4_as<4>(op, rows, cols, s);
    return launch_rows4_as<8>(op, rows, cols, s);
  }
  if (cols <= 32) return launch_rows_as<32, 1>(op, rows, s);
  if (cols <= 64) return launch_rows_as<32, 2>(op, rows, s);
  if (cols <= 128) return launch_rows_as<32, 4>(op, rows, s);
  if (cols <= 256) return launch_rows_as<32, 8>(op, rows, s);
  if (cols <= 512) return launch_rows_as<32, 16>(op, rows, s);
  if (cols <= 1024) return launch_rows_as<32, 32>(op, rows, s);
  if (cols <= 2048) return launch_rows_as<256, 8>(op, rows, s);
  if (cols <= 4096) return launch_rows_as<512, 8>(op, rows, s);
  if (cols <= 8192) return launch_rows_as<1024, 8>(op, rows, s);
  return launch_rows_as<1024, 0>(op, rows, s);
}

}  // namespace tg::kernels::cuda::detail
