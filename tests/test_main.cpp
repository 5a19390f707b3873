#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/gpu_skip.h"

#ifdef TWOGRAPH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tg::testing {
bool have_cuda_device() {
#ifdef TWOGRAPH_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no device" error so later calls start clean
    return false;
  }
  return n > 0;
#else
  return false;
#endif
}
}  // namespace tg::testing

int main(int argc, char** argv) {
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
