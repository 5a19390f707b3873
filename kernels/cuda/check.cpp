// The throwing side of check.h. The driver API's error strings are reached through
// cudaGetDriverEntryPointByVersion, so nothing links libcuda.so directly: binaries
// still start (and GPU tests skip) on a machine without the driver.
#include "kernels/cuda/check.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace tg::cuda_detail {

namespace {

int current_device() noexcept {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

std::string where(const char* file, int line, const char* call) {
  return fmt::format("{}:{}: {} failed", file, line, call);
}

std::string cuda_message(cudaError_t e, const char* call, const char* file, int line) {
  return fmt::format("{}: {} ({}) on device {}", where(file, line, call), cudaGetErrorName(e),
                     cudaGetErrorString(e), current_device());
}

std::string cublas_message(cublasStatus_t s, const char* call, const char* file, int line) {
  return fmt::format("{}: {} ({}) on device {}", where(file, line, call), cublas_status_name(s),
                     cublasGetStatusString(s), current_device());
}

}  // namespace

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  // Clear a sticky-free error so that the next call does not report it again.
  cudaGetLastError();
  throw CudaError(cuda_message(e, call, file, line));
}

void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw CudaError(cublas_message(s, call, file, line));
}

void throw_cu(CUresult r, const char* call, const char* file, int line) {
  using GetStr = CUresult (*)(CUresult, const char**);
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* text = "no description (driver entry points unavailable)";
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuGetErrorName", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess && fn)
    reinterpret_cast<GetStr>(fn)(r, &name);
  fn = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuGetErrorString", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess && fn)
    reinterpret_cast<GetStr>(fn)(r, &text);
  cudaGetLastError();
  throw CudaError(fmt::format("{}: {} ({}, code {}) on device {}", where(file, line, call), name ? name : "?",
                              text ? text : "?", static_cast<int>(r), current_device()));
}

void log_cuda(cudaError_t e, const char* call, const char* file, int line) noexcept {
  cudaGetLastError();
  std::fprintf(stderr, "twograph: warning: %s\n", cuda_message(e, call, file, line).c_str());
}

void log_cublas(cublasStatus_t s, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "twograph: warning: %s\n", cublas_message(s, call, file, line).c_str());
}

void launch_check(const char* file, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw CudaError(cuda_message(e, "kernel launch", file, line));
#ifndef NDEBUG
  static const bool sync = [] {
    const char* v = std::getenv("TG_CUDA_LAUNCH_SYNC");
    return v && v[0] == '1';
  }();
  if (sync) TG_CUDA_CHECK(cudaDeviceSynchronize());
#endif
}

}  // namespace tg::cuda_detail
