// adamw, adamw_multi and adamw_multi_cast (kernels/cpu/adamw.cpp), in place: every group of the call in one
// launch per kAdamTensors groups, then a launch that counts each group's step. The main
// kernel reads the step counts and the second writes them, so no block reads a count
// another has already moved on (the second kernel waits for the first, pdl.cuh).
// The per-element arithmetic is kernels/optimizer_math.h's, with __fmul_rn & co. so that
// nvcc cannot contract it into FMAs and the bits match the CPU reference. A guarded call's
// found-inf flag is read on the device by both kernels: when it is set neither writes, so
// the parameters, the moments and the step counts all stay (the skipped step of loss
// scaling, as torch.amp.GradScaler skips optimizer.step()).
#include <cuda_runtime.h>

#include "kernels/cuda/chunk_table.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage.h"
#include "kernels/cuda/weight_copy.cuh"
#include "kernels/optimizer_math.h"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::kBlock;

__device__ __forceinline__ void adamw_element(float& p, float g, float& m, float& v, const AdamWScalars& s) {
  m = __fadd_rn(__fmul_rn(s.beta1, m), __fmul_rn(s.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(s.beta2, v), __fmul_rn(__fmul_rn(s.one_minus_beta2, g), g));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.bc2_sqrt), s.eps);
  p = __fsub_rn(__fmul_rn(p, s.decay), __fmul_rn(s.step_size, __fdiv_rn(m, denom)));
}

// The tensor table is a launch parameter (about 2.7 KB, under the 4 KB every device
// takes). Tensors are cut into chunks of kChunk elements as multi_update cuts them
// (optimizer.cu): a block finds the tensor of its chunk by a binary search over the
// prefix sums of the chunk counts, and a chunk keeps a 16-byte aligned tensor aligned.
constexpr int kAdamTensors = 48;
constexpr int64_t kChunk = 4096;
struct AdamArgs {
  float* p[kAdamTensors];
  const void* g[kAdamTensors];  // f32, or bf16 / f16 (gk)
  float* m[kAdamTensors];
  float* v[kAdamTensors];
  float* step[kAdamTensors];
  uint16_t* low[kAdamTensors];  // adamw_multi_cast: each parameter's low-precision copy, else null
  GradKind gk[kAdamTensors];
  int64_t n[kAdamTensors];
  int64_t first_chunk[kAdamTensors + 1];
  int count;
  float lr, beta1, beta2, eps, weight_decay;
  const float* found;  // loss scaling's found-inf flag, or null: nonzero skips the update
  bool low_bf16;       // the copies' dtype: bf16, else f16
};
static_assert(sizeof(AdamArgs) <= 4096, "a launch parameter of at most 4 KB");

__global__ void adamw_kernel(const __grid_constant__ AdamArgs a) {
  pdl::prologue();
  if (a.found && *a.found != 0.0f) return;
  const int64_t chunks = a.first_chunk[a.count];
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int lo = detail::tensor_of_chunk(a.first_chunk, a.count, c);
    const AdamWScalars s = adamw_scalars(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, *a.step[lo]);
    const int64_t begin = (c - a.first_chunk[lo]) * kChunk;
    const int64_t len = a.n[lo] - begin < kChunk ? a.n[lo] - begin : kChunk;
    float* p = a.p[lo] + begin;
    const GradKind gk = a.gk[lo];
    const void* gv = static_cast<const char*>(a.g[lo]) + begin * (gk == GradKind::f32 ? 4 : 2);
    float* m = a.m[lo] + begin;
    float* v = a.v[lo] + begin;
    uint16_t* low = a.low[lo] ? a.low[lo] + begin : nullptr;
    int64_t i = threadIdx.x;
    if (aligned16(p) && grad4_aligned(gv, gk) && aligned16(m) && aligned16(v)) {
      const int64_t n4 = len / 4;
      for (int64_t j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 pp = reinterpret_cast<float4*>(p)[j], mm = reinterpret_cast<float4*>(m)[j],
               vv = reinterpret_cast<float4*>(v)[j];
        const float4 gg = grad4_at(gv, gk, j);
        adamw_element(pp.x, gg.x, mm.x, vv.x, s);
        adamw_element(pp.y, gg.y, mm.y, vv.y, s);
        adamw_element(pp.z, gg.z, mm.z, vv.z, s);
        adamw_element(pp.w, gg.w, mm.w, vv.w, s);
        reinterpret_cast<float4*>(p)[j] = pp;
        reinterpret_cast<float4*>(m)[j] = mm;
        reinterpret_cast<float4*>(v)[j] = vv;
        if (low) store_weight_copy4(low, a.low_bf16, j, pp);
      }
      i = 4 * n4 + threadIdx.x;  // the tail, by the first threads
    }
    for (; i < len; i += blockDim.x) {
      adamw_element(p[i], grad_at(gv, gk, i), m[i], v[i], s);
      if (low) store_weight_copy(low, a.low_bf16, i, p[i]);
    }
  }
}

__global__ void count_steps_kernel(const __grid_constant__ AdamArgs a) {
  pdl::prologue();
  if (a.found && *a.found != 0.0f) return;
  const int t = static_cast<int>(threadIdx.x);
  if (t < a.count) *a.step[t] = __fadd_rn(*a.step[t], 1.0f);
}

}  // namespace

void adamw(const OpCall& c, cudaStream_t s) {
  AdamArgs a{};
  a.lr = c.attrs->lr;
  a.beta1 = c.attrs->adam.beta1;
  a.beta2 = c.attrs->adam.beta2;
  a.eps = c.attrs->adam.eps;
  a.weight_decay = c.attrs->adam.weight_decay;
  const int groups_end = op_group_inputs(c.op, c.num_inputs);
  a.found = groups_end < c.num_inputs ? c.input(groups_end).data : nullptr;
  auto flush = [&] {
    if (a.count == 0) return;
    const int64_t chunks = a.first_chunk[a.count];
    if (chunks > 0) detail::launch(TG_LAUNCH_SITE, adamw_kernel, detail::grid_for(chunks * kBlock, kBlock), kBlock, s, a);
    detail::launch(TG_LAUNCH_SITE, count_steps_kernel, 1, 64, s, a);
    a.count = 0;
    a.first_chunk[0] = 0;
  };
  static_assert(kAdamTensors <= 64, "count_steps_kernel runs one thread per group in a block of 64");
  const int group = op_num_inputs(c.op);  // 5, or 6 with the low-precision copy last
  const bool copies = op_update_writes_copy(c.op);
  for (int i = 0; i < groups_end; i += group) {
    const int t = a.count++;
    a.p[t] = c.input(i).data;
    a.g[t] = c.input(i + 1).data;
    a.gk[t] = grad_kind(c.input(i + 1).dtype);
    a.m[t] = c.input(i + 2).data;
    a.v[t] = c.input(i + 3).data;
    a.step[t] = c.input(i + 4).data;
    a.low[t] = copies ? elements<uint16_t>(c.input(i + 5).data) : nullptr;
    if (copies) a.low_bf16 = c.input(i + 5).dtype == DType::BF16;
    a.n[t] = c.input(i).shape.numel();
    a.first_chunk[t + 1] = a.first_chunk[t] + (a.n[t] + kChunk - 1) / kChunk;
    if (a.count == kAdamTensors) flush();
  }
  flush();
}

}  // namespace tg::kernels::cuda
