// The fused attention ops (graph/attention.h; the CPU reference is kernels/cpu/attention.cpp).
// Flash-attention style: the S x S scores never reach memory. A block holds kWarps query
// (or key) rows, one warp each, and walks the other side in tiles of kTile rows staged in
// shared memory as f32; lane t of a warp owns the tile's row t for the scores and the
// output dims lane, lane + 32, ... for the accumulators. The softmax is online (a running
// maximum and sum per row, rescaled per tile).
//
// The backward is deterministic without atomics: one kernel per key row block gives dk and
// dv (walking the query tiles), another per query row block gives dq (walking the key
// tiles); each output element is written by one lane, its sums in a fixed order.
//
// The padding mask (graph/attention.h) bounds the key loops as causal does: a query's keys
// are a prefix, so neither adds memory.
//
// The products are plain f32 FMAs, not the tensor cores: correct first. Every float dtype:
// T is the element type (storage.h), loads widened, the arithmetic f32's, stores rounded once.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "graph/attention.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

using namespace detail;

constexpr int kWarps = 8;     // rows of a block, one warp each
constexpr int kTile = 32;     // rows of the other side per shared-memory tile: one per lane
constexpr int kMaxDh = 128;   // head dims a tile holds (the shared memory stays under 48 KiB)
constexpr int kPerLane = kMaxDh / 32;
constexpr int kPitch = kMaxDh + 1;  // tiles read by lane-indexed row: the pad spreads the banks

struct Geo {
  int64_t heads, seq, dh, ld;
  const void* lengths;  // the padding mask's key lengths [B] (graph/attention.h), or null
  DType lengths_dtype;
  // Row r of matrix m (= b * heads + h) of a head view.
  __device__ int64_t at(int64_t m, int64_t r) const { return (m / heads) * seq * ld + (m % heads) * dh + r * ld; }
  // The keys of matrix m below its sequence's length, clamped to [0, seq].
  __device__ int64_t keys(int64_t m) const {
    if (!lengths) return seq;
    const int64_t b = m / heads;
    const int64_t n = lengths_dtype == DType::I32   ? static_cast<const int32_t*>(lengths)[b]
                      : lengths_dtype == DType::I64 ? static_cast<const int64_t*>(lengths)[b]
                                                    : static_cast<int64_t>(static_cast<const float*>(lengths)[b]);
    return n < 0 ? 0 : n > seq ? seq : n;
  }
};

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ float dot_smem(const float* a, const float* b, int dh) {
  float s = 0.0f;
  for (int d = 0; d < dh; ++d) s = fmaf(a[d], b[d], s);
  return s;
}

// Rows [r0, r0 + n) of matrix m of a head view into a [kTile][pitch] f32 tile, by the block.
template <typename T>
__device__ void load_tile(const T* src, const Geo& g, int64_t m, int64_t r0, int n, float* tile, int pitch) {
  for (int idx = threadIdx.x; idx < n * g.dh; idx += blockDim.x) {
    const int r = idx / static_cast<int>(g.dh), d = idx % static_cast<int>(g.dh);
    tile[r * pitch + d] = static_cast<float>(src[g.at(m, r0 + r) + d]);
  }
}

// The row statistic of query row i of matrix m: hi + lo (graph/attention.h).
template <typename T>
__device__ __forceinline__ float lse_at(const T* lse, const Geo& g, int64_t m, int64_t i) {
  const int64_t p = (m * g.seq + i) * 2;
  return static_cast<float>(lse[p]) + static_cast<float>(lse[p + 1]);
}

// attention (kLse false: out is the output) or attention_lse (kLse true: out is the pairs).
template <typename T, bool kLse>
__global__ void __launch_bounds__(kWarps * 32) attention_fwd(const T* q, const T* k, const T* v, T* out, Geo g,
                                                             float alpha, bool causal) {
  pdl::prologue();
  __shared__ float ks[kTile * kPitch];
  __shared__ float vs[kLse ? 1 : kTile * kMaxDh];
  __shared__ float qs[kWarps][kMaxDh];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, dh = static_cast<int>(g.dh);
  const int64_t m = blockIdx.x, row0 = static_cast<int64_t>(blockIdx.y) * kWarps, i = row0 + warp;
  const bool active = i < g.seq;
  if (active)
    for (int d = lane; d < dh; d += 32) qs[warp][d] = static_cast<float>(q[g.at(m, i) + d]);
  const int64_t kend = min64(causal ? min64(g.seq, row0 + kWarps) : g.seq, g.keys(m));
  float mx = -INFINITY, l = 0.0f, acc[kPerLane] = {};
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    const int n = static_cast<int>(min64(kTile, kend - j0));
    __syncthreads();  // the tile before is consumed
    load_tile(k, g, m, j0, n, ks, kPitch);
    if constexpr (!kLse) load_tile(v, g, m, j0, n, vs, kMaxDh);
    __syncthreads();
    if (!active) continue;
    const int64_t j = j0 + lane;
    const bool seen = lane < n && (!causal || j <= i);
    const float s = seen ? alpha * dot_smem(qs[warp], ks + lane * kPitch, dh) : -INFINITY;
    const float mnew = fmaxf(mx, warp_max(s));
    if (mnew == -INFINITY) continue;  // no key seen yet
    const float p = seen ? expf(s - mnew) : 0.0f;
    const float corr = mx == -INFINITY ? 0.0f : expf(mx - mnew);
    l = l * corr + warp_sum(p);
    mx = mnew;
    if constexpr (!kLse) {
#pragma unroll
      for (int r = 0; r < kPerLane; ++r) acc[r] *= corr;
      for (int t = 0; t < n; ++t) {
        const float pt = __shfl_sync(0xffffffffu, p, t);
#pragma unroll
        for (int r = 0; r < kPerLane; ++r)
          if (lane + 32 * r < dh) acc[r] = fmaf(pt, vs[t * kMaxDh + lane + 32 * r], acc[r]);
      }
    }
  }
  if (!active) return;
  if constexpr (kLse) {
    if (lane == 0) {
      float hi, lo;
      split_lse(l > 0.0f ? mx + logf(l) : 0.0f, dtype_of<T>(), hi, lo);  // 0 for a row without keys
      out[(m * g.seq + i) * 2] = narrow<T>(hi);
      out[(m * g.seq + i) * 2 + 1] = narrow<T>(lo);
    }
  } else {
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row without keys gives 0
#pragma unroll
    for (int r = 0; r < kPerLane; ++r)
      if (lane + 32 * r < dh) out[g.at(m, i) + lane + 32 * r] = narrow<T>(acc[r] * inv);
  }
}

// dq: per query row i, D = dout_i . out_i, then over the key tiles
// ds_ij = p_ij (dout_i . v_j - D), dq_i = alpha sum_j ds_ij k_j.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) attention_dq(const T* dout, const T* q, const T* k, const T* v,
                                                            const T* o, const T* lse, T* dq, Geo g, float alpha,
                                                            bool causal) {
  pdl::prologue();
  __shared__ float ks[kTile * kPitch];
  __shared__ float vs[kTile * kPitch];
  __shared__ float qs[kWarps][kMaxDh];
  __shared__ float dos[kWarps][kMaxDh];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, dh = static_cast<int>(g.dh);
  const int64_t m = blockIdx.x, row0 = static_cast<int64_t>(blockIdx.y) * kWarps, i = row0 + warp;
  const bool active = i < g.seq;
  float D = 0.0f, L = 0.0f;
  if (active) {
    float part = 0.0f;
    for (int d = lane; d < dh; d += 32) {
      qs[warp][d] = static_cast<float>(q[g.at(m, i) + d]);
      dos[warp][d] = static_cast<float>(dout[g.at(m, i) + d]);
      part = fmaf(dos[warp][d], static_cast<float>(o[g.at(m, i) + d]), part);
    }
    D = warp_sum(part);
    L = lse_at(lse, g, m, i);
  }
  const int64_t kend = min64(causal ? min64(g.seq, row0 + kWarps) : g.seq, g.keys(m));
  float acc[kPerLane] = {};
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    const int n = static_cast<int>(min64(kTile, kend - j0));
    __syncthreads();
    load_tile(k, g, m, j0, n, ks, kPitch);
    load_tile(v, g, m, j0, n, vs, kPitch);
    __syncthreads();
    if (!active) continue;
    const int64_t j = j0 + lane;
    float ds = 0.0f;
    if (lane < n && (!causal || j <= i)) {
      const float p = expf(alpha * dot_smem(qs[warp], ks + lane * kPitch, dh) - L);
      ds = p * (dot_smem(dos[warp], vs + lane * kPitch, dh) - D);
    }
    for (int t = 0; t < n; ++t) {
      const float dst = __shfl_sync(0xffffffffu, ds, t);
#pragma unroll
      for (int r = 0; r < kPerLane; ++r)
        if (lane + 32 * r < dh) acc[r] = fmaf(dst, ks[t * kPitch + lane + 32 * r], acc[r]);
    }
  }
  if (!active) return;
#pragma unroll
  for (int r = 0; r < kPerLane; ++r)
    if (lane + 32 * r < dh) dq[g.at(m, i) + lane + 32 * r] = narrow<T>(alpha * acc[r]);
}

// dk and dv: per key row j, over the query tiles (those at or after j when causal)
// dv_j = sum_i p_ij dout_i, dk_j = alpha sum_i ds_ij q_i.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) attention_dkv(const T* dout, const T* q, const T* k, const T* v,
                                                             const T* o, const T* lse, T* dk, T* dv, Geo g,
                                                             float alpha, bool causal) {
  pdl::prologue();
  __shared__ float qs[kTile * kPitch];
  __shared__ float dos[kTile * kPitch];
  __shared__ float Ls[kTile], Ds[kTile];
  __shared__ float kr[kWarps][kMaxDh];
  __shared__ float vr[kWarps][kMaxDh];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, dh = static_cast<int>(g.dh);
  const int64_t m = blockIdx.x, row0 = static_cast<int64_t>(blockIdx.y) * kWarps, j = row0 + warp;
  const bool active = j < g.seq, real = j < g.keys(m);  // a masked key gets dk = dv = 0
  if (active)
    for (int d = lane; d < dh; d += 32) {
      kr[warp][d] = static_cast<float>(k[g.at(m, j) + d]);
      vr[warp][d] = static_cast<float>(v[g.at(m, j) + d]);
    }
  float acck[kPerLane] = {}, accv[kPerLane] = {};
  for (int64_t i0 = causal ? row0 / kTile * kTile : 0; i0 < g.seq; i0 += kTile) {
    const int n = static_cast<int>(min64(kTile, g.seq - i0));
    __syncthreads();
    load_tile(q, g, m, i0, n, qs, kPitch);
    load_tile(dout, g, m, i0, n, dos, kPitch);
    __syncthreads();
    // D and the statistic of the tile's query rows, once per block: D summed as attention_dq
    // sums it (lanes over the dims, then the warp's tree), so both kernels use the same bits.
    for (int r = warp; r < n; r += kWarps) {
      const int64_t i = i0 + r;
      float part = 0.0f;
      for (int d = lane; d < dh; d += 32)
        part = fmaf(dos[r * kPitch + d], static_cast<float>(o[g.at(m, i) + d]), part);
      part = warp_sum(part);
      if (lane == 0) {
        Ds[r] = part;
        Ls[r] = lse_at(lse, g, m, i);
      }
    }
    __syncthreads();
    if (!active) continue;
    const int64_t i = i0 + lane;
    float p = 0.0f, ds = 0.0f;
    if (real && lane < n && (!causal || i >= j)) {
      p = expf(alpha * dot_smem(qs + lane * kPitch, kr[warp], dh) - Ls[lane]);
      ds = p * (dot_smem(dos + lane * kPitch, vr[warp], dh) - Ds[lane]);
    }
    for (int t = 0; t < n; ++t) {
      const float pt = __shfl_sync(0xffffffffu, p, t), dst = __shfl_sync(0xffffffffu, ds, t);
#pragma unroll
      for (int r = 0; r < kPerLane; ++r)
        if (lane + 32 * r < dh) {
          accv[r] = fmaf(pt, dos[t * kPitch + lane + 32 * r], accv[r]);
          acck[r] = fmaf(dst, qs[t * kPitch + lane + 32 * r], acck[r]);
        }
    }
  }
  if (!active) return;
#pragma unroll
  for (int r = 0; r < kPerLane; ++r)
    if (lane + 32 * r < dh) {
      dk[g.at(m, j) + lane + 32 * r] = narrow<T>(alpha * acck[r]);
      dv[g.at(m, j) + lane + 32 * r] = narrow<T>(accv[r]);
    }
}

}  // namespace

void attention_op(const OpCall& c, cudaStream_t s) {
  const bool grad = c.op == OpKind::attention_grad;
  AttentionGeometry ag;
  std::string why;
  if (!attention_geometry(c.in[grad ? 1 : 0].shape, *c.attrs, ag, &why))
    throw std::invalid_argument(std::string("run_cuda ") + op_name(c.op) + ": " + why);
  if (ag.dh > kMaxDh)
    throw std::invalid_argument(std::string("run_cuda ") + op_name(c.op) + ": heads of " + std::to_string(ag.dh) +
                                " dims; the CUDA kernel's tiles hold at most " + std::to_string(kMaxDh) +
                                ": use more heads, or run it on the CPU backend");
  const int64_t row_blocks = (ag.seq + kWarps - 1) / kWarps;
  if (row_blocks > 65535 || ag.rows() > 0x7fffffff)
    throw std::invalid_argument(std::string("run_cuda ") + op_name(c.op) + ": sequence " + std::to_string(ag.seq) +
                                " or batch x heads " + std::to_string(ag.rows()) + " exceeds the kernel's grid");
  const bool masked = op_has_key_lengths(c.op, c.num_inputs);
  const TensorView* lengths = masked ? &c.input(c.num_inputs - 1) : nullptr;
  const Geo g{ag.heads, ag.seq, ag.dh, ag.ld(), lengths ? static_cast<const void*>(lengths->data) : nullptr,
              lengths ? lengths->dtype : DType::I32};
  const dim3 grid(static_cast<unsigned>(ag.rows()), static_cast<unsigned>(row_blocks)), block(kWarps * 32);
  const float alpha = c.attrs->alpha;
  const bool causal = c.attrs->causal;
  with_element_type(c.out.dtype, [&](auto e) {
    using T = decltype(e);
    auto in = [&](int i) { return elements<const T>(c.in[static_cast<size_t>(i)].data); };
    T* out = elements<T>(c.out.data);
    switch (c.op) {
      case OpKind::attention:
        return launch(TG_LAUNCH_SITE, attention_fwd<T, false>, grid, block, s, in(0), in(1), in(2), out, g, alpha,
                      causal);
      case OpKind::attention_lse:
        return launch(TG_LAUNCH_SITE, attention_fwd<T, true>, grid, block, s, in(0), in(1), in(1), out, g, alpha,
                      causal);
      case OpKind::attention_fwd_lse:
        // The two ops' kernels, so that the fused op has their bits on this path (f32, and
        // what cuDNN declines); the forward runs once only through cuDNN.
        launch(TG_LAUNCH_SITE, attention_fwd<T, false>, grid, block, s, in(0), in(1), in(2), out, g, alpha, causal);
        return launch(TG_LAUNCH_SITE, attention_fwd<T, true>, grid, block, s, in(0), in(1), in(1),
                      elements<T>(c.out2.data), g, alpha, causal);
      default: {
        // [3, B, S, heads * dh]: dq, dk, dv
        const int64_t part = ag.batch * ag.seq * ag.ld();
        launch(TG_LAUNCH_SITE, attention_dkv<T>, grid, block, s, in(0), in(1), in(2), in(3), in(4), in(5), out + part,
               out + 2 * part, g, alpha, causal);
        return launch(TG_LAUNCH_SITE, attention_dq<T>, grid, block, s, in(0), in(1), in(2), in(3), in(4), in(5), out,
                      g, alpha, causal);
      }
    }
  });
}

}  // namespace tg::kernels::cuda
