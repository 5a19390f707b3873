// One thread an output element, in NCHW order: the f32 stores are coalesced; the pixel
// reads stride by 3 bytes within one warp's span, which the L1 cache serves.
#include <algorithm>

#include "experiments/pipeline/image_normalize_cuda.h"
#include "kernels/cuda/check.h"

namespace tg::pipeline {

namespace {

__constant__ float c_mean[3] = {kImageNetMean[0], kImageNetMean[1], kImageNetMean[2]};
__constant__ float c_std[3] = {kImageNetStd[0], kImageNetStd[1], kImageNetStd[2]};

__global__ void normalize_kernel(const uint8_t* __restrict__ nhwc, float* __restrict__ nchw, int64_t total,
                                 int64_t plane, int64_t channels) {
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = o % plane;
    const int64_t nc = o / plane;
    const int64_t ch = nc % channels;
    const int64_t n = nc / channels;
    const float x = static_cast<float>(nhwc[(n * plane + i) * channels + ch]);
    // The _rn intrinsics: never contracted, the host's normalize_pixel to the bit.
    nchw[o] = __fdiv_rn(__fsub_rn(__fdiv_rn(x, 255.0f), c_mean[ch]), c_std[ch]);
  }
}

}  // namespace

void normalize_images_cuda(const uint8_t* nhwc, float* nchw, const ImageShape& s, cudaStream_t stream) {
  const int64_t total = s.elems();
  if (total == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 65535 * 8);
  normalize_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(nhwc, nchw, total, s.h * s.w, s.c);
  TG_LAUNCH_CHECK();
}

}  // namespace tg::pipeline
