#pragma once
// cuDNN's part of the error-checking family of check.h and of the owners of raii.h:
// TG_CUDNN_CHECK throws tg::CudaError naming the file, the line, the call as written, the
// status and cuDNN's own account of the failure; the descriptors and the handle are
// move-only owners whose destructors log a failure and go on. Only the cuDNN convolutions
// (conv_cudnn.cpp) include this: it needs cudnn.h, which a build without cuDNN lacks.
#include <cudnn.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/raii.h"

namespace tg::cuda_detail {
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char* call, const char* file, int line);
void log_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) noexcept;
}  // namespace tg::cuda_detail

#define TG_CUDNN_CHECK(call)                                                                   \
  do {                                                                                         \
    const cudnnStatus_t tg_dnn_ = (call);                                                      \
    if (tg_dnn_ != CUDNN_STATUS_SUCCESS) ::tg::cuda_detail::throw_cudnn(tg_dnn_, #call, __FILE__, __LINE__); \
  } while (0)

#define TG_CUDNN_CHECK_NOTHROW(call)                                                           \
  do {                                                                                         \
    const cudnnStatus_t tg_dnn_ = (call);                                                      \
    if (tg_dnn_ != CUDNN_STATUS_SUCCESS) ::tg::cuda_detail::log_cudnn(tg_dnn_, #call, __FILE__, __LINE__); \
  } while (0)

namespace tg::cuda {

namespace detail {
inline void destroy_cudnn(cudnnHandle_t h) noexcept { TG_CUDNN_CHECK_NOTHROW(cudnnDestroy(h)); }
inline void destroy_tensor_desc(cudnnTensorDescriptor_t d) noexcept {
  TG_CUDNN_CHECK_NOTHROW(cudnnDestroyTensorDescriptor(d));
}
inline void destroy_filter_desc(cudnnFilterDescriptor_t d) noexcept {
  TG_CUDNN_CHECK_NOTHROW(cudnnDestroyFilterDescriptor(d));
}
inline void destroy_conv_desc(cudnnConvolutionDescriptor_t d) noexcept {
  TG_CUDNN_CHECK_NOTHROW(cudnnDestroyConvolutionDescriptor(d));
}
inline void destroy_activation_desc(cudnnActivationDescriptor_t d) noexcept {
  TG_CUDNN_CHECK_NOTHROW(cudnnDestroyActivationDescriptor(d));
}
}  // namespace detail

// A handle made by create(): owner and maker in one, as CublasHandle.
template <typename H, cudnnStatus_t (*Create)(H*), void (*Destroy)(H) noexcept>
class CudnnOwned : public UniqueHandle<H, Destroy> {
 public:
  CudnnOwned() = default;
  static CudnnOwned create() {
    H h{};
    TG_CUDNN_CHECK(Create(&h));
    CudnnOwned o;
    static_cast<UniqueHandle<H, Destroy>&>(o) = UniqueHandle<H, Destroy>(h);
    return o;
  }
};

using CudnnHandle = CudnnOwned<cudnnHandle_t, cudnnCreate, detail::destroy_cudnn>;
using CudnnTensorDesc = CudnnOwned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, detail::destroy_tensor_desc>;
using CudnnFilterDesc = CudnnOwned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, detail::destroy_filter_desc>;
using CudnnActivationDesc = CudnnOwned<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                       detail::destroy_activation_desc>;
using CudnnConvDesc =
    CudnnOwned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, detail::destroy_conv_desc>;

}  // namespace tg::cuda
