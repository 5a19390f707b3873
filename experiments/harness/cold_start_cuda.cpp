// Compiled only when TWOGRAPH_HAVE_CUDA (see CMakeLists.txt).
#include <cuda_runtime_api.h>

#include "experiments/harness/cold_start.h"
#include "kernels/cuda/check.h"

namespace tg::harness {

std::vector<ColdStep> cuda_context_steps(int device) {
  auto init = [] {
    int n = 0;
    TG_CUDA_CHECK(cudaGetDeviceCount(&n));
  };
  // Since CUDA 12 cudaSetDevice creates the primary context; before, the first call that
  // needs one (cudaFree(0) is the customary one) did. Timing both covers either.
  auto context = [device] {
    TG_CUDA_CHECK(cudaSetDevice(device));
    TG_CUDA_CHECK(cudaFree(nullptr));
  };
  return {{"runtime_init", "first", 0, init},
          {"runtime_init", "second", 0, init},
          {"context_creation", "first", 0, context},
          {"context_creation", "second", 0, context}};
}

}  // namespace tg::harness
