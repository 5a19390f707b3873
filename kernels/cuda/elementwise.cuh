#pragma once
// The elementwise kernel frame (internal to kernels/cuda), for every op that maps
// element i of its inputs to element i of its output, in any dtype of storage.h: a
// grid-stride kernel with 16-byte loads/stores (packs: 4 f32 or 8 16-bit elements) when
// every pointer is 16-byte aligned (two packs in flight per thread) and the tail of
// fewer than a pack by the first threads, a scalar kernel otherwise, and one thread per
// element without a loop for tiny tensors. The op is a functor
// (float operator()(float a, float b) const), defined in the family's .cu file; it
// computes in f32 and each store rounds once to the dtype.
#include <cuda_runtime.h>

#include "kernels/cuda/storage.h"
#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda::detail {

// F: float operator()(float a, float b) const; unary ops ignore b (passed as a).
template <DType D, bool kBinary, typename F>
__global__ void ew_vec_kernel(F f, const Store<D>* a, const Store<D>* b, Store<D>* y, int64_t nv, int64_t n) {
  pdl::prologue();
  constexpr int W = kPack<D>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Store<D>* b_or_a = kBinary ? b : a;
  int64_t i = tid;
  for (; i + stride < nv; i += 2 * stride) {
    Lanes<W> u0, u1, v0, v1;
    load_pack<D>(a, i, u0.v);
    load_pack<D>(a, i + stride, u1.v);
    if (kBinary) {
      load_pack<D>(b, i, v0.v);
      load_pack<D>(b, i + stride, v1.v);
    } else {
      v0 = u0, v1 = u1;
    }
    store_pack<D>(y, i, map(f, u0, v0).v);
    store_pack<D>(y, i + stride, map(f, u1, v1).v);
  }
  if (i < nv) {
    Lanes<W> u, v;
    load_pack<D>(a, i, u.v);
    load_pack<D>(b_or_a, i, v.v);
    store_pack<D>(y, i, map(f, u, v).v);
  }
  const int64_t t = W * nv + tid;
  if (t < n) store<D>(y, t, f(load<D>(a, t), load<D>(b_or_a, t)));
}

template <DType D, bool kBinary, typename F>
__global__ void ew_scalar_kernel(F f, const Store<D>* a, const Store<D>* b, Store<D>* y, int64_t n) {
  pdl::prologue();
  const Store<D>* b_or_a = kBinary ? b : a;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store<D>(y, i, f(load<D>(a, i), load<D>(b_or_a, i)));
}

// Small tensors: one element per thread, 32-bit indices, no loop. A chain of tiny ops
// is bound by how fast one kernel follows another, and the fewer instructions
// between the PDL wait and the grid's end, the sooner the next one may run.
template <DType D, bool kBinary, typename F>
__global__ void ew_small_kernel(F f, const Store<D>* a, const Store<D>* b, Store<D>* y, int n) {
  pdl::prologue();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) store<D>(y, i, f(load<D>(a, i), load<D>(kBinary ? b : a, i)));
}
constexpr int64_t kSmallElements = 1024;  // at most 4 blocks of 256: beyond, 16-byte loads pay

template <DType D, bool kBinary, typename F>
void launch_ew_as(F f, const Store<D>* a, const Store<D>* b, Store<D>* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  if (n <= kSmallElements) {
    const int block = block_for(n);
    launch(TG_LAUNCH_SITE, ew_small_kernel<D, kBinary, F>, static_cast<int>((n + block - 1) / block), block, s, f, a,
           b, y, static_cast<int>(n));
  } else if (aligned16(a) && (!kBinary || aligned16(b)) && aligned16(y)) {
    const int64_t nv = n / kPack<D>;
    const int64_t work = nv > (n - kPack<D> * nv) ? nv : (n - kPack<D> * nv);
    const int block = block_for(work);
    launch(TG_LAUNCH_SITE, ew_vec_kernel<D, kBinary, F>, grid_for(work, block), block, s, f, a, b, y, nv, n);
  } else {
    const int block = block_for(n);
    launch(TG_LAUNCH_SITE, ew_scalar_kernel<D, kBinary, F>, grid_for(n, block), block, s, f, a, b, y, n);
  }
}

// n elements of dtype dt at a (and b) into y.
template <bool kBinary, typename F>
void launch_ew(F f, const void* a, const void* b, void* y, int64_t n, DType dt, cudaStream_t s) {
  with_dtype(dt, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    launch_ew_as<D, kBinary>(f, static_cast<const Store<D>*>(a), static_cast<const Store<D>*>(b),
                             static_cast<Store<D>*>(y), n, s);
  });
}

// f32 only (the optimizer updates, mse_loss_grad).
template <bool kBinary, typename F>
void launch_ew(F f, const float* a, const float* b, float* y, int64_t n, cudaStream_t s) {
  launch_ew_as<DType::F32, kBinary>(f, a, b, y, n, s);
}

}  // namespace tg::kernels::cuda::detail
