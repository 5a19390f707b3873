#include "experiments/harness/failure.h"

#include <fmt/format.h>

#include <cstring>

#include "kernels/out_of_memory.h"

#ifdef TWOGRAPH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tg::harness {

std::string sticky_cuda_error() {
#ifdef TWOGRAPH_HAVE_CUDA
  // A non-sticky error is returned once and then cleared (by cudaGetLastError, or
  // by the call that returned it); a sticky one comes back from every call. So:
  // synchronize, clear, synchronize again, and believe only a second failure.
  if (cudaDeviceSynchronize() == cudaSuccess) return "";
  cudaGetLastError();
  const cudaError_t again = cudaDeviceSynchronize();
  cudaGetLastError();
  // A stream left capturing also fails a device sync, every time, without the
  // context being lost (and the sync has just invalidated that capture).
  if (again == cudaSuccess || again == cudaErrorStreamCaptureUnsupported || again == cudaErrorStreamCaptureInvalidated ||
      again == cudaErrorStreamCaptureImplicit)
    return "";
  return fmt::format("{} ({})", cudaGetErrorName(again), cudaGetErrorString(again));
#else
  return "";
#endif
}

Failure classify_failure(const std::exception& e, bool probe_gpu, const std::string& command_line) {
  Failure f;
  f.error.message = e.what();
  const std::string sticky = probe_gpu ? sticky_cuda_error() : std::string();
  if (!sticky.empty()) {
    f.error.kind = "sticky_cuda_error";
    f.error.message += fmt::format(" [sticky CUDA error {}: the CUDA context is lost]", sticky);
    f.advice = fmt::format(
        "a sticky CUDA error ({}) happened: the context is lost; no further GPU work is possible in this process, so "
        "the run stopped here. Rerun, under compute-sanitizer to find the kernel:\n  compute-sanitizer --tool "
        "memcheck {}",
        sticky, command_line);
  } else if (dynamic_cast<const OutOfMemoryError*>(&e) || std::strstr(e.what(), "cudaErrorMemoryAllocation")) {
    f.error.kind = "out_of_memory";
    f.advice = "the device ran out of memory (the breakdown is above): run a smaller size, or free the GPU of other "
               "processes (nvidia-smi shows them)";
  } else {
    f.error.kind = "failure";
  }
  return f;
}

}  // namespace tg::harness
