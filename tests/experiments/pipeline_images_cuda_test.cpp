// tg-pipeline's normalize kernel (image_normalize_cuda.h) against its CPU reference
// (normalize_images): the same bits for every element, at the seed's (32, 224, 224, 3) and
// at shapes whose element count is no multiple of a block.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "experiments/pipeline/image_normalize_cuda.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/raii.h"
#include "tests/gpu_skip.h"

namespace tg {

using pipeline::ImageShape;

TEST_CASE("tg-pipeline images: the CUDA normalize kernel == normalize_images bitwise") {
  TG_REQUIRE_GPU();
  for (const ImageShape s : {ImageShape{}, ImageShape{3, 17, 5, 3}, ImageShape{1, 1, 1, 3}}) {
    CAPTURE(s.elems());
    const std::vector<uint8_t> px = pipeline::make_image_batch(s, 11);
    std::vector<float> want(px.size()), got(px.size(), std::nanf(""));
    pipeline::normalize_images(px.data(), want.data(), s);
    cuda::DeviceBuffer in = cuda::DeviceBuffer::allocate(px.size());
    cuda::DeviceBuffer out = cuda::DeviceBuffer::allocate(px.size() * sizeof(float));
    TG_CUDA_CHECK(cudaMemcpy(in.get(), px.data(), px.size(), cudaMemcpyHostToDevice));
    TG_CUDA_CHECK(cudaMemset(out.get(), 0xff, px.size() * sizeof(float)));  // NaN: every element must be written
    pipeline::normalize_images_cuda(in.as<uint8_t>(), out.as<float>(), s, nullptr);
    TG_CUDA_CHECK(cudaMemcpy(got.data(), out.get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 3)
        INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    CHECK(bad == 0);
  }
}

}  // namespace tg
