// The optimizer updates sgd and sgd_momentum (kernels/cpu/optimizer.cpp), in place, and
// their multi-tensor forms: every parameter of a step in one launch.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include "kernels/cuda/chunk_table.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/sgd_step.cuh"
#include "kernels/cuda/weight_copy.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;
using detail::launch_ew;

struct SgdF {
  float lr;
  __device__ float operator()(float p, float g) const { return __fsub_rn(p, __fmul_rn(lr, g)); }
};

// One element (or float4) of sgd (p -= lr g) or sgd_momentum (v = momentum v + g;
// p -= lr v): the single and the multi-tensor kernels round alike.
template <bool kMomentum>
struct UpdateF {
  float lr, momentum;
  __device__ void operator()(float& p, float g, float& v) const {
    if (kMomentum) {
      sgd_momentum_step(p, g, v, lr, momentum);
    } else {
      p = __fsub_rn(p, __fmul_rn(lr, g));
    }
  }
  __device__ void operator()(float4& p, float4 g, float4& v) const {
    (*this)(p.x, g.x, v.x);
    (*this)(p.y, g.y, v.y);
    (*this)(p.z, g.z, v.z);
    (*this)(p.w, g.w, v.w);
  }
};

__global__ void sgd_momentum_kernel(float* p, const float* g, float* v, float lr, float momentum, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const UpdateF<true> step{lr, momentum};
  if (aligned16(p) && aligned16(g) && aligned16(v)) {
    const int64_t n4 = n / 4;
    float4* p4 = reinterpret_cast<float4*>(p);
    const float4* g4 = reinterpret_cast<const float4*>(g);
    float4* v4 = reinterpret_cast<float4*>(v);
    for (int64_t j = i; j < n4; j += stride) {
      float4 pp = p4[j], vv = v4[j];
      step(pp, g4[j], vv);
      p4[j] = pp;
      v4[j] = vv;
    }
    if (4 * n4 + i < n) step(p[4 * n4 + i], g[4 * n4 + i], v[4 * n4 + i]);
  } else {
    for (; i < n; i += stride) step(p[i], g[i], v[i]);
  }
}

// ---- sgd_multi, sgd_momentum_multi ------------------------------------------------------
// The tensor table is a launch parameter (2.6 KB, under the 4 KB every device takes). Each
// tensor is cut into chunks of kChunk elements, numbered as chunk_table.cuh says. A
// chunk starts at a multiple of kChunk, so a 16-byte aligned tensor stays aligned in it.
constexpr int64_t kChunk = 4096;
struct MultiArgs {
  float* p[kMultiTensors];
  const void* g[kMultiTensors];  // f32, or bf16 / f16 (gk)
  float* v[kMultiTensors];
  uint16_t* low[kMultiTensors];  // sgd_multi_cast, sgd_momentum_multi_cast: each parameter's copy, else null
  GradKind gk[kMultiTensors];
  int64_t n[kMultiTensors];
  int64_t first_chunk[kMultiTensors + 1];
  int count;
  float lr, momentum;
  const float* found;  // loss scaling's found-inf flag, or null: nonzero skips the update
  bool low_bf16;       // the copies' dtype: bf16, else f16
};
static_assert(sizeof(MultiArgs) <= 4096, "a launch parameter of at most 4 KB");

template <bool kMomentum>
__global__ void multi_update_kernel(const __grid_constant__ MultiArgs a) {
  pdl::prologue();
  if (a.found && *a.found != 0.0f) return;
  const int64_t chunks = a.first_chunk[a.count];
  const UpdateF<kMomentum> step{a.lr, a.momentum};
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int lo = detail::tensor_of_chunk(a.first_chunk, a.count, c);
    const int64_t begin = (c - a.first_chunk[lo]) * kChunk;
    const int64_t len = a.n[lo] - begin < kChunk ? a.n[lo] - begin : kChunk;
    float* p = a.p[lo] + begin;
    const GradKind gk = a.gk[lo];
    const void* gv = static_cast<const char*>(a.g[lo]) + begin * (gk == GradKind::f32 ? 4 : 2);
    float* v = kMomentum ? a.v[lo] + begin : nullptr;
    uint16_t* low = a.low[lo] ? a.low[lo] + begin : nullptr;
    float unused = 0.0f;  // sgd's velocity
    int64_t i = threadIdx.x;
    if (aligned16(p) && grad4_aligned(gv, gk) && (!kMomentum || aligned16(v))) {
      const int64_t n4 = len / 4;
      float4* p4 = reinterpret_cast<float4*>(p);
      float4* v4 = reinterpret_cast<float4*>(v);
      for (int64_t j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 pp = p4[j], vv = kMomentum ? v4[j] : float4{};
        step(pp, grad4_at(gv, gk, j), vv);
        p4[j] = pp;
        if (kMomentum) v4[j] = vv;
        if (low) store_weight_copy4(low, a.low_bf16, j, pp);
      }
      i = 4 * n4 + threadIdx.x;  // the tail, by the first threads
    }
    for (; i < len; i += blockDim.x) {
      step(p[i], grad_at(gv, gk, i), kMomentum ? v[i] : unused);
      if (low) store_weight_copy(low, a.low_bf16, i, p[i]);
    }
  }
}

}  // namespace

void multi_update(const OpCall& c, cudaStream_t s) {
  const int group = op_num_inputs(c.op);
  const bool momentum = op_update_has_velocity(c.op);
  const bool copies = op_update_writes_copy(c.op);
  MultiArgs a{};
  a.lr = c.attrs->lr;
  a.momentum = c.attrs->momentum;
  const int groups_end = op_group_inputs(c.op, c.num_inputs);
  a.found = groups_end < c.num_inputs ? c.input(groups_end).data : nullptr;
  auto flush = [&] {
    if (a.count == 0) return;
    const int64_t chunks = a.first_chunk[a.count];
    const int grid = grid_for(chunks * kBlock, kBlock);
    if (momentum) detail::launch(TG_LAUNCH_SITE, multi_update_kernel<true>, grid, kBlock, s, a);
    else detail::launch(TG_LAUNCH_SITE, multi_update_kernel<false>, grid, kBlock, s, a);
    a.count = 0;
    a.first_chunk[0] = 0;
  };
  for (int i = 0; i < groups_end; i += group) {
    const int64_t n = c.input(i).shape.numel();
    if (n <= 0) continue;
    const int t = a.count++;
    a.p[t] = c.input(i).data;
    a.g[t] = c.input(i + 1).data;
    a.gk[t] = grad_kind(c.input(i + 1).dtype);
    a.v[t] = momentum ? c.input(i + 2).data : nullptr;
    a.low[t] = copies ? elements<uint16_t>(c.input(i + group - 1).data) : nullptr;
    if (copies) a.low_bf16 = c.input(i + group - 1).dtype == DType::BF16;
    a.n[t] = n;
    a.first_chunk[t + 1] = a.first_chunk[t] + (n + kChunk - 1) / kChunk;
    if (a.count == kMultiTensors) flush();
  }
  flush();
}

void sgd(float* p, const float* g, float lr, int64_t n, cudaStream_t s) { launch_ew<true>(SgdF{lr}, p, g, p, n, s); }

void sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, sgd_momentum_kernel, grid_for(n / 4 + 4), kBlock, s, p, g, v, lr, momentum, n);
}

}  // namespace tg::kernels::cuda
