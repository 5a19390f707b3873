// Batch normalization per channel of [N, C, ...] and its gradients, in three launches: the
// channels' sums split over the whole device, a combine per channel, and one elementwise
// pass. Deterministic, no atomics: each partial sum and the combine run in a fixed order. Every
// float dtype; the arithmetic is f32's (in double), each output rounds to float as f32
// stores it, then once to its own type.
//
// Why split: a channel of the first stage of an ImageNet network has n * H * W = 400k
// elements and there are only 64 channels, so one block per channel left most of the device
// idle, and reading the channel once per statistic (mean, variance, the gradient's two sums)
// read the activations up to seven times a step. Here one pass gathers every sum a call needs
// (of d = x - shift, d * d, dy and dy * d, with shift the channel's first element, so the
// one-pass variance does not cancel; batch_norm_grad_beta's plain sum has none), and a second
// pass writes the output.
//
// Every float dtype: T is the element type of the per-element tensors (x, dy, the output, dx),
// P that of the per-channel inputs (gamma, beta, running statistics): T, or f32 beside 16-bit
// activations (graph/op.h kTypeChannels); a channel's sums (dgamma, dbeta) are stored as f32.
//
// The order of a channel's sums: the channel's elements e (in BatchNormGeometry's order,
// the same in both layouts) are cut into `segments` equal runs; in run s, lane j of 32 sums
// e = s L + j + 32 k for k = 0, 1, ... in order, the 32 lane sums are added as a warp's
// butterfly adds them (kernels/cuda/common.cuh's warp_sum), and the combine's lane j adds
// runs j, j + 32, ... in order, its 32 lanes again added as the butterfly adds them. NCHW
// reads a run as one warp over consecutive elements; NHWC, whose consecutive elements of a
// channel are C apart, as a block of 32 channels x 32 lanes that reads 32
// neighbouring channels at a time and adds the lanes in shared memory in the butterfly's
// order. Both give every channel the same bits, so an NHWC graph trains to the NCHW bits.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <type_traits>

#include "graph/dtype_rules.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

constexpr int kSums = 4;           // d, d * d, dy, dy * d
constexpr int kWarpsPerBlock = 8;  // NCHW partial sums: a warp per (channel, run)
constexpr int kLoads = 8;  // loads a lane of the partial sums has in flight
constexpr int kCoefs = 6;  // per channel, for the elementwise pass: kCoefs arrays of C doubles
constexpr int kApplyPer = 8;  // elements a lane loads, then writes, per chunk of the elementwise pass

// What a call needs from the partial sums: the shifted sums of x and its squares (stats), with
// dy's and dy * d's too (grad), or the plain sum of x (sum: batch_norm_grad_beta's dy, where a
// shift would turn an inf into inf - inf).
enum class Need : uint8_t { stats, grad, sum };

struct Split {
  int64_t segments = 1, run = 0;  // runs per channel and their length (elements)
};

// Enough (channel, run) pairs to fill the device with warps, none shorter than 8 elements a
// lane. The same for both layouts (C and the count alone), so both get the same bits.
Split split_of(const BatchNormGeometry& g) {
  const int64_t count = g.count();
  const int64_t warps = static_cast<int64_t>(detail::sm_count()) * 64;
  const int64_t by_device = std::max<int64_t>(1, (warps + g.c - 1) / g.c);
  const int64_t by_length = std::max<int64_t>(1, count / (32 * 8));
  Split s;
  s.segments = std::min(by_device, by_length);
  s.run = (count + s.segments - 1) / s.segments;
  return s;
}

// The flat index of element e of channel ch (BatchNormGeometry::index), with I the type of
// the division: uint32_t when every flat index fits in it, else int64_t.
template <typename I>
__device__ __forceinline__ int64_t bn_index(const BatchNormGeometry& g, int64_t ch, int64_t e) {
  if (g.channels_last) return e * g.c + ch;
  const I inner = static_cast<I>(g.inner);
  const I n = static_cast<I>(e) / inner;
  const I r = static_cast<I>(e) - n * inner;
  return (static_cast<int64_t>(n) * g.c + ch) * g.inner + static_cast<int64_t>(r);
}

// A walk through planes of `inner` elements, 32 elements a step: r, the place in the
// current plane, moves on 32 % inner; the step crosses `planes` = 32 / inner planes, one more
// where advance reports a carry. Cheaper than dividing every index out.
template <typename I>
struct PlaneWalk32 {
  I inner, planes, rest;
  __device__ explicit PlaneWalk32(I plane_size) : inner(plane_size), planes(32 / plane_size), rest(32 % plane_size) {}
  __device__ __forceinline__ I advance(I& r) const {
    r += rest;
    if (r < inner) return 0;
    r -= inner;
    return 1;
  }
};

// One element's terms added to a lane's sums (v = x - shift, w = dy). Explicit roundings: the
// kernels of both layouts must not contract differently.
template <Need N>
__device__ __forceinline__ void add_terms(float x, float dy, double shift, double& a, double& b, double& c, double& d) {
  const double v = __dsub_rn(x, shift);
  a = __dadd_rn(a, v);
  if (N != Need::sum) b = __fma_rn(v, v, b);
  if (N == Need::grad) {
    const double w = dy;
    c = __dadd_rn(c, w);
    d = __fma_rn(w, v, d);
  }
}

// The elementwise pass's two formulas, one function each so that every apply kernel rounds alike.
__device__ __forceinline__ float bn_forward_value(float x, double mean, double rstd, double gamma, double beta) {
  return static_cast<float>((static_cast<double>(x) - mean) * rstd * gamma + beta);
}
// batch_norm_moments' relu epilogue: the relu op's own formula, which commutes with each dtype's
// rounding (the fused op writes the bits of the relu after it).
__device__ __forceinline__ float bn_relu(float v) { return detail::ReluF{}(v, v); }
// gamma_rstd = gamma * rstd, the formula's first product (a channel's constant).
__device__ __forceinline__ float bn_grad_value_scaled(float dy, float x, double mean, double rstd, double gamma_rstd,
                                                      double dy_mean, double dy_xhat_mean) {
  const double xhat = (static_cast<double>(x) - mean) * rstd;
  return static_cast<float>(gamma_rstd * (static_cast<double>(dy) - dy_mean - xhat * dy_xhat_mean));
}
__device__ __forceinline__ float bn_grad_value(float dy, float x, double mean, double rstd, double gamma,
                                               double dy_mean, double dy_xhat_mean) {
  return bn_grad_value_scaled(dy, x, mean, rstd, gamma * rstd, dy_mean, dy_xhat_mean);
}

// Lane j's sums over run s of channel ch: e = s L + j + 32 k. The loads of kLoads steps are
// issued before their sums: one load in flight per lane left the device at a third of the copy's
// bandwidth on 16-bit activations (a warp's load is 64 bytes there). The sums still add in k's order.
template <typename T, typename I>
__device__ __forceinline__ void lane_sums(const T* x, const T* dy, Need need, const BatchNormGeometry& g, int64_t ch,
                                          const Split& sp, int64_t s, int j, double out[kSums]) {
  const int64_t begin = s * sp.run, end = begin + sp.run < g.count() ? begin + sp.run : g.count();
  const double shift = need == Need::sum ? 0.0 : static_cast<float>(x[bn_index<I>(g, ch, 0)]);
  double a = 0, b = 0, c = 0, d = 0;
  // NCHW: element e is (n, r) = (e / inner, e % inner), walked along with e instead of
  // divided out for every element (the division cost more than the load).
  const PlaneWalk32<I> walk(static_cast<I>(g.inner));
  I n = static_cast<I>(begin + j) / walk.inner, r = static_cast<I>(begin + j) - n * walk.inner;
  for (int64_t e0 = begin + j; e0 < end; e0 += 32 * kLoads) {
    float xs[kLoads], ws[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t e = e0 + 32 * u;
      const int64_t i =
          g.channels_last ? e * g.c + ch : (static_cast<int64_t>(n) * g.c + ch) * g.inner + static_cast<int64_t>(r);
      if (!g.channels_last) n += walk.planes + walk.advance(r);
      xs[u] = e < end ? static_cast<float>(x[i]) : 0.0f;
      ws[u] = need == Need::grad && e < end ? static_cast<float>(dy[i]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (e0 + 32 * u >= end) break;
      if (need == Need::grad) add_terms<Need::grad>(xs[u], ws[u], shift, a, b, c, d);
      else if (need == Need::stats) add_terms<Need::stats>(xs[u], 0.0f, shift, a, b, c, d);
      else add_terms<Need::sum>(xs[u], 0.0f, shift, a, b, c, d);
    }
  }
  out[0] = a, out[1] = b, out[2] = c, out[3] = d;
}

// NCHW: warp w of block blk takes pair p = blk * kWarpsPerBlock + w = ch * segments + s.
template <typename T, typename I>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) bn_partials_nchw_kernel(const T* x, const T* dy, Need need,
                                                                               BatchNormGeometry g, Split sp,
                                                                               double* partials) {
  pdl::prologue();
  const int64_t pair = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (pair >= g.c * sp.segments) return;
  const int64_t ch = pair / sp.segments, s = pair % sp.segments;
  double v[kSums];
  lane_sums<T, I>(x, dy, need, g, ch, sp, s, static_cast<int>(threadIdx.x & 31), v);
#pragma unroll
  for (int q = 0; q < kSums; ++q) v[q] = detail::warp_sum(v[q]);
  if ((threadIdx.x & 31) == 0)
#pragma unroll
    for (int q = 0; q < kSums; ++q) partials[pair * kSums + q] = v[q];
}

// The butterfly of warp_sum on 32 values in shared memory: lane 0's result, the same bits.
__device__ __forceinline__ double butterfly32(double* v) {
  for (int off = 16; off > 0; off >>= 1)
    for (int j = 0; j < off; ++j) v[j] = v[j] + v[j + off];
  return v[0];
}

// NHWC: block (group, s) takes channels 32 group .. 32 group + 31 of run s; thread (x, y) is
// channel 32 group + x, lane y.
template <typename T, typename I>
__global__ void __launch_bounds__(1024) bn_partials_nhwc_kernel(const T* x, const T* dy, Need need,
                                                                BatchNormGeometry g, Split sp, double* partials) {
  pdl::prologue();
  __shared__ double lanes[kSums][32][33];
  const int cx = threadIdx.x, lane = threadIdx.y;
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * 32 + cx, s = blockIdx.y;
  double v[kSums] = {0, 0, 0, 0};
  if (ch < g.c) lane_sums<T, I>(x, dy, need, g, ch, sp, s, lane, v);
#pragma unroll
  for (int q = 0; q < kSums; ++q) lanes[q][cx][lane] = v[q];
  __syncthreads();
  // Thread (x, y < kSums) adds channel x's 32 lanes of sum y.
  if (lane < kSums && ch < g.c) partials[(ch * sp.segments + s) * kSums + lane] = butterfly32(lanes[lane][cx]);
}

// NHWC, four channels a thread (C a multiple of 4, x and dy 16-byte aligned): thread (p, j)
// of block (group, s) sums lane j's elements of run s, in lane_sums' order, for channels
// 4 p .. 4 p + 3 of the group's 32; each load is one 8-byte (16-bit) or 16-byte (f32) vector
// of four neighbouring channels, where the kernel above loads one element (its warp's load was
// 64 bytes of 16-bit activations). Four channels and not a 16-byte pack of eight: the
// double sums of eight channels took 176 registers, and the few warps that fit an SM could
// not hide the loads.
constexpr int kVecLoads = 4;  // rows a thread has in flight
constexpr int kVecChannels = 4;
template <typename T, Need N>
__global__ void __launch_bounds__(256) bn_partials_nhwc_vec_kernel(const T* x, const T* dy, BatchNormGeometry g,
                                                                   Split sp, double* partials) {
  pdl::prologue();
  constexpr int V = kVecChannels, P = 32 / V;
  __shared__ double lanes[kSums][32][33];
  const int p = static_cast<int>(threadIdx.x), lane = static_cast<int>(threadIdx.y);
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32 + p * V, s = blockIdx.y;
  double a[V], b[V], c[V], d[V];
#pragma unroll
  for (int v = 0; v < V; ++v) a[v] = b[v] = c[v] = d[v] = 0;
  if (c0 < g.c) {
    const int64_t begin = s * sp.run, end = begin + sp.run < g.count() ? begin + sp.run : g.count();
    const float4 first = detail::load4_wide(x + c0);  // element 0 of each channel: the shift
    const float shift[V] = {first.x, first.y, first.z, first.w};
    for (int64_t e0 = begin + lane; e0 < end; e0 += 32 * kVecLoads) {
      float4 xv[kVecLoads], wv[kVecLoads];
#pragma unroll
      for (int u = 0; u < kVecLoads; ++u) {
        const int64_t e = e0 + 32 * u;
        if (e < end) {
          xv[u] = detail::load4_wide(x + e * g.c + c0);
          if (N == Need::grad) wv[u] = detail::load4_wide(dy + e * g.c + c0);
        }
      }
#pragma unroll
      for (int u = 0; u < kVecLoads; ++u) {
        if (e0 + 32 * u >= end) break;
        const float xs[V] = {xv[u].x, xv[u].y, xv[u].z, xv[u].w};
        const float ws[V] = {N == Need::grad ? wv[u].x : 0.0f, N == Need::grad ? wv[u].y : 0.0f,
                             N == Need::grad ? wv[u].z : 0.0f, N == Need::grad ? wv[u].w : 0.0f};
#pragma unroll
        for (int v = 0; v < V; ++v)
          add_terms<N>(xs[v], ws[v], N == Need::sum ? 0.0 : shift[v], a[v], b[v], c[v], d[v]);
      }
    }
  }
#pragma unroll
  for (int v = 0; v < V; ++v) {
    lanes[0][p * V + v][lane] = a[v];
    lanes[1][p * V + v][lane] = b[v];
    lanes[2][p * V + v][lane] = c[v];
    lanes[3][p * V + v][lane] = d[v];
  }
  __syncthreads();
  // Thread t of the block's P x 32 adds channel t % 32's lanes of sum t / 32.
  const int t = lane * P + p, q = t / 32, ch_local = t % 32;
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * 32 + ch_local;
  if (q < kSums && ch < g.c) partials[(ch * sp.segments + s) * kSums + q] = butterfly32(lanes[q][ch_local]);
}

// Per channel, the runs added in order: the statistics, and what the call writes from them.
// coef: mean, rstd, for the gradient dy's mean and (dy xhat)'s mean over the channel, then
// gamma and beta as doubles (converted once a channel, not once an element).
// grad_gamma and grad_beta write their outputs here, batch_norm_grad both into params (its
// second output, [2, C]), batch_norm_moments the batch's mean and unbiased variance there;
// stats_update updates the running statistics in place.
template <typename T, typename P>
__global__ void bn_combine_kernel(OpKind op, const double* partials, const T* x, const P* gamma, const P* beta,
                                  BatchNormGeometry g, Split sp, double eps, double momentum, double* coef, float* out,
                                  float* params, float* stats) {
  pdl::prologue();
  // A warp a channel: lane j adds runs j, j + 32, ... in order, then the lanes add as
  // warp_sum's butterfly does (a channel of an ImageNet stem has 130 runs: one thread a
  // channel waited on their loads one after another).
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (ch >= g.c) return;
  const int lane = static_cast<int>(threadIdx.x & 31);
  double sum[kSums] = {0, 0, 0, 0};
  // Four runs' loads in flight before their adds, which keep their order.
  for (int64_t s0 = lane; s0 < sp.segments; s0 += 4 * 32) {
    double v[4][kSums];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t s = s0 + 32 * u;
#pragma unroll
      for (int q = 0; q < kSums; ++q) v[u][q] = s < sp.segments ? partials[(ch * sp.segments + s) * kSums + q] : 0.0;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (s0 + 32 * u >= sp.segments) break;
#pragma unroll
      for (int q = 0; q < kSums; ++q) sum[q] += v[u][q];
    }
  }
#pragma unroll
  for (int q = 0; q < kSums; ++q) sum[q] = detail::warp_sum(sum[q]);
  if (lane != 0) return;
  if (op == OpKind::batch_norm_grad_beta) {  // x is dy here, summed unshifted (Need::sum)
    out[ch] = static_cast<float>(sum[0]);
    return;
  }
  const double count = static_cast<double>(g.count());
  const double shift = static_cast<float>(x[ch * (g.channels_last ? 1 : g.inner)]);  // element 0 of the channel
  const double dmean = sum[0] / count;
  const double raw = sum[1] - sum[0] * dmean;
  const double squares = raw > 0.0 ? raw : 0.0;  // sum of squared deviations
  const double mean = shift + dmean;
  if (op == OpKind::batch_norm_stats_update) {
    stats[ch] = bn_blend(stats[ch], static_cast<float>(mean), momentum);
    stats[g.c + ch] = bn_blend(stats[g.c + ch], static_cast<float>(squares / (count - 1.0)), momentum);
    return;
  }
  if (op == OpKind::batch_norm_moments) {  // the batch's statistics, as batch_norm_stats_update takes them
    params[ch] = static_cast<float>(mean);
    params[g.c + ch] = static_cast<float>(squares / (count - 1.0));
  }
  const double rstd = 1.0 / sqrt(squares / count + eps);
  // sum of dy (x - mean) rstd = rstd (sum dy d - (mean - shift) sum dy)
  const double dy_xhat = rstd * (sum[3] - dmean * sum[2]);
  if (op == OpKind::batch_norm_grad_gamma) {
    out[ch] = static_cast<float>(dy_xhat);
    return;
  }
  if (op == OpKind::batch_norm_grad) {
    // sum[2] adds dy in grad_beta's order (Need::sum's sum of dy - 0): its bits.
    params[ch] = static_cast<float>(dy_xhat);
    params[g.c + ch] = static_cast<float>(sum[2]);
  }
  coef[ch] = mean;
  coef[g.c + ch] = rstd;
  coef[2 * g.c + ch] = sum[2] / count;
  coef[3 * g.c + ch] = dy_xhat / count;
  coef[4 * g.c + ch] = gamma ? static_cast<float>(gamma[ch]) : 0.0;
  coef[5 * g.c + ch] = beta ? static_cast<float>(beta[ch]) : 0.0;
}

// batch_norm_stats_blend: stats = (1 - m) stats + m moments, 2C values in place.
__global__ void bn_blend_kernel(float* stats, const float* moments, int64_t n, double momentum) {
  pdl::prologue();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) stats[i] = bn_blend(stats[i], moments[i], momentum);
}

// batch_norm_inference's coefficients: the running statistics' mean and rstd.
template <typename S, typename P>
__global__ void bn_inference_coef_kernel(const S* stats, const P* gamma, const P* beta, BatchNormGeometry g, double eps,
                                         double* coef) {
  pdl::prologue();
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= g.c) return;
  coef[ch] = static_cast<float>(stats[ch]);
  coef[g.c + ch] = 1.0 / sqrt(static_cast<double>(static_cast<float>(stats[g.c + ch])) + eps);
  coef[4 * g.c + ch] = static_cast<float>(gamma[ch]);
  coef[5 * g.c + ch] = static_cast<float>(beta[ch]);
}

// The elementwise pass over all n c inner elements. Forward (a = x): y = (x - mean) rstd gamma
// + beta. grad_x (a = dy, x): dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)).
template <typename T, typename I>
__global__ void __launch_bounds__(256) bn_apply_kernel(bool grad, bool relu, const T* a, const T* x, const double* coef,
                                                       T* y, BatchNormGeometry g, int64_t total) {
  pdl::prologue();
  // A warp takes chunks of 32 kApplyPer elements, lane j elements j, j + 32, ...: each load
  // and store of the warp is 32 consecutive elements, a lane issues a chunk's loads before it
  // writes any, and it finds its channel by division once a chunk, then walks it along.
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const I channels = static_cast<I>(g.c);
  const PlaneWalk32<I> walk(static_cast<I>(g.inner));
  const double* mean_c = coef;
  const double* rstd_c = coef + g.c;
  const double* dy_mean_c = coef + 2 * g.c;
  const double* dy_xhat_mean_c = coef + 3 * g.c;
  const double* gamma_c = coef + 4 * g.c;
  const double* beta_c = coef + 5 * g.c;
  // 32 elements further: NHWC, 32 % C channels on; NCHW, the planes the walk crosses, each a
  // channel on: taken mod C.
  const I ch_nhwc = 32 % channels, ch_planes = walk.planes % channels, ch_carry = (walk.planes + 1) % channels;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); w * 32 * kApplyPer < total;
       w += warps) {
    const int64_t i0 = w * 32 * kApplyPer + lane;
    if (i0 >= total) continue;
    I r = 0, ch = 0;  // NCHW: i's place in its plane, and its channel; NHWC: the channel
    if (g.channels_last) {
      ch = static_cast<I>(i0) % channels;
    } else {
      const I plane = static_cast<I>(i0) / walk.inner;
      r = static_cast<I>(i0) - plane * walk.inner;
      ch = plane % channels;
    }
    float as[kApplyPer], xs[kApplyPer];
#pragma unroll
    for (int k = 0; k < kApplyPer; ++k) {
      const int64_t i = i0 + 32 * k;
      as[k] = i < total ? static_cast<float>(a[i]) : 0.0f;
      xs[k] = grad && i < total ? static_cast<float>(x[i]) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kApplyPer; ++k) {
      const int64_t i = i0 + 32 * k;
      if (i >= total) continue;
      const double mean = mean_c[ch], rstd = rstd_c[ch];
      y[i] = narrow<T>(grad   ? bn_grad_value(as[k], xs[k], mean, rstd, gamma_c[ch], dy_mean_c[ch], dy_xhat_mean_c[ch])
                       : relu ? bn_relu(bn_forward_value(as[k], mean, rstd, gamma_c[ch], beta_c[ch]))
                              : bn_forward_value(as[k], mean, rstd, gamma_c[ch], beta_c[ch]));
      const I on = g.channels_last ? ch_nhwc : walk.advance(r) ? ch_carry : ch_planes;
      ch += on;  // ch, on < channels: one subtraction brings it back
      if (ch >= channels) ch -= channels;
    }
  }
}

// NHWC, four channels a thread (C a multiple of 4, every tensor 16-byte aligned): thread
// (p, r) takes channels 4 p .. 4 p + 3 of rows r, r + R, ...: their coefficients are loaded once
// into registers, where bn_apply_kernel loads them for every element (with 16-bit
// activations, those loads and not the memory bounded it, at about a third of the copy's
// bandwidth).
constexpr int kApplyVecThreads = 128;
constexpr int kApplyVecRows = 4;  // rows a thread has in flight
template <typename T, bool Grad>
__global__ void __launch_bounds__(kApplyVecThreads) bn_apply_nhwc_vec_kernel(bool relu, const T* a, const T* x,
                                                                           const double* coef, T* y,
                                                                           BatchNormGeometry g, int64_t rows) {
  pdl::prologue();
  constexpr int V = kVecChannels;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (c0 >= g.c) return;
  // mean, rstd; then gamma and beta (forward), or gamma rstd (the formula's first product) and
  // dy's and (dy xhat)'s means (grad).
  double mean[V], rstd[V], k2[V], k3[V], k4[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int64_t ch = c0 + v;
    mean[v] = coef[ch];
    rstd[v] = coef[g.c + ch];
    k2[v] = Grad ? coef[4 * g.c + ch] * rstd[v] : coef[4 * g.c + ch];
    k3[v] = Grad ? coef[2 * g.c + ch] : coef[5 * g.c + ch];
    k4[v] = Grad ? coef[3 * g.c + ch] : 0.0;
  }
  const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r0 < rows;
       r0 += kApplyVecRows * step) {
    float4 av[kApplyVecRows], xv[kApplyVecRows];
#pragma unroll
    for (int k = 0; k < kApplyVecRows; ++k) {
      const int64_t r = r0 + k * step;
      if (r < rows) {
        av[k] = detail::load4_wide(a + r * g.c + c0);
        if (Grad) xv[k] = detail::load4_wide(x + r * g.c + c0);
      }
    }
#pragma unroll
    for (int k = 0; k < kApplyVecRows; ++k) {
      const int64_t r = r0 + k * step;
      if (r >= rows) break;
      const float in[V] = {av[k].x, av[k].y, av[k].z, av[k].w};
      float out[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float xe = Grad ? (v == 0 ? xv[k].x : v == 1 ? xv[k].y : v == 2 ? xv[k].z : xv[k].w) : 0.0f;
        out[v] = Grad   ? bn_grad_value_scaled(in[v], xe, mean[v], rstd[v], k2[v], k3[v], k4[v])
                 : relu ? bn_relu(bn_forward_value(in[v], mean[v], rstd[v], k2[v], k3[v]))
                        : bn_forward_value(in[v], mean[v], rstd[v], k2[v], k3[v]);
      }
      detail::store4(y + r * g.c + c0, make_float4(out[0], out[1], out[2], out[3]));
    }
  }
}

// batch_norm_fold: block ch scales output channel ch of the conv weight w [K, inner] and
// writes its folded bias; the values are graph/batch_norm.h's, as the CPU reference's.
template <typename T, typename P, typename S>
__global__ void __launch_bounds__(1024) batch_norm_fold_kernel(const T* w, const P* gamma, const P* beta,
                                                               const S* stats, T* w_out, T* b_out,
                                                               BatchNormGeometry g, float eps) {
  pdl::prologue();
  const int64_t ch = blockIdx.x;
  const double sc = bn_fold_scale(static_cast<float>(gamma[ch]), static_cast<float>(stats[g.c + ch]), eps);
  for (int64_t e = threadIdx.x; e < g.inner; e += blockDim.x)
    w_out[ch * g.inner + e] = narrow<T>(bn_fold_weight(static_cast<float>(w[ch * g.inner + e]), sc));
  if (threadIdx.x == 0) b_out[ch] = narrow<T>(bn_fold_bias(static_cast<float>(beta[ch]), static_cast<float>(stats[ch]), sc));
}

// Whether every flat index of the call's tensors fits the 32-bit division.
// INT32_MAX, not UINT32_MAX: the kernels' walks step 32 past an index before they stop.
bool small_index(const BatchNormGeometry& g) { return g.n * g.c * g.inner <= int64_t{INT32_MAX}; }

size_t partials_bytes(const BatchNormGeometry& g) {
  return static_cast<size_t>(g.c * split_of(g).segments * kSums) * sizeof(double);
}
// The scratch holds the coefficients, then (256-byte aligned) the partial sums.
size_t partials_offset(const BatchNormGeometry& g) {
  return (static_cast<size_t>(g.c * kCoefs) * sizeof(double) + 255) / 256 * 256;
}

// Whether an NHWC call runs the vector kernels: C a multiple of their channels, every tensor
// 16-byte aligned.
bool nhwc_vectors(const BatchNormGeometry& g, std::initializer_list<const void*> tensors) {
  if (!g.channels_last || g.c % kVecChannels != 0) return false;
  for (const void* t : tensors)
    if (t && !detail::aligned16(t)) return false;
  return true;
}

// The sums a call needs, into partials (the NHWC vector kernel, or the NCHW or NHWC one).
template <typename T, typename I>
void launch_partials(const T* x, const T* dy, Need need, const BatchNormGeometry& g, const Split& sp, double* partials,
                     cudaStream_t s) {
  if (nhwc_vectors(g, {x, dy})) {
    const dim3 grid(static_cast<unsigned>((g.c + 31) / 32), static_cast<unsigned>(sp.segments));
    const dim3 block(32 / kVecChannels, 32);
    if (need == Need::grad)
      detail::launch(TG_LAUNCH_SITE, bn_partials_nhwc_vec_kernel<T, Need::grad>, grid, block, s, x, dy, g, sp, partials);
    else if (need == Need::stats)
      detail::launch(TG_LAUNCH_SITE, bn_partials_nhwc_vec_kernel<T, Need::stats>, grid, block, s, x, dy, g, sp, partials);
    else
      detail::launch(TG_LAUNCH_SITE, bn_partials_nhwc_vec_kernel<T, Need::sum>, grid, block, s, x, dy, g, sp, partials);
    return;
  }
  if (g.channels_last) {
    const dim3 grid(static_cast<unsigned>((g.c + 31) / 32), static_cast<unsigned>(sp.segments));
    detail::launch(TG_LAUNCH_SITE, bn_partials_nhwc_kernel<T, I>, grid, dim3(32, 32), s, x, dy, need, g, sp, partials);
    return;
  }
  const int64_t blocks = (g.c * sp.segments + kWarpsPerBlock - 1) / kWarpsPerBlock;
  detail::launch(TG_LAUNCH_SITE, bn_partials_nchw_kernel<T, I>, static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, s,
                 x, dy, need, g, sp, partials);
}

// fn(S{}): S the element type of the running statistics, float or P (graph/dtype_rules.h).
template <typename P, typename Fn>
void with_stats_type(DType stats, Fn&& fn) {
  if (stats == DType::F32) fn(float{});
  else fn(P{});
}

template <typename T, typename P, typename I>
void run_batch_norm(const OpCall& c, const BatchNormGeometry& g, char* scratch, cudaStream_t s) {
  const Split sp = split_of(g);
  double* coef = reinterpret_cast<double*>(scratch);
  double* partials = reinterpret_cast<double*>(scratch + partials_offset(g));
  const unsigned ch_blocks = static_cast<unsigned>((g.c + 255) / 256);
  const unsigned warp_blocks = static_cast<unsigned>((g.c + kWarpsPerBlock - 1) / kWarpsPerBlock);  // a warp a channel
  const int64_t total = g.n * g.c * g.inner;
  const double eps = c.attrs->eps;
  if (c.op == OpKind::batch_norm_stats_update) {
    const T* x = elements<const T>(c.in[1].data);
    launch_partials<T, I>(x, nullptr, Need::stats, g, sp, partials, s);
    detail::launch(TG_LAUNCH_SITE, bn_combine_kernel<T, P>, warp_blocks, 32 * kWarpsPerBlock, s, c.op, partials, x,
                   static_cast<const P*>(nullptr), static_cast<const P*>(nullptr), g, sp, eps,
                   static_cast<double>(c.attrs->momentum), coef, static_cast<float*>(nullptr),
                   static_cast<float*>(nullptr), static_cast<float*>(c.in[0].data));
    return;
  }
  // batch_norm, batch_norm_moments and batch_norm_inference: (x, gamma, beta[, stats]); grad_x
  // and batch_norm_grad: (dy, x, gamma); grad_gamma: (dy, x); grad_beta: (dy), summed as x is.
  const bool forward =
      c.op == OpKind::batch_norm || c.op == OpKind::batch_norm_moments || c.op == OpKind::batch_norm_inference;
  const T* a = elements<const T>(c.in[0].data);
  const T* x = forward || c.op == OpKind::batch_norm_grad_beta ? a : elements<const T>(c.in[1].data);
  const P* gamma = forward ? elements<const P>(c.in[1].data)
                   : c.num_inputs > 2 ? elements<const P>(c.in[2].data)
                                      : nullptr;
  const P* beta = forward ? elements<const P>(c.in[2].data) : nullptr;
  if (c.op == OpKind::batch_norm_inference) {
    with_stats_type<P>(c.in[3].dtype, [&](auto st) {
      using S = decltype(st);
      detail::launch(TG_LAUNCH_SITE, bn_inference_coef_kernel<S, P>, ch_blocks, 256, s, elements<const S>(c.in[3].data),
                     gamma, beta, g, eps, coef);
    });
  } else {
    const bool stats_only = c.op == OpKind::batch_norm || c.op == OpKind::batch_norm_moments ||
                            c.op == OpKind::batch_norm_grad_beta;
    const Need need = c.op == OpKind::batch_norm_grad_beta ? Need::sum : stats_only ? Need::stats : Need::grad;
    launch_partials<T, I>(x, stats_only ? nullptr : a, need, g, sp, partials, s);
    const bool sums_out = c.op == OpKind::batch_norm_grad_gamma || c.op == OpKind::batch_norm_grad_beta;
    float* sums = sums_out ? static_cast<float*>(c.out.data) : nullptr;
    const bool second = c.op == OpKind::batch_norm_grad || c.op == OpKind::batch_norm_moments;
    float* params = second ? static_cast<float*>(c.out2.data) : nullptr;
    detail::launch(TG_LAUNCH_SITE, bn_combine_kernel<T, P>, warp_blocks, 32 * kWarpsPerBlock, s, c.op, partials, x,
                   gamma, beta, g, sp, eps, 0.0, coef, sums, params, static_cast<float*>(nullptr));
    if (sums_out) return;
  }
  const bool grad = c.op == OpKind::batch_norm_grad_x || c.op == OpKind::batch_norm_grad;
  const bool relu = c.op == OpKind::batch_norm_moments && c.attrs->act == Act::relu;
  T* y = elements<T>(c.out.data);
  if (nhwc_vectors(g, {a, grad ? x : nullptr, y})) {
    const int64_t packs = g.c / kVecChannels, rows = total / g.c;
    const int64_t bx = std::min<int64_t>(packs, kApplyVecThreads), by = kApplyVecThreads / bx;
    const int64_t gx = (packs + bx - 1) / bx;
    // At least 2 kApplyVecRows rows a thread (its coefficients' loads are paid once), and no
    // more blocks than fill the device.
    const int64_t fill = std::max<int64_t>(1, static_cast<int64_t>(detail::sm_count()) * 16 / gx);
    const int64_t per = 2 * kApplyVecRows * by;
    const int64_t gy = std::max<int64_t>(1, std::min({(rows + per - 1) / per, fill, int64_t{65535}}));
    const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), block(static_cast<unsigned>(bx),
                                                                               static_cast<unsigned>(by));
    if (grad)
      detail::launch(TG_LAUNCH_SITE, bn_apply_nhwc_vec_kernel<T, true>, grid, block, s, false, a, x, coef, y, g, rows);
    else
      detail::launch(TG_LAUNCH_SITE, bn_apply_nhwc_vec_kernel<T, false>, grid, block, s, relu, a, x, coef, y, g, rows);
    return;
  }
  detail::launch(TG_LAUNCH_SITE, bn_apply_kernel<T, I>,
                 static_cast<unsigned>(detail::grid_for((total + kApplyPer - 1) / kApplyPer)), 256, s, grad, relu, a, x,
                 coef, y, g, total);
}

// fn(T{}, P{}): T the element type of dtype d (the per-element tensors), P that of p (the
// per-channel inputs): T, or float beside a 16-bit T.
template <typename Fn>
void with_channel_types(DType d, DType p, Fn&& fn) {
  with_element_type(d, [&](auto e) {
    using T = decltype(e);
    if constexpr (std::is_same_v<T, float>) {
      fn(e, e);
    } else if (p == DType::F32) {
      fn(e, float{});
    } else {
      fn(e, e);
    }
  });
}

// The call's dtypes (graph/dtype_rules.h's rule, which check_op_call has checked): d of the
// per-element inputs, p of gamma and beta (the running statistics' where the op has neither).
void channel_types(const OpCall& c, DType* d, DType* p) {
  DType in[kMaxOpInputs];
  for (int i = 0; i < c.num_inputs; ++i) in[i] = c.input(i).dtype;
  channel_dtypes(c.op, in, c.num_inputs, d, p);
}

}  // namespace

size_t batch_norm_scratch_bytes(const BatchNormGeometry& g) {
  return partials_offset(g) + partials_bytes(g);
}

void batch_norm_op(const OpCall& c, const BatchNormGeometry& g, void* scratch, size_t scratch_bytes, cudaStream_t s) {
  if (c.op == OpKind::batch_norm_stats_blend) {
    const int64_t n = 2 * g.c;
    detail::launch(TG_LAUNCH_SITE, bn_blend_kernel, static_cast<unsigned>((n + 255) / 256), 256, s,
                   static_cast<float*>(c.in[0].data), static_cast<const float*>(c.in[1].data), n,
                   static_cast<double>(c.attrs->momentum));
    return;
  }
  DType d = DType::F32, p = DType::F32;
  channel_types(c, &d, &p);
  if (c.op == OpKind::batch_norm_fold) {
    with_channel_types(d, p, [&](auto e, auto q) {
      using T = decltype(e);
      using P = decltype(q);
      with_stats_type<P>(c.in[3].dtype, [&](auto st) {
        using S = decltype(st);
        detail::launch(TG_LAUNCH_SITE, batch_norm_fold_kernel<T, P, S>, static_cast<unsigned>(g.c), 1024, s,
                       elements<const T>(c.in[0].data), elements<const P>(c.in[1].data),
                       elements<const P>(c.in[2].data), elements<const S>(c.in[3].data), elements<T>(c.out.data),
                       elements<T>(c.out2.data), g, c.attrs->eps);
      });
    });
    return;
  }
  if (g.c <= 0 || g.count() <= 0) return;
  const size_t need = batch_norm_scratch_bytes(g);
  if (!scratch || scratch_bytes < need)
    throw std::invalid_argument(fmt::format("run_cuda {}: needs {} bytes of the backend's scratch for {} channels' "
                                            "partial sums, the call has {}",
                                            op_name(c.op), need, g.c, scratch ? scratch_bytes : 0));
  char* sc = static_cast<char*>(scratch);
  const bool small = small_index(g);
  with_channel_types(d, p, [&](auto e, auto q) {
    using T = decltype(e);
    using P = decltype(q);
    if (small) run_batch_norm<T, P, uint32_t>(c, g, sc, s);
    else run_batch_norm<T, P, int64_t>(c, g, sc, s);
  });
}

}  // namespace tg::kernels::cuda
