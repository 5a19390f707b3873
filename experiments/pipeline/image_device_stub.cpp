// CPU-only build of tg-pipeline: no image path on a GPU; main.cpp asks have_cuda_build()
// first, so nothing here is reached.
#include <stdexcept>

#include "experiments/pipeline/image_device.h"

namespace tg::pipeline {
struct ImageDevice::Impl {};
ImageDevice::ImageDevice(const ImageShape&) { throw std::logic_error("tg-pipeline: built without CUDA"); }
ImageDevice::~ImageDevice() = default;
ImageStageTimes ImageDevice::feed(ImagePath, const uint8_t*, float*) {
  throw std::logic_error("tg-pipeline: built without CUDA");
}
float* ImageDevice::own_input() { throw std::logic_error("tg-pipeline: built without CUDA"); }
void ImageDevice::read(const float*, float*, int64_t) { throw std::logic_error("tg-pipeline: built without CUDA"); }
}  // namespace tg::pipeline
