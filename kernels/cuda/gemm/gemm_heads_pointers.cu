// One thread per matrix: a few hundred 8-byte stores (256 for tg-train's transformer),
// launched before each matmul_heads GEMM. Its time is the launch's; computing the
// addresses on the host instead would need a host-to-device copy per call, which a
// CUDA Graph replays from fixed host memory, and the static plan's addresses of a
// dynamic-shape graph are not known when it is captured.
#include "kernels/cuda/gemm/gemm_heads_pointers.h"

#include "kernels/cuda/common.cuh"

namespace tg::kernels::cuda {

namespace {

__global__ void heads_pointers_kernel(const float* a, HeadsMatrix ga, const float* b, HeadsMatrix gb, float* d,
                                      HeadsMatrix gd, int64_t heads, int64_t batch, void** arrays) {
  pdl::prologue();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  arrays[i] = const_cast<float*>(a + ga.offset(i, heads));
  arrays[batch + i] = const_cast<float*>(b + gb.offset(i, heads));
  arrays[2 * batch + i] = d + gd.offset(i, heads);
}

}  // namespace

void heads_pointers(const float* a, const HeadsMatrix& ga, const float* b, const HeadsMatrix& gb, float* d,
                    const HeadsMatrix& gd, int64_t heads, int64_t batch, void** arrays, cudaStream_t s) {
  if (batch <= 0) return;
  const int block = detail::block_for(batch);
  const int64_t grid = (batch + block - 1) / block;
  detail::launch(TG_LAUNCH_SITE, heads_pointers_kernel, dim3(static_cast<unsigned>(grid)), dim3(block), s, a, ga, b,
                 gb, d, gd, heads, batch, arrays);
}

}  // namespace tg::kernels::cuda
