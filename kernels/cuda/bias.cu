// bias_add (kernels/cpu/bias.cpp), in every dtype of storage.h.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

// The pack helpers (storage.h) and launch sizes (elementwise.cuh).
using namespace detail;

// bias_add: each thread walks whole packs of a row-major [rows, cols] tensor; the
// vector path needs cols % kPack == 0 so that a pack never straddles two rows.
template <DType D>
__global__ void bias_vec_kernel(const Store<D>* x, const Store<D>* bias, Store<D>* y, int64_t nv, int64_t cols_v) {
  pdl::prologue();
  constexpr int W = kPack<D>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nv; i += stride) {
    float u[W], v[W];
    detail::load_pack<D>(x, i, u);
    detail::load_pack<D>(bias, i % cols_v, v);
#pragma unroll
    for (int k = 0; k < W; ++k) u[k] = __fadd_rn(u[k], v[k]);
    detail::store_pack<D>(y, i, u);
  }
}
template <DType D>
__global__ void bias_scalar_kernel(const Store<D>* x, const Store<D>* bias, Store<D>* y, int64_t n, int64_t cols) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    detail::store<D>(y, i, __fadd_rn(detail::load<D>(x, i), detail::load<D>(bias, i % cols)));
}

}  // namespace

void bias_add(const void* x, const void* bias, void* y, int64_t rows, int64_t cols, cudaStream_t s, DType dt) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  detail::with_dtype(dt, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    constexpr int W = kPack<D>;
    const auto* xs = static_cast<const Store<D>*>(x);
    const auto* bs = static_cast<const Store<D>*>(bias);
    auto* ys = static_cast<Store<D>*>(y);
    if (cols % W == 0 && aligned16(x) && aligned16(bias) && aligned16(y))
      detail::launch(TG_LAUNCH_SITE, bias_vec_kernel<D>, grid_for(n / W), kBlock, s, xs, bs, ys, n / W, cols / W);
    else
      detail::launch(TG_LAUNCH_SITE, bias_scalar_kernel<D>, grid_for(n), kBlock, s, xs, bs, ys, n, cols);
  });
}

}  // namespace tg::kernels::cuda
