// transpose of up to kMaxRank dims, broadcast, concat and slice (kernels/cpu/layout.cpp,
// kernels/cpu/reduce.cpp): moves, so every dtype runs as its bits; the figures below are f32's.
// transpose: the permutation is first reduced: size-1 dims dropped, input dims that stay
// neighbours in the output merged. Then:
//  - identity: a copy;
//  - the last dim stays last (e.g. [B, S, H, dh] -> [B, H, S, dh], the transformer's head
//    split and merge): every output row of L = (merged last dim) elements is a contiguous
//    input run, so the kernel is a gather of runs, 16-byte vectors when a run is whole
//    vectors (L % 4 == 0 in f32, % 8 in 16 bits) and both pointers are aligned, written
//    in output order. Bytes: read + write 8n, like a copy, and both sides move whole
//    256-byte rows for dh = 64: expected ~90-95% of copy.
//  - a batch of matrices with a short side (a filter between KCRS and KRSC): a block a
//    matrix, read and written in order through shared memory;
//  - the last dim moves: 64 x 64 tiles through shared memory (four 32 x 33 sub-tiles),
//    between X (the input's last dim, contiguous in x) and Y (the input dim that becomes
//    the output's last, contiguous in y); other dims are a batch. A warp reads 4 rows x
//    128 B and writes 4 rows x 128 B per instruction, float4 both ways when X and Y are
//    multiples of 4 and the pointers aligned; the sub-tile layout makes both smem phases
//    conflict-free. Each thread has 4 float4 loads in flight, 8 blocks of 256 threads per
//    SM: 128 KB per SM. tg-kernels' [rows, 1024] -> [1024, rows]: 8n bytes, 64 MB: 33 us
//    floor, 256 MB: 131 us; expected ~80-90% of copy.
// Index arithmetic is 32-bit with multiply-shift division (FastDiv) where it fits; a
// tensor beyond 2^31 elements takes the plain 64-bit gather.
// Every kernel's dim loop has a fixed trip count (its arguments stay in registers): the
// count of a rank-4 tensor (after the reduction) for ranks up to 4, kMaxRank's above, so
// the rank-5 and rank-6 transposes cost the common ones nothing.
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/block_copy.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace {

using detail::grid_for;
using detail::kBlock;

// n / d for n < 2^31 by a multiply-high and a shift (d >= 1): m = floor(2^32 (2^s - d) / d) + 1,
// s = ceil(log2 d); then n / d = (umulhi(n, m) + n) >> s, the sum below 2^32.
struct FastDiv {
  uint32_t d = 1, m = 1, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t div) : d(div) {
    while ((uint64_t{1} << s) < div) ++s;
    m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - div)) / div + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

constexpr int64_t kMax32 = int64_t{1} << 31;

// The rank a kernel's loops are unrolled for: 4 for the tensors of up to 4 dims.
constexpr int kSmallRank = 4;
static_assert(kMaxRank >= kSmallRank, "the small-rank kernels are a subset");

template <int R>
struct DimsR {
  int64_t od[R];  // output dims, padded to R with leading 1s
  int64_t st[R];  // input stride of each output dim
};

template <typename E, int R>
__global__ void transpose_gather_kernel(const E* x, E* y, DimsR<R> d, int64_t total) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    int64_t rem = idx, src = 0;
#pragma unroll
    for (int k = R - 1; k >= 0; --k) {
      const int64_t i = rem % d.od[k];
      rem /= d.od[k];
      src += i * d.st[k];
    }
    y[idx] = x[src];
  }
}

// ---- the last dim stays: a gather of runs --------------------------------------------
template <int N>
struct RunArgs {
  int nd;             // outer output dims, at most N; od[nd - 1] varies fastest
  FastDiv od[N];
  int64_t ist[N];     // input stride (elements) of each
  FastDiv run;        // vectors per run (L / W)
  uint32_t total;     // vectors in the tensor
};

// V: a vector of W elements (16 bytes, or one element); 4 vectors per thread per step,
// their loads issued together.
template <typename V, int W, int N>
__global__ void __launch_bounds__(256) transpose_runs_kernel(const void* x, void* y, RunArgs<N> a) {
  pdl::prologue();
  const V* xv = static_cast<const V*>(x);
  V* yv = static_cast<V*>(y);
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i0 = blockIdx.x * blockDim.x + threadIdx.x; i0 < a.total; i0 += 4 * stride) {
    V v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint32_t i = i0 + u * stride;
      if (i >= a.total) break;
      uint32_t row = a.run.div(i);
      int64_t src = static_cast<int64_t>(i - row * a.run.d);  // in vectors
#pragma unroll
      for (int k = N - 1; k >= 0; --k) {  // a fixed trip count keeps a.od in registers
        if (k >= a.nd) continue;
        const uint32_t q = a.od[k].div(row);
        src += static_cast<int64_t>(row - q * a.od[k].d) * (a.ist[k] / W);
        row = q;
      }
      v[u] = xv[src];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint32_t i = i0 + u * stride;
      if (i < a.total) yv[i] = v[u];
    }
  }
}

// ---- the last dim moves: 64 x 64 tiles ----------------------------------------------
template <int NB>
struct TileArgs {
  int64_t nx, ny;     // X: the input's last dim; Y: the dim that is the output's last
  int64_t sy_in;      // input stride of Y
  int64_t sx_out;     // output stride of X
  int nb;             // batch dims, at most NB; bdim[nb - 1] varies fastest
  FastDiv bdim[NB];
  int64_t bin[NB], bout[NB];
  FastDiv ntx, nty;   // tiles along X and Y
  uint32_t tiles;
};

// Four consecutive elements in one load: a float4 of f32, 8 bytes of a 16-bit dtype.
template <typename E>
using Quad = std::conditional_t<sizeof(E) == 4, float4, uint2>;

// Thread t: c4 = t % 8 picks a float4 column of a 32-wide sub-tile row, rr = t / 8 the
// row (0..31). Loading, a warp covers rows rr of 4 consecutive values and all 8 float4
// columns: smem banks (rr + 4 c4 + i) % 32, all different. Storing, the roles swap
// (rr is the output row, i.e. the X index) and tile[4 c4 + i][rr] hits banks
// (4 c4 + i + rr) % 32, all different again.
// 16-bit elements take the same tiles (in their own type, so the shared memory holds half
// the bytes and its banks see other strides); the loads and stores carry 8 bytes.
template <typename E, bool kVec, int NB>
__global__ void __launch_bounds__(256) transpose_tile_kernel(const E* x, E* y, TileArgs<NB> a) {
  pdl::prologue();
  __shared__ E tile[4][32][33];
  const int c4 = threadIdx.x & 7, rr = threadIdx.x >> 3;
  for (uint32_t b = blockIdx.x; b < a.tiles; b += gridDim.x) {
    const uint32_t q1 = a.ntx.div(b), q2 = a.nty.div(q1);
    const int64_t x0 = int64_t{64} * (b - q1 * a.ntx.d), y0 = int64_t{64} * (q1 - q2 * a.nty.d);
    int64_t in_off = 0, out_off = 0;
    uint32_t rest = q2;
#pragma unroll
    for (int k = NB - 1; k >= 0; --k) {
      if (k >= a.nb) continue;
      const uint32_t q = a.bdim[k].div(rest);
      const int64_t i = rest - q * a.bdim[k].d;
      in_off += i * a.bin[k];
      out_off += i * a.bout[k];
      rest = q;
    }
    E v[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int64_t yy = y0 + 32 * (s >> 1) + rr, xx = x0 + 32 * (s & 1) + 4 * c4;
      const E* src = x + in_off + yy * a.sy_in + xx;
      if constexpr (kVec) {
        Quad<E> q{};
        if (yy < a.ny && xx < a.nx) q = *reinterpret_cast<const Quad<E>*>(src);
        memcpy(v[s], &q, sizeof q);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[s][i] = yy < a.ny && xx + i < a.nx ? src[i] : E{};
      }
    }
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile[s][rr][4 * c4 + i] = v[s][i];
    __syncthreads();
    // All four smem reads first: with the stores interleaved, ptxas split two of the
    // four float4 stores into scalar ones.
    E w[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const E* col = &tile[s][4 * c4][rr];
      w[s][0] = col[0], w[s][1] = col[33], w[s][2] = col[66], w[s][3] = col[99];
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int64_t xx = x0 + 32 * (s & 1) + rr, yy = y0 + 32 * (s >> 1) + 4 * c4;
      if (xx >= a.nx) continue;
      E* dst = y + out_off + xx * a.sx_out + yy;
      if constexpr (kVec) {
        Quad<E> q;
        memcpy(&q, w[s], sizeof q);
        if (yy < a.ny) __stcs(reinterpret_cast<Quad<E>*>(dst), q);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (yy + i < a.ny) dst[i] = w[s][i];
      }
    }
    __syncthreads();
  }
}

// The permutation with size-1 dims dropped and output-adjacent input dims merged.
struct Reduced {
  int rank = 0;
  int64_t in[kMaxRank];
  int perm[kMaxRank];
};

Reduced reduce_perm(const int64_t* in_dims, int rank, const int* perm) {
  // The dims that are not 1, numbered in input order, and their output order.
  int64_t size[kMaxRank];
  int index[kMaxRank], order[kMaxRank], nk = 0, no = 0;
  for (int d = 0; d < rank; ++d) {
    index[d] = in_dims[d] == 1 ? -1 : nk;
    if (in_dims[d] != 1) size[nk++] = in_dims[d];
  }
  for (int d = 0; d < rank; ++d)
    if (index[perm[d]] >= 0) order[no++] = index[perm[d]];
  // Output positions whose input dims follow each other in the input become one dim.
  int start[kMaxRank], len[kMaxRank], nr = 0;
  for (int p = 0; p < no; ++p) {
    if (p > 0 && order[p] == order[p - 1] + 1) {
      ++len[nr - 1];
    } else {
      start[nr] = order[p];
      len[nr++] = 1;
    }
  }
  Reduced r;
  r.rank = nr;
  for (int i = 0; i < nr; ++i) {
    int before = 0;  // the merged dim's place in the input: runs that start earlier
    for (int j = 0; j < nr; ++j) before += start[j] < start[i];
    int64_t n = 1;
    for (int k = 0; k < len[i]; ++k) n *= size[start[i] + k];
    r.in[before] = n;
    r.perm[i] = before;
  }
  return r;
}

// The reduced permutation's strides: input strides by input dim, output strides by output position.
struct Strides {
  int64_t in[kMaxRank], out[kMaxRank];
};

Strides strides_of(const Reduced& r) {
  Strides t;
  for (int64_t d = r.rank - 1, st = 1; d >= 0; --d) {
    t.in[d] = st;
    st *= r.in[d];
  }
  for (int64_t d = r.rank - 1, st = 1; d >= 0; --d) {
    t.out[d] = st;
    st *= r.in[r.perm[d]];
  }
  return t;
}

// The last dim stays: runs of its L elements, N outer dims at most.
template <int N, typename E>
void launch_runs(const E* x, E* y, const Reduced& r, const Strides& t, int64_t total, cudaStream_t s) {
  constexpr int kW = static_cast<int>(16 / sizeof(E));  // elements per 16-byte vector
  const int last = r.rank - 1;
  const int64_t L = r.in[last];
  const int w = L % kW == 0 && detail::aligned16(x) && detail::aligned16(y) ? kW : 1;
  RunArgs<N> a{};
  a.nd = last;
  for (int d = 0; d < last; ++d) {
    a.od[d] = FastDiv(static_cast<uint32_t>(r.in[r.perm[d]]));
    a.ist[d] = t.in[r.perm[d]];
  }
  a.run = FastDiv(static_cast<uint32_t>(L / w));
  a.total = static_cast<uint32_t>(total / w);
  const int grid = grid_for((a.total + 3) / 4);
  if (w == kW)
    detail::launch(TG_LAUNCH_SITE, transpose_runs_kernel<uint4, kW, N>, grid, kBlock, s, x, y, a);
  else
    detail::launch(TG_LAUNCH_SITE, transpose_runs_kernel<E, 1, N>, grid, kBlock, s, x, y, a);
}

// The last dim moves: 64 x 64 tiles, NB batch dims at most. False when the tile counts
// need more than 32 bits.
template <int NB, typename E>
bool launch_tiles(const E* x, E* y, const Reduced& r, const Strides& t, cudaStream_t s) {
  const int last = r.rank - 1;
  TileArgs<NB> a{};
  int px = 0;  // output position of X
  while (r.perm[px] != last) ++px;
  a.nx = r.in[last];
  a.ny = r.in[r.perm[last]];
  a.sy_in = t.in[r.perm[last]];
  a.sx_out = t.out[px];
  int64_t batch = 1;
  for (int d = 0; d < last; ++d) {
    if (d == px) continue;
    a.bdim[a.nb] = FastDiv(static_cast<uint32_t>(r.in[r.perm[d]]));
    a.bin[a.nb] = t.in[r.perm[d]];
    a.bout[a.nb] = t.out[d];
    batch *= r.in[r.perm[d]];
    ++a.nb;
  }
  const int64_t ntx = (a.nx + 63) / 64, nty = (a.ny + 63) / 64;
  const int64_t tiles = ntx * nty * batch;
  if (tiles >= kMax32 || ntx >= kMax32 || nty >= kMax32) return false;
  a.ntx = FastDiv(static_cast<uint32_t>(ntx));
  a.nty = FastDiv(static_cast<uint32_t>(nty));
  a.tiles = static_cast<uint32_t>(tiles);
  const bool vec = a.nx % 4 == 0 && a.ny % 4 == 0 && detail::aligned16(x) && detail::aligned16(y);
  const int grid = static_cast<int>(tiles < 0x7fffffff ? tiles : 0x7fffffff);
  if (vec)
    detail::launch(TG_LAUNCH_SITE, transpose_tile_kernel<E, true, NB>, grid, kBlock, s, x, y, a);
  else
    detail::launch(TG_LAUNCH_SITE, transpose_tile_kernel<E, false, NB>, grid, kBlock, s, x, y, a);
  return true;
}

// A batch of small matrices [B, Y, X] -> [B, X, Y] where one side is short (a convolution's
// filter between KCRS and KRSC: [K, C, 9] and back): the 64 x 64 tiles would be mostly empty
// (9 of 64 columns used) and ran at under a quarter of the copy's bandwidth. A block takes
// whole matrices: reads each one's Y X elements in order into shared memory, then writes them
// in the output's order, both sides coalesced.
constexpr int64_t kSlabElements = 8192;  // 32 KiB of f32 in shared memory

template <typename E>
__global__ void __launch_bounds__(256) transpose_slab_kernel(const E* x, E* y, int64_t batch, uint32_t nx,
                                                              FastDiv by_y) {
  pdl::prologue();
  __shared__ E slab[kSlabElements];
  const uint32_t ny = by_y.d, n = ny * nx;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const E* src = x + b * n;
    E* dst = y + b * n;
    __syncthreads();  // every thread is done with the previous matrix
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) slab[i] = src[i];
    __syncthreads();
    for (uint32_t o = threadIdx.x; o < n; o += blockDim.x) {  // o = xx * ny + yy
      const uint32_t xx = by_y.div(o), yy = o - xx * ny;
      dst[o] = slab[yy * nx + xx];
    }
  }
}

// Whether the reduced permutation is a batch of matrices [B, Y, X] -> [B, X, Y] with a short
// side and each matrix fitting the slab, and if so the slab kernel ran.
template <typename E>
bool launch_slabs(const E* x, E* y, const Reduced& r, cudaStream_t s) {
  int64_t batch = 1, ny = 0, nx = 0;
  if (r.rank == 2 && r.perm[0] == 1 && r.perm[1] == 0) {
    ny = r.in[0], nx = r.in[1];
  } else if (r.rank == 3 && r.perm[0] == 0 && r.perm[1] == 2 && r.perm[2] == 1) {
    batch = r.in[0], ny = r.in[1], nx = r.in[2];
  } else {
    return false;
  }
  // Matrices of fewer elements than a block's threads would leave most of each block idle.
  if (ny * nx > kSlabElements || ny * nx < kBlock || (ny >= 32 && nx >= 32)) return false;
  const int grid = static_cast<int>(batch < 0x7fffffff ? batch : 0x7fffffff);
  detail::launch(TG_LAUNCH_SITE, transpose_slab_kernel<E>, grid, kBlock, s, x, y, batch, static_cast<uint32_t>(nx),
                 FastDiv(static_cast<uint32_t>(ny)));
  return true;
}

// Beyond 32-bit indices: the plain gather over the output in order, R dims.
template <int R, typename E>
void launch_gather(const E* x, E* y, const Reduced& r, const Strides& t, int64_t total, cudaStream_t s) {
  DimsR<R> d{};
  for (int k = 0; k < R; ++k) d.od[k] = 1;
  const int pad = R - r.rank;
  for (int k = 0; k < r.rank; ++k) {
    d.od[pad + k] = r.in[r.perm[k]];
    d.st[pad + k] = t.in[r.perm[k]];
  }
  detail::launch(TG_LAUNCH_SITE, transpose_gather_kernel<E, R>, grid_for(total), kBlock, s, x, y, d, total);
}

// E: the element, by its size (float for f32, uint16_t for bf16 and f16): a move needs
// only the bits.
template <typename E>
void transpose_as(const E* x, const int64_t* in_dims, int rank, const int* perm, E* y, DType dt, cudaStream_t s) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= in_dims[d];
  if (total <= 0) return;
  const Reduced r = reduce_perm(in_dims, rank, perm);
  bool identity = true;
  for (int d = 0; d < r.rank; ++d) identity = identity && r.perm[d] == d;
  if (identity) return copy(x, y, total, s, dt);

  const Strides t = strides_of(r);
  const bool small = r.rank <= kSmallRank;
  const int last = r.rank - 1;
  if (r.perm[last] == last && total < kMax32) {
    if (small) return launch_runs<kSmallRank - 1>(x, y, r, t, total, s);
    return launch_runs<kMaxRank - 1>(x, y, r, t, total, s);
  }
  if (r.perm[last] != last) {
    if (total < kMax32 && launch_slabs(x, y, r, s)) return;
    const bool done = small ? launch_tiles<kSmallRank - 2>(x, y, r, t, s) : launch_tiles<kMaxRank - 2>(x, y, r, t, s);
    if (done) return;
  }
  if (small) return launch_gather<kSmallRank>(x, y, r, t, total, s);
  launch_gather<kMaxRank>(x, y, r, t, total, s);
}

// fn(E{}) with E the element of dt's size.
template <typename Fn>
void with_element(DType dt, Fn&& fn) {
  if (dtype_size(dt) == 4) return fn(float{});
  return fn(uint16_t{});
}

// ---- broadcast: y[o, j, i] = x[o, i] ------------------------------------------------
// U: an element, or a 16-byte vector when the rows of x are whole vectors.
template <typename U>
__global__ void broadcast_kernel(const U* x, U* y, int64_t total, int64_t size, int64_t inner) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t o = idx / (size * inner), i = idx % inner;
    y[idx] = x[o * inner + i];
  }
}

// ---- concat and slice: blocks along one axis (kernels/block_copy.h) ------------------
template <typename E>
__global__ void copy_block_kernel(const E* src, E* dst, BlockCopy b, int64_t count) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride)
    dst[b.dst(e)] = src[b.src(e)];
}

// The block as rows of 16-byte vectors: each of its `outer` rows (len x inner elements) is
// contiguous on both sides; when every row's start and length are whole vectors a thread
// moves 16 bytes with one division per vector instead of two per element. (A transformer's
// q, k and v sliced from one projection: rows of 768 of 2304 values.)
struct VecRows {
  int64_t rows = 0, width = 0;  // vectors a row
  int64_t src_stride = 0, src_off = 0, dst_stride = 0, dst_off = 0;
};

__global__ void copy_rows_vec_kernel(const uint4* src, uint4* dst, VecRows r, int64_t count) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < count; v += stride) {
    const int64_t o = v / r.width, k = v - o * r.width;
    dst[o * r.dst_stride + r.dst_off + k] = src[o * r.src_stride + r.src_off + k];
  }
}

// The block as rows of elements when its rows are long but not whole 16-byte vectors (a
// vocabulary's logits [rows, 50257] cut from their padded rows [rows, 50264]): a block of
// threads copies a row at a time, and each thread stores whole 16-byte vectors of the
// destination row, loading the two aligned source vectors that hold its elements and shifting
// them into place, where the source and destination rows start at different offsets from a
// 16-byte boundary. Element by element the copy ran at under 1 TB/s (1.8 ms for GPT-2 small's
// prediction at batch 8 x 1024 on an H100). The first and last vector of a row, and the
// elements before the destination's first boundary and after its last, go one at a time, so
// that no load reaches outside the row.
template <int kBytes>
__device__ __forceinline__ uint4 shift_pair(uint4 a, uint4 b, int d) {  // elements d .. d + 16 / kBytes - 1 of a, b
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  const int bytes = d * kBytes, words = bytes >> 2, bits = (bytes & 3) * 8;
  uint32_t o[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = words == 0 ? w[i] : words == 1 ? w[i + 1] : words == 2 ? w[i + 2] : w[i + 3];
    const uint32_t hi = words == 0 ? w[i + 1] : words == 1 ? w[i + 2] : words == 2 ? w[i + 3] : w[i + 4];
    o[i] = bits == 0 ? lo : __funnelshift_r(lo, hi, bits);
  }
  return make_uint4(o[0], o[1], o[2], o[3]);
}

template <typename E>
__device__ __forceinline__ int vector_offset(const E* p) {  // elements past the last 16-byte boundary
  return static_cast<int>((reinterpret_cast<uintptr_t>(p) & 15) / sizeof(E));
}

template <typename E>
__global__ void copy_rows_kernel(const E* src, E* dst, VecRows r) {
  pdl::prologue();
  constexpr int V = 16 / sizeof(E);  // elements a vector
  for (int64_t o = blockIdx.x; o < r.rows; o += gridDim.x) {
    const E* from = src + o * r.src_stride + r.src_off;
    E* to = dst + o * r.dst_stride + r.dst_off;
    const int64_t n = r.width;
    const int64_t head = (V - vector_offset(to)) % V;  // elements before to's first boundary
    const int64_t body = n > head ? (n - head) / V : 0;  // whole vectors of to
    // Vectors 1 .. body - 2 of the body; the rest element by element.
    const int64_t lo = body >= 3 ? head + V : n, hi = body >= 3 ? head + (body - 1) * V : n;
    for (int64_t k = threadIdx.x; k < lo; k += blockDim.x) to[k] = from[k];
    for (int64_t k = hi + threadIdx.x; k < n; k += blockDim.x) to[k] = from[k];
    if (body < 3) continue;
    const int d = vector_offset(from + head);
    const uint4* s = reinterpret_cast<const uint4*>(from + head - d);
    uint4* t = reinterpret_cast<uint4*>(to + head);
    for (int64_t v = 1 + threadIdx.x; v < body - 1; v += blockDim.x)
      t[v] = d == 0 ? s[v] : shift_pair<sizeof(E)>(s[v], s[v + 1], d);
  }
}

// The rows of b in elements (copy_rows_kernel).
VecRows element_rows(const BlockCopy& b) {
  VecRows r;
  r.rows = b.outer;
  r.width = b.len * b.inner;
  r.src_stride = b.src_len * b.inner;
  r.src_off = b.src_off * b.inner;
  r.dst_stride = b.dst_len * b.inner;
  r.dst_off = b.dst_off * b.inner;
  return r;
}

// The vector form of b for elements of `size` bytes, when it has one: its element rows
// with every extent in 16-byte vectors.
bool vec_rows(const void* src, const void* dst, int64_t size, const BlockCopy& b, VecRows& r) {
  const VecRows e = element_rows(b);
  auto whole = [size](int64_t elements) { return elements * size % 16 == 0; };
  if (!whole(e.width) || !whole(e.src_stride) || !whole(e.dst_stride) || !whole(e.src_off) || !whole(e.dst_off) ||
      reinterpret_cast<uintptr_t>(src) % 16 || reinterpret_cast<uintptr_t>(dst) % 16)
    return false;
  auto vectors = [size](int64_t elements) { return elements * size / 16; };
  r.rows = e.rows;
  r.width = vectors(e.width);
  r.src_stride = vectors(e.src_stride);
  r.src_off = vectors(e.src_off);
  r.dst_stride = vectors(e.dst_stride);
  r.dst_off = vectors(e.dst_off);
  return true;
}

void copy_block(const void* src, void* dst, DType dt, const BlockCopy& b, cudaStream_t s) {
  const int64_t count = b.count();
  if (count <= 0) return;
  VecRows r;
  if (vec_rows(src, dst, dtype_size(dt), b, r)) {
    const int64_t vectors = r.rows * r.width;
    detail::launch(TG_LAUNCH_SITE, copy_rows_vec_kernel, detail::grid_for(vectors), detail::kBlock, s,
                   static_cast<const uint4*>(src), static_cast<uint4*>(dst), r, vectors);
    return;
  }
  // Rows this long keep a block of threads busy, and a block a row needs rows enough for
  // every SM; other blocks (a flat gradient bucket: one long row) take the element kernel.
  constexpr int64_t kLongRow = 1024;
  auto run = [&](auto e) {
    using E = decltype(e);
    const VecRows rows = element_rows(b);
    if (rows.width >= kLongRow && rows.rows >= detail::sm_count()) {  // enough rows to fill the device
      const int64_t cap = static_cast<int64_t>(detail::sm_count()) * 8;
      detail::launch(TG_LAUNCH_SITE, copy_rows_kernel<E>, static_cast<int>(rows.rows < cap ? rows.rows : cap), 256, s,
                     static_cast<const E*>(src), static_cast<E*>(dst), rows);
      return;
    }
    detail::launch(TG_LAUNCH_SITE, copy_block_kernel<E>, detail::grid_for(count), detail::kBlock, s,
                   static_cast<const E*>(src), static_cast<E*>(dst), b, count);
  };
  if (dtype_size(dt) == 8) return run(uint64_t{});  // i64 ids
  with_element(dt, run);
}

}  // namespace

void transpose(const void* x, const int64_t* in_dims, int rank, const int* perm, void* y, cudaStream_t s, DType dt) {
  with_element(dt, [&](auto e) {
    using E = decltype(e);
    transpose_as(static_cast<const E*>(x), in_dims, rank, perm, static_cast<E*>(y), dt, s);
  });
}

void broadcast(const void* x, void* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s, DType dt) {
  const int64_t total = outer * size * inner;
  if (total <= 0) return;
  with_element(dt, [&](auto e) {
    using E = decltype(e);
    constexpr int64_t kW = 16 / sizeof(E);
    if (inner % kW == 0 && detail::aligned16(x) && detail::aligned16(y))
      detail::launch(TG_LAUNCH_SITE, broadcast_kernel<uint4>, grid_for(total / kW), kBlock, s,
                     static_cast<const uint4*>(x), static_cast<uint4*>(y), total / kW, size, inner / kW);
    else
      detail::launch(TG_LAUNCH_SITE, broadcast_kernel<E>, grid_for(total), kBlock, s, static_cast<const E*>(x),
                     static_cast<E*>(y), total, size, inner);
  });
}

void concat(const OpCall& c, const CallGeometry& g, cudaStream_t s) {
  for (int i = 0; i < c.num_inputs; ++i) copy_block(c.input(i).data, c.out.data, c.out.dtype, concat_block(c, g, i), s);
}

void slice(const OpCall& c, const CallGeometry& g, cudaStream_t s) {
  copy_block(c.in[0].data, c.out.data, c.out.dtype, slice_block(c, g), s);
}

}  // namespace tg::kernels::cuda
