#pragma once
// The CUDA backend: every op is enqueued on one non-blocking stream that the
// backend owns; cuBLAS runs on the same stream with a fixed workspace, so that it
// never allocates while the static executor captures a CUDA Graph, and cuDNN's
// convolutions (kernels/cuda/conv_cudnn.h) run in the same workspace unless the call
// brings one. Its kernel choices (kernels/cuda_options.h) are given when it is made and
// fixed for its life.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/attention_cudnn.h"
#include "kernels/cuda/conv_cudnn.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/dtype_support.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/cuda/raii.h"

namespace tg {

class CudaBackend : public Backend {
 public:
  static constexpr size_t kCublasWorkspaceBytes = 32u << 20;  // 32 MiB
  static constexpr size_t kScratchBytes = 8u << 20;           // kernels' scratch (CudaExecContext)

  // Makes `device` current on this thread. Throws std::invalid_argument for a
  // device that does not exist, options.conv_cudnn in a build without cuDNN or
  // options.attention_cudnn in a build without the cuDNN frontend,
  // tg::CudaError when CUDA fails.
  explicit CudaBackend(int device, bool tf32 = false, const CudaBackendOptions& options = {});
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string name() const override { return name_; }
  void run(const kernels::OpCall& call) override;
  // The same on another stream of this device: the static executor's side stream (the lanes
  // pass), one at a time. Its ops get a scratch of their own (the column sums of the bias
  // gradients use one, and may run while a main-stream op uses the other); a GEMM brings its
  // workspace in the call.
  void run_on(const kernels::OpCall& call, cudaStream_t s);
  void* raw_alloc(size_t bytes) override;
  void raw_free(void* p) noexcept override;
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy_on_device(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;

  int device() const { return device_; }
  bool tf32() const { return tf32_; }
  const CudaBackendOptions& options() const { return ctx_.options; }
  cudaStream_t stream() const { return stream_.get(); }
  cublasHandle_t cublas() const { return cublas_.get(); }
  const kernels::CudaExecContext& context() const { return ctx_; }
  // run_on's context, but for its stream: the same but for the scratch.
  const kernels::CudaExecContext& side_context() const { return side_ctx_; }
  // The cuBLASLt GEMM a call runs (the heuristic asked now, once per shape), or nothing
  // for a call that runs none (kernels/cuda/gemm/gemm.h routes many GEMMs to kernels of the
  // project's own). The first matmul_sgd_momentum call prepared also allocates
  // the stream-K update's workspaces (ensure_update_workspace), before any capture.
  // A convolution that runs through cuDNN gets its plan (kernels/cuda/conv_cudnn.h, run once
  // on scratch the first time, before any capture) and its workspace; one on the direct
  // kernels gets nothing. An attention call cuDNN takes gets its graph (kernels/cuda/
  // attention_cudnn.h, likewise run once on scratch) and its workspace.
  Prepared prepare(const kernels::OpCall& call) override;
  bool runs(OpKind op, DType dt) const override { return kernels::cuda::has_kernel(op, dt); }
  // Staging on, and not the batch-invariant mode, whose GEMMs never stage (gemm_router.cpp).
  bool pads_unaligned_gemms() const override;
  // The cuDNN algorithm chosen for every convolution shape met so far (none with conv_cudnn
  // off), in the order the shapes were met.
  std::vector<kernels::cuda::ConvDnnChoice> conv_choices() const;
  // Which engine ran every attention shape met so far (cuDNN's plan, or the own kernels and
  // why), in the order met; none with attention_cudnn off.
  std::vector<kernels::cuda::AttnDnnChoice> attention_choices() const;

 private:
  // The stream-K GEMM update's workspaces, one a stream (about 17 MiB each on an H200): made
  // when a plan first holds matmul_sgd_momentum and options().gemm_update_streamk is on (the
  // default), so that a backend that never runs the fused update never holds them. Their
  // flags must stay zero between launches, which is why they are not in a plan's arena
  // (its regions are reused by other values). Without them the op runs the tiled kernel.
  void ensure_update_workspace();
  // options().staged_copies: a copy of `bytes` through the two staging buffers (made at the
  // first such copy), in chunks: to_device copies chunk i into a buffer on the host threads
  // while chunk i-1's transfer runs; to_host transfers chunk i+1 while chunk i leaves its
  // buffer on the host threads.
  void staged_copy(void* dst, const void* src, size_t bytes, bool to_device);
  static constexpr size_t kStagingChunkBytes = 8u << 20;

  int device_;
  bool tf32_;
  std::string name_;
  cuda::Stream stream_;
  cuda::CublasHandle cublas_;
  cuda::CublasLtHandle lt_;
  cuda::DeviceBuffer workspace_;
  std::unique_ptr<kernels::cuda::LtCache> lt_cache_;
  std::unique_ptr<kernels::cuda::ConvDnn> dnn_;  // options().conv_cudnn
  std::unique_ptr<kernels::cuda::AttnDnn> attn_dnn_;  // options().attention_cudnn
  cuda::DeviceBuffer scratch_;
  cuda::DeviceBuffer side_scratch_;  // run_on's, so that the two streams never share one
  cuda::DeviceBuffer update_workspace_, side_update_workspace_;  // stream-K GEMM updates
  kernels::CudaExecContext ctx_, side_ctx_;
  std::mutex staging_mu_;  // one staged copy at a time: they share the buffers
  cuda::PinnedBuffer staging_[2];
  cuda::Event staged_[2];  // the last transfer of each buffer
};

std::unique_ptr<Backend> make_cuda_backend(int device, bool tf32 = false, const CudaBackendOptions& options = {});

}  // namespace tg
