// max_pool2d and max_pool2d_grad with 32-bit index arithmetic, for tensors whose every flat
// index fits in it. The element functions of graph/conv.h (which conv.cu's direct kernel runs
// for every case) take each index apart with 64-bit divisions, which on a GPU are a long
// instruction sequence each: the ResNet stem's pool and its gradient took about 2.2 ms each
// at batch 32 on an H100, where their reads take a tenth of that. These kernels visit the
// same elements in the same order and compare and add as the element functions do, so they
// write the same bits.
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
template <typename T>
__device__ __forceinline__ Index window_argmax(const T* plane, Index step, const ConvGeometry& g, Index p, Index q) {
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

// The output position along one axis whose window tap t reads input position `in`
// (conv_out_pos of graph/conv.h with dilation 1), or -1.
__device__ __forceinline__ int64_t pool_out_pos(Index in, int64_t t, int64_t stride, int64_t pad, int64_t out_len) {
  const int64_t u = static_cast<int64_t>(in) + pad - t;
  if (u < 0) return -1;
  const Index uu = static_cast<Index>(u), st = static_cast<Index>(stride);
  if (uu % st != 0 || uu / st >= out_len) return -1;
  return uu / st;
}

// dx[n, c, h, w]: dy summed over the windows whose maximum (h, w) is, in pool2d_grad_element's order.
template <typename T>
__global__ void max_pool_grad_kernel(const T* dy, const T* x, T* dx, ConvGeometry g, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const Index chans = static_cast<Index>(g.c), step = g.nhwc ? chans : 1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Pos at = pos_of(g.nhwc, static_cast<Index>(i), chans, static_cast<Index>(g.h), static_cast<Index>(g.w));
    const T* xp = x + plane_at(g.nhwc, at.n, at.c, chans, static_cast<Index>(g.h), static_cast<Index>(g.w));
    const T* dp = dy + plane_at(g.nhwc, at.n, at.c, chans, static_cast<Index>(g.p), static_cast<Index>(g.q));
    const Index mine = at.h * static_cast<Index>(g.w) + at.w;
    double acc = 0;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t p = pool_out_pos(at.h, r, g.sh, g.ph, g.p);
      if (p < 0) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t q = pool_out_pos(at.w, s, g.sw, g.pw, g.q);
        if (q < 0) continue;
        const Index pp = static_cast<Index>(p), qq = static_cast<Index>(q);
        if (window_argmax(xp, step, g, pp, qq) == mine)
          acc += static_cast<float>(dp[(pp * static_cast<Index>(g.q) + qq) * step]);
      }
    }
    dx[i] = narrow<T>(static_cast<float>(acc));
  }
}

}  // namespace

bool max_pool_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s) {
  if (c.op != OpKind::max_pool2d && c.op != OpKind::max_pool2d_grad) return false;
  const int64_t in = g.n * g.c * g.h * g.w, out = g.n * g.c * g.p * g.q;
  if (in > int64_t{UINT32_MAX} || out > int64_t{UINT32_MAX}) return false;
  const int64_t n = c.out.shape.numel();
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    if (c.op == OpKind::max_pool2d)
      detail::launch(TG_LAUNCH_SITE, max_pool_kernel<T>, detail::grid_for(n), detail::kBlock, s,
                     elements<const T>(c.in[0].data), elements<T>(c.out.data), g, n);
    else
      detail::launch(TG_LAUNCH_SITE, max_pool_grad_kernel<T>, detail::grid_for(n), detail::kBlock, s,
                     elements<const T>(c.in[0].data), elements<const T>(c.in[1].data), elements<T>(c.out.data), g, n);
  });
  return true;
}

}  // namespace tg::kernels::cuda
