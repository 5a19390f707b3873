#include "kernels/cuda/gemm/gemm_epilogue16.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/float_formats.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda {

namespace {

// The two 16-bit formats, converted by graph/float_formats.h's code (the CPU reference's).
struct Bf16 {
  __device__ static float load(const uint16_t* p, int64_t i) { return f32_from_bf16(p[i]); }
  __device__ static void store(uint16_t* p, int64_t i, float v) { p[i] = bf16_from_f32(v); }
};
struct F16 {
  __device__ static float load(const uint16_t* p, int64_t i) { return f32_from_f16(p[i]); }
  __device__ static void store(uint16_t* p, int64_t i, float v) { p[i] = f16_from_f32(v); }
};

template <typename Fmt, typename Grad>
__global__ void act_grad_kernel(uint16_t* d, const uint16_t* act_in, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    Fmt::store(d, i, Grad()(Fmt::load(d, i), Fmt::load(act_in, i)));
}

// The same, 8 elements (16 bytes) a thread, for 16-byte aligned operands: a GELU layer's
// gradient reads and writes tens of MB, which scalar 2-byte accesses move at half the rate.
template <typename Fmt, typename Grad>
__global__ void act_grad_vec_kernel(uint16_t* d, const uint16_t* act_in, int64_t n) {
  pdl::prologue();
  union Vec {
    uint4 u;
    uint16_t h[8];
  };
  const int64_t vectors = n / 8;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = first; v < vectors; v += stride) {
    Vec x, a;
    x.u = reinterpret_cast<const uint4*>(d)[v];
    a.u = reinterpret_cast<const uint4*>(act_in)[v];
#pragma unroll
    for (int k = 0; k < 8; ++k) Fmt::store(x.h, k, Grad()(Fmt::load(x.h, k), Fmt::load(a.h, k)));
    reinterpret_cast<uint4*>(d)[v] = x.u;
  }
  for (int64_t i = vectors * 8 + first; i < n; i += stride) Fmt::store(d, i, Grad()(Fmt::load(d, i), Fmt::load(act_in, i)));
}

template <typename Fmt, typename Grad>
void launch_act_grad(void* d, const void* act_in, int64_t n, cudaStream_t s) {
  const bool vec = reinterpret_cast<uintptr_t>(d) % 16 == 0 && reinterpret_cast<uintptr_t>(act_in) % 16 == 0;
  if (vec) {
    detail::launch(TG_LAUNCH_SITE, act_grad_vec_kernel<Fmt, Grad>,
                   dim3(static_cast<unsigned>(detail::grid_for((n + 7) / 8))), dim3(detail::kBlock), s,
                   static_cast<uint16_t*>(d), static_cast<const uint16_t*>(act_in), n);
    return;
  }
  detail::launch(TG_LAUNCH_SITE, act_grad_kernel<Fmt, Grad>, dim3(static_cast<unsigned>(detail::grid_for(n))),
                 dim3(detail::kBlock), s, static_cast<uint16_t*>(d), static_cast<const uint16_t*>(act_in), n);
}

void require_16bit(DType dt, const char* what) {
  if (dt == DType::F32) throw std::logic_error(std::string(what) + ": takes bf16 or f16 tensors, not f32");
}

}  // namespace

void act_grad_16bit(DType dt, Act act, void* d, const void* act_in, int64_t n, cudaStream_t s) {
  require_16bit(dt, "act_grad_16bit");
  if (act == Act::none || n <= 0) return;
  const bool bf16 = dt == DType::BF16;
  if (act == Act::relu)
    return bf16 ? launch_act_grad<Bf16, detail::ReluGradF>(d, act_in, n, s)
                : launch_act_grad<F16, detail::ReluGradF>(d, act_in, n, s);
  bf16 ? launch_act_grad<Bf16, detail::GeluGradF>(d, act_in, n, s)
       : launch_act_grad<F16, detail::GeluGradF>(d, act_in, n, s);
}

}  // namespace tg::kernels::cuda
