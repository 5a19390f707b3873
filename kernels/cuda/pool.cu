// max_pool2d and max_pool2d_grad with 32-bit index arithmetic, for tensors whose every flat
// index fits in it; the gradient in tiles of windows whose maxima are found once. The element
// functions of graph/conv.h (which conv.cu's direct kernel runs for every case) take each
// index apart with 64-bit divisions, which on a GPU are a long instruction sequence each: the
// ResNet stem's pool and its gradient took about 2.2 ms each at batch 32 on an H100, where
// their reads take a tenth of that. These kernels visit the same elements in the same order
// and compare and add as the element functions do, so they write the same bits.
#include <cuda_runtime.h>

#include "graph/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

using Index = uint32_t;

// Flat index i of an [n, chans, hh, ww] activation (NHWC: [n, hh, ww, chans]) as act_pos
// of graph/conv.h takes it apart.
struct Pos {
  Index n, c, h, w;
};
__device__ __forceinline__ Pos pos_of(bool nhwc, Index i, Index chans, Index hh, Index ww) {
  if (nhwc) {
    const Index pixel = i / chans;
    return {pixel / ww / hh, i % chans, pixel / ww % hh, pixel % ww};
  }
  const Index rows = i / ww;
  return {rows / hh / chans, rows / hh % chans, rows % hh, i % ww};
}
// The first element of image n's channel c in an [n, chans, hh, ww] activation, and the step
// between its neighbours in a row (PoolPlane of graph/conv.h).
__device__ __forceinline__ Index plane_at(bool nhwc, Index n, Index c, Index chans, Index hh, Index ww) {
  return nhwc ? n * hh * ww * chans + c : (n * chans + c) * hh * ww;
}

// max_pool_argmax of graph/conv.h: the first maximum in row-major order of window (p, q).
// A 3 x 3 window (every ResNet's) loads its taps before it compares any: the loop below
// waits on each load in turn, and the stem's pool and its gradient waited mostly on those.
template <typename T>
__device__ __forceinline__ Index window_argmax3(const T* plane, Index step, const ConvGeometry& g, Index p, Index q) {
  const int hs = static_cast<int>(p) * static_cast<int>(g.sh) - static_cast<int>(g.ph);
  const int ws = static_cast<int>(q) * static_cast<int>(g.sw) - static_cast<int>(g.pw);
  const int hh = static_cast<int>(g.h), width = static_cast<int>(g.w);
  float v[9];
  bool in[9];
#pragma unroll
  for (int t = 0; t < 9; ++t) {
    const int h = hs + t / 3, w = ws + t % 3;
    in[t] = h >= 0 && h < hh && w >= 0 && w < width;
    // The flat index in Index (unsigned 32 bits), as the loop below: a plane may pass 2^31.
    const Index at = static_cast<Index>(h) * static_cast<Index>(width) + static_cast<Index>(w);
    v[t] = in[t] ? static_cast<float>(plane[at * step]) : 0.0f;
  }
  int best = -1;
  float top = 0.0f;
#pragma unroll
  for (int t = 0; t < 9; ++t) {
    if (!in[t]) continue;
    if (best < 0 || v[t] > top) {
      best = t;
      top = v[t];
    }
  }
  const Index w_index = static_cast<Index>(width);
  if (best < 0)  // as the loop below
    return static_cast<Index>(hs < 0 ? 0 : hs) * w_index + static_cast<Index>(ws < 0 ? 0 : ws);
  return static_cast<Index>(hs + best / 3) * w_index + static_cast<Index>(ws + best % 3);
}
template <typename T>
__device__ __forceinline__ Index window_argmax(const T* plane, Index step, const ConvGeometry& g, Index p, Index q) {
  if (g.r == 3 && g.s == 3) return window_argmax3(plane, step, g, p, q);
  const int64_t hs = static_cast<int64_t>(p) * g.sh - g.ph, ws = static_cast<int64_t>(q) * g.sw - g.pw;
  const Index h0 = static_cast<Index>(hs < 0 ? 0 : hs), w0 = static_cast<Index>(ws < 0 ? 0 : ws);
  const Index h1 = static_cast<Index>(hs + g.r < g.h ? hs + g.r : g.h);
  const Index w1 = static_cast<Index>(ws + g.s < g.w ? ws + g.s : g.w);
  const Index width = static_cast<Index>(g.w);
  Index best = h0 * width + w0;
  float top = static_cast<float>(plane[best * step]);
  for (Index h = h0; h < h1; ++h)
    for (Index w = w0; w < w1; ++w) {
      const float v = static_cast<float>(plane[(h * width + w) * step]);
      if (v > top) {
        best = h * width + w;
        top = v;
      }
    }
  return best;
}

template <typename T>
__global__ void max_pool_kernel(const T* x, T* y, ConvGeometry g, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;  // a 32-bit count could wrap past n
  const Index chans = static_cast<Index>(g.c), step = g.nhwc ? chans : 1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Pos o = pos_of(g.nhwc, static_cast<Index>(i), chans, static_cast<Index>(g.p), static_cast<Index>(g.q));
    const T* xp = x + plane_at(g.nhwc, o.n, o.c, chans, static_cast<Index>(g.h), static_cast<Index>(g.w));
    y[i] = narrow<T>(static_cast<float>(xp[window_argmax(xp, step, g, o.h, o.w) * step]));
  }
}

// The windows along one axis whose taps read input position `in`: first..last (inclusive;
// none when last < first). Tap t of window p reads p stride - pad + t, so t = 0, 1, ... visit
// the windows from last down to first: pool2d_grad_element's order of taps.
// 32-bit arithmetic: an axis of a tensor whose flat indices fit in 32 bits.
struct Windows {
  int first, last;
};
__device__ __forceinline__ Windows windows_of(Index in, int64_t taps, int64_t stride, int64_t pad, int64_t outs) {
  const int st = static_cast<int>(stride);
  const int reach = static_cast<int>(in) + static_cast<int>(pad);  // >= 0
  const int low = reach - (static_cast<int>(taps) - 1);
  const int first = low <= 0 ? 0 : (low + st - 1) / st;
  const int last = reach / st < static_cast<int>(outs) - 1 ? reach / st : static_cast<int>(outs) - 1;
  return {first, last};
}

// max_pool2d_grad in tiles: a block takes one plane (n, c) (NHWC: a group of planes, below) and
// a tile of kPoolTile x kPoolTile output windows (NHWC: half as wide), finds the maximum of each
// window once (with the windows before the tile that reach into it), keeps them in shared
// memory, and then writes dx for the inputs that lie from the first window's start to the next
// tile's: dy summed over the windows whose maximum the input is, in pool2d_grad_element's order
// (graph/conv.h: taps r, then s; a double sum, rounded once).
// A thread per input that found each covering window's maximum itself read every window up to
// four times over (3 x 3 stride 2): the ResNet stem's gradient took 1.9 ms at batch 32 on an H100.
constexpr Index kPoolTile = 16;

struct PoolTiles {
  int64_t tiles_p, tiles_q, blocks;  // tiles down and across a plane; planes x tiles
  Index halo_p, halo_q;              // windows before a tile whose taps reach its inputs
  Index tile;                        // windows a tile has down and across
};

// The windows before tile start t0 (stride st, kernel k) whose taps reach an input from t0's
// window start on: (k - 1) / st.
inline Index pool_halo(int64_t k, int64_t st) { return static_cast<Index>((k - 1) / st); }

// Inputs [lo, hi) of the tile of windows [t0, t1) along an axis of `len` inputs and `outs`
// windows: from window t0's start (0 for the first tile) to window t1's (len for the last).
struct Span {
  Index lo, hi;
};
__device__ __forceinline__ Span tile_inputs(Index t0, Index t1, int64_t stride, int64_t pad, int64_t len, int64_t outs) {
  const auto clamp = [len](int64_t v) { return static_cast<Index>(v < 0 ? 0 : v > len ? len : v); };
  return {t0 == 0 ? Index{0} : clamp(static_cast<int64_t>(t0) * stride - pad),
          t1 == outs ? static_cast<Index>(len) : clamp(static_cast<int64_t>(t1) * stride - pad)};
}

// NHWC: a block takes kPoolGroup neighbouring channels of one image side by side (Lanes =
// kPoolGroup), lane j channel j of the group, so that each warp's loads and stores are of
// consecutive channels; NCHW (Lanes = 1) one plane. A block of NHWC planes read a channel's
// elements C apart: the ResNet stem's gradient took 0.88 ms in bf16 at batch 32 on an H100.
constexpr Index kPoolGroup = 32;

template <typename T, int Lanes>
__global__ void __launch_bounds__(256) max_pool_grad_kernel(const T* dy, const T* x, T* dx, ConvGeometry g, PoolTiles t) {
  pdl::prologue();
  extern __shared__ Index window_max[];  // [window of [pb, p1) x [qb, q1), row-major][lane]
  const Index chans = static_cast<Index>(g.c), step = g.nhwc ? chans : 1;
  const Index groups = (chans + Lanes - 1) / Lanes;  // planes of an image (NCHW: its channels)
  const Index hh = static_cast<Index>(g.h), ww = static_cast<Index>(g.w);
  const Index pp = static_cast<Index>(g.p), qq = static_cast<Index>(g.q);
  const Index lane = threadIdx.x % Lanes, row = threadIdx.x / Lanes, rows_per_block = blockDim.x / Lanes;
  const int64_t per_plane = t.tiles_p * t.tiles_q;
  for (int64_t b = blockIdx.x; b < t.blocks; b += gridDim.x) {
    const Index plane = static_cast<Index>(b / per_plane), tile = static_cast<Index>(b % per_plane);
    const Index n = plane / groups, c = plane % groups * Lanes + lane;
    const bool mine_channel = c < chans;
    const Index p0 = tile / static_cast<Index>(t.tiles_q) * t.tile, q0 = tile % static_cast<Index>(t.tiles_q) * t.tile;
    const Index p1 = p0 + t.tile < pp ? p0 + t.tile : pp, q1 = q0 + t.tile < qq ? q0 + t.tile : qq;
    const Index pb = p0 > t.halo_p ? p0 - t.halo_p : 0, qb = q0 > t.halo_q ? q0 - t.halo_q : 0;
    const Index across = q1 - qb;
    const Index cc = mine_channel ? c : 0;
    const T* xp = x + plane_at(g.nhwc, n, cc, chans, hh, ww);
    const T* dp = dy + plane_at(g.nhwc, n, cc, chans, pp, qq);
    T* dxp = dx + plane_at(g.nhwc, n, cc, chans, hh, ww);
    __syncthreads();  // every thread is done with the previous tile's maxima
    if (mine_channel)
      for (Index k = row; k < (p1 - pb) * across; k += rows_per_block)
        window_max[k * Lanes + lane] = window_argmax(xp, step, g, pb + k / across, qb + k % across);
    __syncthreads();
    if (!mine_channel) continue;
    // Every window whose taps reach an input of this tile lies in [pb, p1) x [qb, q1): from the
    // input's side, p <= (h + ph) / sh < p1 and p >= (h + ph - (r - 1)) / sh >= p0 - halo_p.
    const Span rows = tile_inputs(p0, p1, g.sh, g.ph, g.h, g.p), cols = tile_inputs(q0, q1, g.sw, g.pw, g.w, g.q);
    const Index width = cols.hi - cols.lo;
    for (Index k = row; k < (rows.hi - rows.lo) * width; k += rows_per_block) {
      const Index h = rows.lo + k / width, w = cols.lo + k % width;
      const Index mine = h * ww + w;
      double acc = 0;
      const Windows ps = windows_of(h, g.r, g.sh, g.ph, g.p), qs = windows_of(w, g.s, g.sw, g.pw, g.q);
      for (int p = ps.last; p >= ps.first; --p)
        for (int q = qs.last; q >= qs.first; --q) {
          const Index pi = static_cast<Index>(p), qi = static_cast<Index>(q);
          if (window_max[((pi - pb) * across + (qi - qb)) * Lanes + lane] == mine)
            acc += static_cast<float>(dp[(pi * qq + qi) * step]);
        }
      dxp[mine * step] = narrow<T>(static_cast<float>(acc));
    }
  }
}

}  // namespace

bool max_pool_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s) {
  if (c.op != OpKind::max_pool2d && c.op != OpKind::max_pool2d_grad) return false;
  const int64_t in = g.n * g.c * g.h * g.w, out = g.n * g.c * g.p * g.q;
  if (in > int64_t{UINT32_MAX} || out > int64_t{UINT32_MAX}) return false;
  const int64_t n = c.out.shape.numel();
  if (c.op == OpKind::max_pool2d) {
    with_element_type(c.out.dtype, [&](auto e) {
      using T = decltype(e);
      detail::launch(TG_LAUNCH_SITE, max_pool_kernel<T>, detail::grid_for(n), detail::kBlock, s,
                     elements<const T>(c.in[0].data), elements<T>(c.out.data), g, n);
    });
    return true;
  }
  PoolTiles t;
  t.halo_p = pool_halo(g.r, g.sh);
  t.halo_q = pool_halo(g.s, g.sw);
  // NHWC: smaller tiles, since a block keeps the maxima of kPoolGroup channels.
  t.tile = g.nhwc ? kPoolTile / 2 : kPoolTile;
  const int64_t lanes = g.nhwc ? kPoolGroup : 1;
  const size_t smem = static_cast<size_t>(t.tile + t.halo_p) * (t.tile + t.halo_q) * lanes * sizeof(Index);
  // A window far larger than its stride (a global pool written as max_pool2d): the direct kernel.
  if (smem > 48 * 1024) return false;
  t.tiles_p = (g.p + t.tile - 1) / t.tile;
  t.tiles_q = (g.q + t.tile - 1) / t.tile;
  const int64_t planes = g.nhwc ? g.n * ((g.c + kPoolGroup - 1) / kPoolGroup) : g.n * g.c;
  t.blocks = planes * t.tiles_p * t.tiles_q;
  if (t.blocks <= 0) return true;
  const int grid = static_cast<int>(t.blocks < (int64_t{1} << 30) ? t.blocks : (int64_t{1} << 30));
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    auto* const kernel = g.nhwc ? max_pool_grad_kernel<T, kPoolGroup> : max_pool_grad_kernel<T, 1>;
    detail::launch_smem(TG_LAUNCH_SITE, kernel, grid, 256, smem, s, elements<const T>(c.in[0].data), elements<const T>(c.in[1].data),
                        elements<T>(c.out.data), g, t);
  });
  return true;
}

}  // namespace tg::kernels::cuda
