#pragma once
// tg-pipeline's image path on the GPU (image_device.cu; image_device_stub.cpp without
// CUDA): one batch from the host's uint8 pixels to the network's f32 NCHW input on the
// device, one of two ways, serialized (the host waits for the batch's copy and kernel):
//   u8:  the host copies the pixels into pinned staging, H2D s.elems() bytes, the GPU
//        normalizes (normalize_images_cuda) into the input;
//   f32: the host normalizes (normalize_images) into pinned staging, H2D 4 x s.elems() bytes
//        straight into the input.
#include <cstdint>
#include <memory>

#include "experiments/pipeline/image_batch.h"

namespace tg::pipeline {

struct ImageStageTimes {
  double host_s = 0;       // steady_clock: the host's copy or normalize into pinned staging
  double h2d_s = 0;        // CUDA events around the copy
  double normalize_s = 0;  // CUDA events around the kernel (u8 only)
};

class ImageDevice {
 public:
  explicit ImageDevice(const ImageShape& s);  // staging, the device pixels and a stream
  ~ImageDevice();
  ImageDevice(const ImageDevice&) = delete;
  ImageDevice& operator=(const ImageDevice&) = delete;
  // Puts `pixels` (s.elems() bytes, NHWC) into `input` (device, s.elems() floats, NCHW) by
  // path p; returns when it is there.
  ImageStageTimes feed(ImagePath p, const uint8_t* pixels, float* input);
  // A device buffer of s.elems() floats: the input when no network reads it.
  float* own_input();
  // count floats of device memory to the host.
  void read(const float* device, float* host, int64_t count);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tg::pipeline
