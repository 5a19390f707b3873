// One thread per matrix: a few hundred 8-byte stores (256 for tg-train's transformer),
// launched before each matmul_heads GEMM. Its time is the launch's; computing the
// addresses on the host instead would need a host-to-device copy per call, which a
// CUDA Graph replays from fixed host memory, and the static plan's addresses of a
// dynamic-shape graph are not known when it is captured.
#include "kernels/cuda/gemm/gemm_heads_pointers.h"

#include "kernels/cuda/common.cuh"

namespace tg::kernels::cuda {

namespace {

__global__ void heads_pointers_kernel(const char* a, HeadsMatrix ga, const char* b, HeadsMatrix gb, char* d,
                                      HeadsMatrix gd, int64_t heads, int64_t batch, int elem_bytes, void** arrays) {
  pdl::prologue();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  arrays[i] = const_cast<char*>(a + ga.offset(i, heads) * elem_bytes);
  arrays[batch + i] = const_cast<char*>(b + gb.offset(i, heads) * elem_bytes);
  arrays[2 * batch + i] = d + gd.offset(i, heads) * elem_bytes;
}

}  // namespace

void heads_pointers(const void* a, const HeadsMatrix& ga, const void* b, const HeadsMatrix& gb, void* d,
                    const HeadsMatrix& gd, int64_t heads, int64_t batch, int elem_bytes, void** arrays,
                    cudaStream_t s) {
  if (batch <= 0) return;
  const int block = detail::block_for(batch);
  const int64_t grid = (batch + block - 1) / block;
  detail::launch(TG_LAUNCH_SITE, heads_pointers_kernel, dim3(static_cast<unsigned>(grid)), dim3(block), s,
                 static_cast<const char*>(a), ga, static_cast<const char*>(b), gb, static_cast<char*>(d), gd, heads,
                 batch, elem_bytes, arrays);
}

}  // namespace tg::kernels::cuda
