// The skinny-GEMM kernels of the CUDA backend: GEMM-family products with one thin side,
// too large for the small-GEMM kernel (gemm_small.cu), that cuBLASLt's FP32 kernels tile
// poorly because their tiles are wide in every dimension:
//  - an inner dimension of at most 16 (skinny_k: an outer product of thin operands, e.g. the
//    input gradient of a layer 10 wide, [1024, 10] x [10, 4096], 16 MB written);
//  - at most 16 output columns over a long k (skinny_n: that layer's forward, [1024, 4096] x
//    [4096, 10], 16 MB read; skinny_nt, A transposed: its weight gradient x^T dz, [4096, 1024]
//    x [1024, 10], with the bias gradient).
// Each is memory-bound in principle: the bytes of the wide operand (and of the result and the
// epilogue's operand), once. What keeps a kernel near that is few instructions per
// multiply-add and the thin operand's values reaching every thread cheaply, so:
//  - the thin operand goes through shared memory, copied as one run of 16-byte copies where
//    it is stored densely (copy_thin_rows); a value there serves 8 rows (skinny_n) or 4
//    columns (skinny_nt) of products;
//  - each thread loads the wide operand's values for a whole slice before the slice's
//    products (the next slice's during this one's; skinny_n from row pointers it advances);
//  - skinny_k keeps its op(B) values in registers, 4 output columns a thread, and loads 8
//    rows' activations (matmul_act_grad's operand) before their products; its common
//    epilogue, relu_grad alone, has its own instantiation without the general tests.
// tg-probe-skinny-gemm (dev/cuda/skinny_gemm.cu) times them against cuBLAS and a
// copy of the same bytes; docs/compiler.md quotes it.
//
// Order of the sums, fixed by the shape alone:
//  - skinny_k: each output is one chain of fused multiply-adds over k in order (then zeros);
//  - skinny_n: thread t of a block chains k values t, t + 256, t + 512, .. in order; a warp's
//    32 sums are added by a transposing butterfly (warp_transpose_sum), then the 8 warps'
//    sums in warp order;
//  - skinny_nt: group q (of 32) chains k values q, q + 32, .. in order; the 4 groups of a warp
//    are added by a butterfly, then the 8 warps' sums in warp order (the bias gradient's
//    column sums the same way).
// The epilogue is the small-GEMM kernel's (gemm_epilogue.cuh), so a fused GEMM gives
// the bits of the kernel's plain product followed by the unfused ops, and both executors
// route the same shapes here (gemm_op, by shape alone).
#include <cuda_runtime.h>

#include <mutex>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemm/gemm_epilogue.cuh"
#include "kernels/cuda/gemm/gemm_simt.cuh"
#include "kernels/cuda/gemm/gemm_small.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kThin = 16;       // the most k values (skinny_k) or output columns (skinny_n*)
constexpr int kThreads = 256;   // every kernel's block: 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kKRows = 16;      // skinny_k: output rows a block
constexpr int kKBatch = 8;      // skinny_k: rows whose activations load together
constexpr int kKCols = 4 * kThreads;  // skinny_k: output columns a block, four a thread
constexpr int kNRows = 8;       // skinny_n: output rows a block, each thread accumulating all
constexpr int kNSteps = 4;      // skinny_n: k values a thread takes from a slice, kThreads apart
constexpr int kNSlice = kNSteps * kThreads;  // skinny_n: k values a slice
constexpr int kTCols = 32;      // skinny_nt: columns of A a block, 8 threads x a float4
constexpr int kTGroups = kThreads / (kTCols / 4);  // skinny_nt: k groups, 32
constexpr int kTSteps = 8;      // skinny_nt: k values a thread takes from a slice, kTGroups apart
constexpr int kTSlice = kTSteps * kTGroups;  // skinny_nt: k values a slice, 256

// op(A)[i][kk] of a GemmArgs (batch 1), through the read-only cache.
template <bool kTrans>
__device__ __forceinline__ float at_a(const GemmArgs& g, int64_t i, int64_t kk) {
  return __ldg(kTrans ? g.a + kk * g.lda + i : g.a + i * g.lda + kk);
}

__device__ __forceinline__ unsigned shared_address(const float* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Rows r0 .. r0 + kRows of a thin operand, w <= 16 values a row, into shared [kRows][w]
// (16-byte aligned), asynchronously (the caller commits): element (r, c) at m[r * ld + c],
// or m[c * ld + r] when col_major; zeros past row `rows` (where the other operand's values
// are zeros too, and a product of zeros must not meet whatever the buffer held). A
// row-major operand stored densely (ld == w) copies as one run of 16-byte copies, a few
// per thread; otherwise a column at a time, a thread a row (coalesced when col_major).
template <int kRows>
__device__ __forceinline__ void copy_thin_rows(float* dst, const float* m, int64_t ld, bool col_major, int64_t r0,
                                               int64_t rows, int w, int t) {
  const int valid = static_cast<int>(rows - r0 < kRows ? rows - r0 : kRows);
  const float* const run = m + r0 * w;
  if (!col_major && ld == w && detail::aligned16(run)) {
    const int floats = valid * w, quads = floats / 4;
    for (int e = t; e < quads; e += kThreads) cp_async16(shared_address(dst + 4 * e), run + 4 * e);
    for (int e = 4 * quads + t; e < floats; e += kThreads) cp_async4(shared_address(dst + e), run + e);
    for (int e = floats + t; e < kRows * w; e += kThreads) dst[e] = 0.0f;
    return;
  }
  for (int c = 0; c < w; ++c)
    for (int r = t; r < kRows; r += kThreads) {
      if (r < valid)
        cp_async4(shared_address(dst + r * w + c), col_major ? m + c * ld + r0 + r : m + (r0 + r) * ld + c);
      else
        dst[r * w + c] = 0.0f;
    }
}

// Slice s of a thin operand in shared memory, the copies of slice s + 1 (into the other
// buffer) issued first: then slice s's copies awaited and the block synchronized.
template <typename CopySlice>
__device__ __forceinline__ void slice_ready(int64_t s, int64_t n_slices, const CopySlice& copy_slice) {
  if (s + 1 < n_slices) {
    copy_slice(s + 1);
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

// Registers of the wide operand's next slice moved up to the current one.
__device__ __forceinline__ void move_regs(float& to, const float& from) { to = from; }
__device__ __forceinline__ void move_regs(float4& to, const float4& from) { to = from; }
template <typename T, int N>
__device__ __forceinline__ void move_regs(T (&to)[N], const T (&from)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) move_regs(to[i], from[i]);
}

// The slice loop of skinny_n and skinny_nt: slice s of the thin operand in shared memory
// (slice_ready), the wide operand's values of slice s + 1 loaded into a_next (load_a(s + 1,
// a_next)) while slice s's products run on a_now (products(s)), then the barrier that lets
// slice s + 2 be copied into slice s's buffer, and a_next moved into a_now.
template <typename A, typename CopySlice, typename LoadA, typename Products>
__device__ __forceinline__ void slice_loop(int64_t n_slices, const CopySlice& copy_slice, LoadA&& load_a, A& a_now,
                                           A& a_next, Products&& products) {
  copy_slice(0);
  load_a(0, a_now);
  for (int64_t s = 0; s < n_slices; ++s) {
    slice_ready(s, n_slices, copy_slice);
    if (s + 1 < n_slices) load_a(s + 1, a_next);
    products(s);
    __syncthreads();  // every thread is done with the buffer before slice s + 2 is copied into it
    move_regs(a_now, a_next);
  }
}

// A row of a thin operand's slice in shared memory (n values) into kNT registers, zeros past n.
template <int kNT>
__device__ __forceinline__ void load_thin_row(const float* row, int n, float (&b)[kNT]) {
#pragma unroll
  for (int jj = 0; jj < kNT; ++jj) b[jj] = jj < n ? row[jj] : 0.0f;
}

// One level of a warp's transposing butterfly: lanes kO apart swap halves of their first
// 2 kHalf values and add what they keep to what they receive. After the levels 16, 8, .., 1,
// lane l holds in v[q], q < kN / 32, the warp's sum of its values l * kN / 32 + q: 31/32 of a
// shuffle a value, where a butterfly of every value takes five.
template <int kO, int kHalf, int kN>
__device__ __forceinline__ void warp_transpose_sum(float (&v)[kN], int lane) {
  const bool upper = (lane & kO) != 0;
#pragma unroll
  for (int q = 0; q < kHalf; ++q) {
    const float send = upper ? v[q] : v[q + kHalf];
    const float keep = upper ? v[q + kHalf] : v[q];
    v[q] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, kO));
  }
  if constexpr (kO > 1) warp_transpose_sum<kO / 2, kHalf / 2>(v, lane);
}

// skinny_k's epilogues: none (a plain product), relu_grad alone (matmul_act_grad of a ReLU
// layer, the w4096 MLP's), or any other (small_gemm_epilogue's tests for each output).
enum class ThinKEpilogue : uint8_t { plain, relu_grad, general };

// k <= 16 (kKK: k rounded up to a multiple of 4): thread t owns output columns t, t + 256,
// t + 512, t + 768 of the block's 1024 (a warp stores 128 contiguous bytes of a row), their k
// values of op(B) in registers, and the block's 16 rows, whose k values of op(A) sit in
// shared memory (a broadcast: every thread reads the same float4s). The rows go 8 at a
// time, their 32 activations (matmul_act_grad's operand) loading together before the
// products. A block inside the result (all but the last row and column of blocks) skips
// the bounds tests. Two blocks fit an SM (but with the general epilogue).
template <int kKK, ThinKEpilogue kEpilogue>
__global__ void __launch_bounds__(kThreads, kEpilogue == ThinKEpilogue::general ? 1 : 2) skinny_k_kernel(GemmArgs g) {
  __shared__ float4 as4[kKRows][kKK / 4];
  __shared__ float staged[kWarps][32 * kThin];  // a warp's 32 rows of B (trans_b, dense)
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kKRows, j0 = static_cast<int64_t>(blockIdx.x) * kKCols + t;
  const int k = static_cast<int>(g.k);
  for (int e = t; e < kKRows * kKK; e += kThreads) {
    const int r = e / kKK, kk = e % kKK;
    const int64_t i = i0 + r;
    reinterpret_cast<float*>(as4[r])[kk] =
        i < g.m && kk < k ? __ldg(g.trans_a ? g.a + kk * g.lda + i : g.a + i * g.lda + kk) : 0.0f;
  }
  // Column j of op(B): B's column j (coalesced across the warp), or B's row j (trans_b),
  // which for a dense B is a run of the warp's 32 rows, loaded contiguously and handed out
  // through shared memory.
  float bcol[4][kKK];
  const bool dense_rows = g.trans_b && g.ldb == k;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int64_t j = j0 + q * kThreads;
    if (dense_rows) {
      const int64_t first = j - lane;  // the warp's first column
      const int64_t count = (g.n - first < 32 ? g.n - first : 32) * k;
      __syncwarp();
      for (int e = lane; e < 32 * k; e += 32) staged[warp][e] = e < count ? __ldg(g.b + first * k + e) : 0.0f;
      __syncwarp();
#pragma unroll
      for (int kk = 0; kk < kKK; ++kk) bcol[q][kk] = kk < k ? staged[warp][lane * k + kk] : 0.0f;
    } else {
#pragma unroll
      for (int kk = 0; kk < kKK; ++kk)
        bcol[q][kk] = j < g.n && kk < k ? __ldg(g.trans_b ? g.b + j * g.ldb + kk : g.b + kk * g.ldb + j) : 0.0f;
    }
  }
  __syncthreads();
  float bias_v[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int64_t j = j0 + q * kThreads;
    bias_v[q] = kEpilogue == ThinKEpilogue::general && g.bias && j < g.n ? g.bias[j] : 0.0f;
  }
  const bool inside = i0 + kKRows <= g.m && (static_cast<int64_t>(blockIdx.x) + 1) * kKCols <= g.n;  // block-uniform
  // Output (i0 + r, j0 + q * 256): its product, then the epilogue with its activation.
  auto product = [&](int r, int q) {
    float acc = 0.0f;
#pragma unroll
    for (int k4 = 0; k4 < kKK / 4; ++k4) {
      const float4 a = as4[r][k4];
      acc = __fmaf_rn(a.x, bcol[q][4 * k4 + 0], acc);
      acc = __fmaf_rn(a.y, bcol[q][4 * k4 + 1], acc);
      acc = __fmaf_rn(a.z, bcol[q][4 * k4 + 2], acc);
      acc = __fmaf_rn(a.w, bcol[q][4 * k4 + 3], acc);
    }
    return acc;
  };
  auto finish = [&](float acc, int q, float act_v, int64_t at) {
    if (kEpilogue == ThinKEpilogue::plain) return acc;
    if (kEpilogue == ThinKEpilogue::relu_grad) return detail::ReluGradF()(acc, act_v);
    const float c_v = g.c ? g.c[at] : 0.0f;  // c may be d: read before the store
    return small_gemm_epilogue(g, acc, bias_v[q], c_v, act_v);
  };
  constexpr bool kActs = kEpilogue != ThinKEpilogue::plain;
  if (inside) {
    for (int r0 = 0; r0 < kKRows; r0 += kKBatch) {
      const int64_t row0 = (i0 + r0) * g.ldd + j0;
      float act[kKBatch][4];
#pragma unroll
      for (int u = 0; u < kKBatch; ++u)
#pragma unroll
        for (int q = 0; q < 4; ++q)
          act[u][q] = kActs && g.act_in ? g.act_in[row0 + u * g.ldd + q * kThreads] : 0.0f;
#pragma unroll
      for (int u = 0; u < kKBatch; ++u) {
        float* const d = g.d + row0 + u * g.ldd;
#pragma unroll
        for (int q = 0; q < 4; ++q)
          d[q * kThreads] = finish(product(r0 + u, q), q, act[u][q], row0 + u * g.ldd + q * kThreads);
      }
    }
    return;
  }
#pragma unroll 1
  for (int r0 = 0; r0 < kKRows && i0 + r0 < g.m; r0 += kKBatch) {
    float act[kKBatch][4];
#pragma unroll
    for (int u = 0; u < kKBatch; ++u)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int64_t i = i0 + r0 + u, j = j0 + q * kThreads;
        act[u][q] = kActs && g.act_in && i < g.m && j < g.n ? g.act_in[i * g.ldd + j] : 0.0f;
      }
#pragma unroll
    for (int u = 0; u < kKBatch; ++u)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int64_t i = i0 + r0 + u, j = j0 + q * kThreads;
        if (i < g.m && j < g.n) g.d[i * g.ldd + j] = finish(product(r0 + u, q), q, act[u][q], i * g.ldd + j);
      }
  }
}

// n <= 16 (kNT: n rounded up to a multiple of 4), op(A) not transposed: thread t takes k
// values t, t + 256, t + 512, t + 768 of each slice of 1024 for all 8 rows of the block (a
// warp reads 128 contiguous bytes of a row of A); the slice's rows of op(B), n values each,
// sit in shared memory (two buffers, the next slice copying while this one is used), each
// value read there serving all 8 rows. The next slice's values of A load before this
// slice's products.
template <bool kTransB, int kNT>
__global__ void __launch_bounds__(kThreads) skinny_n_kernel(GemmArgs g) {
  extern __shared__ float4 skinny_smem[];  // two slices [kNSlice][n]; the warps' sums at the end
  float* const slices = reinterpret_cast<float*>(skinny_smem);
  constexpr int kSums = kNRows * kNT;  // a thread's sums, [row][column]
  static_assert(kSums % 32 == 0, "warp_transpose_sum leaves whole values a lane");
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const int n = static_cast<int>(g.n);
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kNRows;
  const int64_t n_slices = (g.k + kNSlice - 1) / kNSlice;
  auto slice = [&](int64_t s) { return slices + (s & 1) * kNSlice * kNT; };
  auto copy_slice = [&](int64_t s) {
    // op(B)'s row kk is B's row kk, or its column kk (trans_b)
    copy_thin_rows<kNSlice>(slice(s), g.b, g.ldb, kTransB, s * kNSlice, g.k, n, t);
    cp_async_commit();
  };
  // Each row's pointer at this thread's first k value of the next slice to load; rows past m
  // read row m - 1 (finite values, whose sums are not stored), so only a partial last slice
  // needs tests.
  const float* a_row[kNRows];
#pragma unroll
  for (int r = 0; r < kNRows; ++r) a_row[r] = g.a + (i0 + r < g.m ? i0 + r : g.m - 1) * g.lda + t;
  auto load_a = [&](int64_t s, float (&a)[kNSteps][kNRows]) {
    const int64_t k_left = g.k - s * kNSlice - t;  // this thread's k values left, from its first
#pragma unroll
    for (int step = 0; step < kNSteps; ++step)
#pragma unroll
      for (int r = 0; r < kNRows; ++r)
        a[step][r] = s + 1 < n_slices || step * kThreads < k_left ? __ldg(a_row[r] + step * kThreads) : 0.0f;
#pragma unroll
    for (int r = 0; r < kNRows; ++r) a_row[r] += kNSlice;
  };
  float acc[kSums] = {};
  float a_now[kNSteps][kNRows], a_next[kNSteps][kNRows];
  slice_loop(n_slices, copy_slice, load_a, a_now, a_next, [&](int64_t s) {
#pragma unroll
    for (int step = 0; step < kNSteps; ++step) {
      float b[kNT];
      load_thin_row(slice(s) + (t + step * kThreads) * n, n, b);
#pragma unroll
      for (int r = 0; r < kNRows; ++r)
#pragma unroll
        for (int jj = 0; jj < kNT; ++jj) acc[r * kNT + jj] = __fmaf_rn(a_now[step][r], b[jj], acc[r * kNT + jj]);
    }
  });
  warp_transpose_sum<16, kSums / 2>(acc, lane);
  float* const sums = slices;  // [warp][kSums]; the slices are no longer read
  constexpr int kPerLane = kSums / 32;
#pragma unroll
  for (int q = 0; q < kPerLane; ++q) sums[warp * kSums + lane * kPerLane + q] = acc[q];
  __syncthreads();
  if (t >= kSums) return;
  const int r = t / kNT, jj = t % kNT;
  if (jj >= n || i0 + r >= g.m) return;
  float v = sums[t];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) v = __fadd_rn(v, sums[w * kSums + t]);
  small_gemm_store(g, i0 + r, jj, v);
}

// n <= 16 (kNT: n rounded up to a multiple of 4), op(A) transposed (a weight gradient x^T dz
// of a thin layer): thread (c, q), c < 8, q < 32, owns columns 4c .. 4c + 3 of the block's 32
// columns of A (rows of the result) and takes k values q, q + 32, .. of each slice of 256; 8
// threads of a warp read 128 contiguous bytes of a row of A. The slice's rows of op(B) sit in
// shared memory as skinny_n's do (a warp's 4 k groups read 4 rows: broadcasts). Block 0
// also sums op(B)'s columns over k the same way (the bias gradient).
template <bool kTransB, int kNT>
__global__ void __launch_bounds__(kThreads) skinny_nt_kernel(GemmArgs g, bool vec4) {
  __shared__ __align__(16) float slices[2][kTSlice * kNT];  // [kTSlice][n] each; the warps' sums at the end
  __shared__ float bias_sums[kWarps][kNT];
  pdl::prologue();
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const int c = t % (kTCols / 4), q = t / (kTCols / 4);
  const int n = static_cast<int>(g.n);
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kTCols + 4 * c;
  const bool full4 = vec4 && i + 4 <= g.m;
  const bool bias_block = g.bias_grad != nullptr && blockIdx.x == 0;  // uniform in the block
  const int64_t n_slices = (g.k + kTSlice - 1) / kTSlice;
  auto copy_slice = [&](int64_t s) {
    copy_thin_rows<kTSlice>(slices[s & 1], g.b, g.ldb, kTransB, s * kTSlice, g.k, n, t);
    cp_async_commit();
  };
  auto load_a = [&](int64_t s, float4 (&a)[kTSteps]) {
#pragma unroll
    for (int u = 0; u < kTSteps; ++u) {
      const int64_t kk = s * kTSlice + q + u * kTGroups;
      const float* row = g.a + kk * g.lda + i;
      if (kk < g.k && full4) {
        a[u] = __ldg(reinterpret_cast<const float4*>(row));
      } else {
        const bool in = kk < g.k;
        a[u].x = in && i < g.m ? __ldg(row) : 0.0f;
        a[u].y = in && i + 1 < g.m ? __ldg(row + 1) : 0.0f;
        a[u].z = in && i + 2 < g.m ? __ldg(row + 2) : 0.0f;
        a[u].w = in && i + 3 < g.m ? __ldg(row + 3) : 0.0f;
      }
    }
  };
  float acc[4 * kNT] = {}, bacc[kNT] = {};
  float4 a_now[kTSteps], a_next[kTSteps];
  slice_loop(n_slices, copy_slice, load_a, a_now, a_next, [&](int64_t s) {
#pragma unroll
    for (int u = 0; u < kTSteps; ++u) {
      float b[kNT];
      load_thin_row(slices[s & 1] + (q + u * kTGroups) * n, n, b);
#pragma unroll
      for (int jj = 0; jj < kNT; ++jj) {
        acc[0 * kNT + jj] = __fmaf_rn(a_now[u].x, b[jj], acc[0 * kNT + jj]);
        acc[1 * kNT + jj] = __fmaf_rn(a_now[u].y, b[jj], acc[1 * kNT + jj]);
        acc[2 * kNT + jj] = __fmaf_rn(a_now[u].z, b[jj], acc[2 * kNT + jj]);
        acc[3 * kNT + jj] = __fmaf_rn(a_now[u].w, b[jj], acc[3 * kNT + jj]);
        if (bias_block && c == 0) bacc[jj] = __fadd_rn(bacc[jj], b[jj]);
      }
    }
  });
  // The warp's 4 k groups (lanes 8 apart), then the 8 warps in order, through
  // sums[warp][column][output column] (the slices are no longer read).
  float(*const sums)[kTCols * kNT] = reinterpret_cast<float(*)[kTCols * kNT]>(&slices[0][0]);
  static_assert(sizeof(slices) >= sizeof(float) * kWarps * kTCols * kNT, "the warps' sums fit in the slices");
#pragma unroll
  for (int e = 0; e < 4 * kNT; ++e) {
    acc[e] = __fadd_rn(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], 8));
    acc[e] = __fadd_rn(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], 16));
  }
  if (lane < kTCols / 4)
#pragma unroll
    for (int e = 0; e < 4 * kNT; ++e) sums[warp][4 * c * kNT + e] = acc[e];
  if (bias_block) {
#pragma unroll
    for (int jj = 0; jj < kNT; ++jj) {
      bacc[jj] = __fadd_rn(bacc[jj], __shfl_xor_sync(0xffffffffu, bacc[jj], 8));
      bacc[jj] = __fadd_rn(bacc[jj], __shfl_xor_sync(0xffffffffu, bacc[jj], 16));
    }
    if (lane == 0)
#pragma unroll
      for (int jj = 0; jj < kNT; ++jj) bias_sums[warp][jj] = bacc[jj];
  }
  __syncthreads();
  if (bias_block && t < n) {
    float v = bias_sums[0][t];
    for (int w = 1; w < kWarps; ++w) v = __fadd_rn(v, bias_sums[w][t]);
    g.bias_grad[t] = v;
  }
  for (int e = t; e < kTCols * kNT; e += kThreads) {
    const int col = e / kNT, jj = e % kNT;
    const int64_t oi = static_cast<int64_t>(blockIdx.x) * kTCols + col;
    if (jj >= n || oi >= g.m) continue;
    float v = sums[0][e];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = __fadd_rn(v, sums[w][e]);
    small_gemm_store(g, oi, jj, v);
  }
}

// float4 loads of a matrix's rows where every row starts 16-byte aligned.
bool rows_aligned16(const float* p, int64_t ld) { return detail::aligned16(p) && ld % 4 == 0; }

// A kernel with `bytes` of dynamic shared memory: past the default 48 KiB once per kernel,
// device and process.
template <auto kKernel, typename... Args>
void launch_with_smem(detail::LaunchSite at, dim3 grid, size_t bytes, cudaStream_t s, const Args&... args) {
  static std::once_flag opted_in[64];
  int device = 0;
  TG_CUDA_CHECK(cudaGetDevice(&device));
  std::call_once(opted_in[device % 64], [bytes] {
    TG_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  });
  detail::launch_smem(at, kKernel, grid, dim3(kThreads), bytes, s, args...);
}

template <int kKK>
void launch_skinny_k(const GemmArgs& g, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((g.n + kKCols - 1) / kKCols), static_cast<unsigned>((g.m + kKRows - 1) / kKRows));
  const bool no_other = g.act == Act::none && !g.bias && !g.c;
  auto kernel = !no_other                             ? skinny_k_kernel<kKK, ThinKEpilogue::general>
                : g.act_grad == Act::none ? skinny_k_kernel<kKK, ThinKEpilogue::plain>
                : g.act_grad == Act::relu ? skinny_k_kernel<kKK, ThinKEpilogue::relu_grad>
                                                   : skinny_k_kernel<kKK, ThinKEpilogue::general>;
  detail::launch(TG_LAUNCH_SITE, kernel, grid, dim3(kThreads), s, g);
}

template <int kNT>
void launch_skinny_n(const GemmArgs& g, cudaStream_t s) {
  constexpr size_t kSmem = 2 * sizeof(float) * kNSlice * kNT;
  static_assert(kSmem >= sizeof(float) * kWarps * kNRows * kNT, "the warps' sums reuse the slice buffers");
  const dim3 grid(static_cast<unsigned>((g.m + kNRows - 1) / kNRows));
  const auto at = TG_LAUNCH_SITE;
  if (g.trans_b) return launch_with_smem<skinny_n_kernel<true, kNT>>(at, grid, kSmem, s, g);
  launch_with_smem<skinny_n_kernel<false, kNT>>(at, grid, kSmem, s, g);
}

template <int kNT>
void launch_skinny_nt(const GemmArgs& g, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((g.m + kTCols - 1) / kTCols));
  auto kernel = g.trans_b ? skinny_nt_kernel<true, kNT> : skinny_nt_kernel<false, kNT>;
  detail::launch(TG_LAUNCH_SITE, kernel, grid, dim3(kThreads), s, g, rows_aligned16(g.a, g.lda));
}

// The kernel for a thin side of w values, w rounded up to a multiple of 4 (w <= 16).
template <template <int> class Launch>
void by_width(int64_t w, const GemmArgs& g, cudaStream_t s) {
  switch ((w + 3) / 4) {
    case 1: return Launch<4>::run(g, s);
    case 2: return Launch<8>::run(g, s);
    case 3: return Launch<12>::run(g, s);
    default: return Launch<16>::run(g, s);
  }
}
template <int kW>
struct ThinK {
  static void run(const GemmArgs& g, cudaStream_t s) { launch_skinny_k<kW>(g, s); }
};
template <int kW>
struct ThinN {
  static void run(const GemmArgs& g, cudaStream_t s) { launch_skinny_n<kW>(g, s); }
};
template <int kW>
struct ThinNT {
  static void run(const GemmArgs& g, cudaStream_t s) { launch_skinny_nt<kW>(g, s); }
};

}  // namespace

SkinnyGemm skinny_gemm_kind(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a) {
  if (batch != 1 || m < 1 || n < 1 || k < 1) return SkinnyGemm::none;
  if (k <= kThin && m <= int64_t{65535} * kKRows) return SkinnyGemm::thin_k;
  if (n <= kThin && !trans_a) return SkinnyGemm::thin_n;
  if (n <= kThin && trans_a) return SkinnyGemm::thin_n_trans_a;
  return SkinnyGemm::none;
}

void skinny_gemm(const GemmArgs& g, cudaStream_t s) {
  switch (skinny_gemm_kind(g.batch, g.m, g.n, g.k, g.trans_a)) {
    case SkinnyGemm::thin_k: return by_width<ThinK>(g.k, g, s);
    case SkinnyGemm::thin_n: return by_width<ThinN>(g.n, g, s);
    case SkinnyGemm::thin_n_trans_a: return by_width<ThinNT>(g.n, g, s);
    case SkinnyGemm::none: break;
  }
  throw std::logic_error("skinny_gemm: the product is not skinny; check skinny_gemm_kind first");
}

}  // namespace tg::kernels::cuda
