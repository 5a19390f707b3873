#pragma once
// Whether work enqueued on a stream now would be recorded into a CUDA graph rather than run:
// the cuDNN and cuBLASLt choosers time candidates only when it would run.
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"

namespace tg::kernels::cuda {

inline bool stream_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  TG_CUDA_CHECK(cudaStreamIsCapturing(s, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace tg::kernels::cuda
