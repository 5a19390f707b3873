#pragma once
// The GPU half of the uint8 image path (image_batch.h): NHWC uint8 pixels on the device ->
// NCHW f32, normalized with ImageNet's mean and std, the same bits as normalize_images.
// CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "experiments/pipeline/image_batch.h"

namespace tg::pipeline {

// Enqueues the conversion of s.elems() pixels on `stream`; nchw holds s.elems() floats.
void normalize_images_cuda(const uint8_t* nhwc, float* nchw, const ImageShape& s, cudaStream_t stream);

}  // namespace tg::pipeline
