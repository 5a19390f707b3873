// cast to and from i32 and i64 (kernels/cpu/ints.cpp): an integer to the nearest float
// (rounded once more to bf16 or f16), a float toward zero, saturating, NaN to 0
// (graph/float_formats.h's int_from_f32, what the CPU does), i64 to i32 saturating.
#include <cuda_runtime.h>

#include <type_traits>

#include "graph/float_formats.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage.h"

namespace tg::kernels::cuda {

namespace {

template <typename D, typename S>
__device__ __forceinline__ D convert(S v) {
  if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
    if constexpr (sizeof(D) < sizeof(S)) {
      constexpr S lo = -2147483647 - 1, hi = 2147483647;
      return static_cast<D>(v < lo ? lo : v > hi ? hi : v);
    } else {
      return static_cast<D>(v);
    }
  } else if constexpr (std::is_integral_v<D>) {
    return int_from_f32<D>(static_cast<float>(v));
  } else {
    return narrow<D>(static_cast<float>(v));
  }
}

template <typename S, typename D>
__global__ void cast_ints_kernel(const S* x, D* y, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = convert<D>(x[i]);
}

// fn(E{}) with E the element type of any dtype.
template <typename Fn>
void with_any_element(DType dt, Fn&& fn) {
  if (dt == DType::I32) return fn(int32_t{});
  if (dt == DType::I64) return fn(int64_t{});
  with_element_type(dt, fn);
}

}  // namespace

void cast_ints(const TensorView& x, const TensorView& y, cudaStream_t s) {
  const int64_t n = x.shape.numel();
  if (n <= 0) return;
  with_any_element(x.dtype, [&](auto se) {
    using S = decltype(se);
    with_any_element(y.dtype, [&](auto de) {
      using D = decltype(de);
      detail::launch(TG_LAUNCH_SITE, cast_ints_kernel<S, D>, detail::grid_for(n), detail::kBlock, s,
                     elements<const S>(x.data), elements<D>(y.data), n);
    });
  });
}

}  // namespace tg::kernels::cuda
