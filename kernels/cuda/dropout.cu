// dropout and rng_advance on the GPU, in every float dtype of the data. The mask is
// kernels/philox.h's, the functions the CPU reference (kernels/cpu/dropout.cpp) calls, so
// the two give the same bits; each thread draws one Philox block for a group of four
// elements and moves them with one 4-element load and store when the pointers allow it.
// The rng state is read on the device, so a CUDA-graph replay draws from the state that
// the previous replay's rng_advance left, with no host copy.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage.h"
#include "kernels/philox.h"

namespace tg::kernels::cuda {

namespace {

using detail::grid_for;
using detail::kBlock;

template <typename T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};

// kVec: x and y are 4-element aligned, so full groups move as one Quad.
template <typename T, typename I, bool kVec>
__global__ void dropout_kernel(const T* x, const I* rng, T* y, DropoutParams d, int64_t n) {
  pdl::prologue();
  dropout_set_state(d, static_cast<uint64_t>(rng[0]), static_cast<uint64_t>(rng[1]));
  const int64_t groups = (n + kDropoutGroup - 1) / kDropoutGroup;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const Philox4 w = dropout_words(d, static_cast<uint64_t>(g));
    const int64_t base = g * kDropoutGroup;
    if (kVec && base + kDropoutGroup <= n) {
      Quad<T> q = reinterpret_cast<const Quad<T>*>(x)[g];
#pragma unroll
      for (int k = 0; k < 4; ++k) q.v[k] = narrow<T>(__fmul_rn(static_cast<float>(q.v[k]), dropout_factor(d, w.w[k])));
      reinterpret_cast<Quad<T>*>(y)[g] = q;
    } else {
      for (int k = 0; k < 4 && base + k < n; ++k)
        y[base + k] = narrow<T>(__fmul_rn(static_cast<float>(x[base + k]), dropout_factor(d, w.w[k])));
    }
  }
}

template <typename I>
__global__ void rng_advance_kernel(I* rng) {
  pdl::prologue();
  if (blockIdx.x == 0 && threadIdx.x == 0) rng[1] = static_cast<I>(static_cast<uint64_t>(rng[1]) + 1);
}

// fn(I{}) with I the element type of the rng state: i64 (graph/dtype_rules.h), or i32.
template <typename Fn>
void with_rng_type(DType dt, Fn&& fn) {
  if (dt == DType::I64) return fn(int64_t{});
  if (dt == DType::I32) return fn(int32_t{});
  throw std::invalid_argument(std::string("run_cuda dropout: the rng state is ") + dtype_name(dt) +
                              "; it must be i64 (the seed, the offset)");
}

}  // namespace

void dropout(const TensorView& x, const TensorView& rng, const TensorView& y, int64_t n, const Attrs& at,
             cudaStream_t s) {
  if (n <= 0) return;
  const DropoutParams d = dropout_params(at.p, at.rng_stream);
  const int64_t groups = (n + kDropoutGroup - 1) / kDropoutGroup;
  with_element_type(x.dtype, [&](auto te) {
    using T = decltype(te);
    with_rng_type(rng.dtype, [&](auto ie) {
      using I = decltype(ie);
      const T* xp = elements<const T>(x.data);
      T* yp = elements<T>(y.data);
      const I* rp = elements<const I>(rng.data);
      if (aligned4(xp) && aligned4(yp))
        detail::launch(TG_LAUNCH_SITE, dropout_kernel<T, I, true>, grid_for(groups), kBlock, s, xp, rp, yp, d, n);
      else
        detail::launch(TG_LAUNCH_SITE, dropout_kernel<T, I, false>, grid_for(groups), kBlock, s, xp, rp, yp, d, n);
    });
  });
}

void rng_advance(const TensorView& rng, cudaStream_t s) {
  with_rng_type(rng.dtype, [&](auto ie) {
    using I = decltype(ie);
    detail::launch(TG_LAUNCH_SITE, rng_advance_kernel<I>, 1, 32, s, elements<I>(rng.data));
  });
}

}  // namespace tg::kernels::cuda
