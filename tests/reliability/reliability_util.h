#pragma once
// Shared by the GPU fault tests: the device's free memory, the checks that a
// failure left the process clean, and the small training step that must still
// run (both executors, bitwise equal) after it.
#include <doctest/doctest.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/out_of_memory.h"
#include "tests/common/models.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg::testing {

// Free memory may come back a little short of where it was, without anything
// having leaked: CUDA loads each kernel's module at its first launch (lazy
// loading, the default since CUDA 12), and the failed attempt may be the first to
// launch some kernels (a cuBLAS GEMM of a new size picks a new kernel); the
// driver also maps device memory in 2 MiB pages. Those come to a few MiB. 64 MiB
// is well above that and well below the smallest buffer these tests allocate and
// could leak (every big tensor is >= 256 MiB), so a leak cannot hide under it.
inline constexpr int64_t kLeakTolerance = int64_t{64} << 20;

inline size_t device_free_bytes() {
  size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  return free_b;
}

inline std::shared_ptr<Backend> gpu_backend() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

// After a failure: the free memory is back (within kLeakTolerance), the
// backend's stream is not left capturing, and no CUDA error is pending.
inline void check_clean_after(const char* what, size_t free_before, const Backend& be) {
  const size_t free_after = device_free_bytes();
  const int64_t lost = static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
  INFO(what, ": free before ", format_bytes(static_cast<int64_t>(free_before)), ", after ",
       format_bytes(static_cast<int64_t>(free_after)), " (", format_bytes(lost), " not given back)");
  CHECK(lost <= kLeakTolerance);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
  REQUIRE(cudaStreamIsCapturing(dynamic_cast<const CudaBackend&>(be).stream(), &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusNone);
  const cudaError_t pending = cudaGetLastError();
  INFO("pending CUDA error: ", cudaGetErrorName(pending));
  CHECK(pending == cudaSuccess);
}

// A small mlp, trained on both executors in this process: static == dynamic bitwise
// (inference and 5 training steps, graph replay). Proves the process still works.
inline void check_small_step_still_runs(const char* after) {
  INFO("after ", after);
  check_static_vs_dynamic(gpu_backend, mlp_model(mlp_config(16, 32, 64, 3, 10)), "small mlp", true);
  CHECK(cudaGetLastError() == cudaSuccess);
}

// The model's inputs (what the dynamic executor is fed), from a recording.
inline std::map<std::string, Shape> model_input_shapes(const ModelFn& model) {
  Graph fwd;
  {
    RecordingBuilder rb(fwd);
    model(rb);
  }
  return input_shapes_of(fwd);
}

}  // namespace tg::testing
