#pragma once
// One error-checking family for the CUDA runtime, cuBLAS and the driver API.
// Every failure throws tg::CudaError whose message names the file, the line, the
// call as written, the error's name and text, and the current device, e.g.
//   kernels/cuda/raii.h:40: cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation
//   (out of memory) on device 0
// Destructors use the _NOTHROW variants, which log to stderr and go on.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace tg {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace cuda_detail {
[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line);
[[noreturn]] void throw_cu(CUresult r, const char* call, const char* file, int line);
void log_cuda(cudaError_t e, const char* call, const char* file, int line) noexcept;
void log_cublas(cublasStatus_t s, const char* call, const char* file, int line) noexcept;
// cudaGetLastError after a launch. In builds without NDEBUG, and only when the
// environment sets TG_CUDA_LAUNCH_SYNC=1, it also synchronizes the device so that a
// faulting kernel is reported at its own launch (never set it while capturing).
void launch_check(const char* file, int line);
const char* cublas_status_name(cublasStatus_t s);
}  // namespace cuda_detail

}  // namespace tg

#define TG_CUDA_CHECK(call)                                                           \
  do {                                                                                \
    const cudaError_t tg_err_ = (call);                                               \
    if (tg_err_ != cudaSuccess) ::tg::cuda_detail::throw_cuda(tg_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define TG_CUBLAS_CHECK(call)                                                         \
  do {                                                                                \
    const cublasStatus_t tg_st_ = (call);                                             \
    if (tg_st_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::tg::cuda_detail::throw_cublas(tg_st_, #call, __FILE__, __LINE__);             \
  } while (0)

#define TG_CU_CHECK(call)                                                             \
  do {                                                                                \
    const CUresult tg_res_ = (call);                                                  \
    if (tg_res_ != CUDA_SUCCESS) ::tg::cuda_detail::throw_cu(tg_res_, #call, __FILE__, __LINE__); \
  } while (0)

#define TG_CUDA_CHECK_NOTHROW(call)                                                   \
  do {                                                                                \
    const cudaError_t tg_err_ = (call);                                               \
    if (tg_err_ != cudaSuccess) ::tg::cuda_detail::log_cuda(tg_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define TG_CUBLAS_CHECK_NOTHROW(call)                                                 \
  do {                                                                                \
    const cublasStatus_t tg_st_ = (call);                                             \
    if (tg_st_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::tg::cuda_detail::log_cublas(tg_st_, #call, __FILE__, __LINE__);               \
  } while (0)

#define TG_LAUNCH_CHECK() ::tg::cuda_detail::launch_check(__FILE__, __LINE__)
