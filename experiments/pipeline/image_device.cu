#include "experiments/pipeline/image_device.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>

#include "experiments/pipeline/image_normalize_cuda.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/raii.h"

namespace tg::pipeline {

struct ImageDevice::Impl {
  ImageShape shape;
  cuda::Stream stream;
  cuda::PinnedBuffer pin_u8, pin_f32;
  cuda::DeviceBuffer dev_u8, dev_f32;
  cuda::Event h2d_start, h2d_end, norm_end;
};

ImageDevice::ImageDevice(const ImageShape& s) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.shape = s;
  const size_t n = static_cast<size_t>(s.elems());
  m.stream = cuda::Stream::create();
  m.pin_u8 = cuda::PinnedBuffer::allocate(n);
  m.pin_f32 = cuda::PinnedBuffer::allocate(n * sizeof(float));
  m.dev_u8 = cuda::DeviceBuffer::allocate(n);
  m.dev_f32 = cuda::DeviceBuffer::allocate(n * sizeof(float));
  m.h2d_start = cuda::Event::create();
  m.h2d_end = cuda::Event::create();
  m.norm_end = cuda::Event::create();
}

ImageDevice::~ImageDevice() = default;

float* ImageDevice::own_input() { return impl_->dev_f32.as<float>(); }

ImageStageTimes ImageDevice::feed(ImagePath p, const uint8_t* pixels, float* input) {
  Impl& m = *impl_;
  const size_t n = static_cast<size_t>(m.shape.elems());
  const cudaStream_t s = m.stream.get();
  ImageStageTimes t;
  const auto t0 = std::chrono::steady_clock::now();
  if (p == ImagePath::u8) std::memcpy(m.pin_u8.get(), pixels, n);
  else normalize_images(pixels, m.pin_f32.as<float>(), m.shape);
  t.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.h2d_start.record(s);
  if (p == ImagePath::u8) {
    TG_CUDA_CHECK(cudaMemcpyAsync(m.dev_u8.get(), m.pin_u8.get(), n, cudaMemcpyHostToDevice, s));
    m.h2d_end.record(s);
    normalize_images_cuda(m.dev_u8.as<uint8_t>(), input, m.shape, s);
    m.norm_end.record(s);
  } else {
    TG_CUDA_CHECK(cudaMemcpyAsync(input, m.pin_f32.get(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    m.h2d_end.record(s);
  }
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  t.h2d_s = m.h2d_end.elapsed_ms_since(m.h2d_start) * 1e-3;
  if (p == ImagePath::u8) t.normalize_s = m.norm_end.elapsed_ms_since(m.h2d_end) * 1e-3;
  return t;
}

void ImageDevice::read(const float* device, float* host, int64_t count) {
  TG_CUDA_CHECK(cudaMemcpy(host, device, static_cast<size_t>(count) * sizeof(float), cudaMemcpyDeviceToHost));
}

}  // namespace tg::pipeline
