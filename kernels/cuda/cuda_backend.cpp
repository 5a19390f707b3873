#include "kernels/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/communicator.h"
#include "kernels/gemm/gemm_mode.h"
#include "kernels/parallel_memcpy.h"

namespace tg {

namespace {

int checked_device(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (device < 0 || device >= count)
    throw std::invalid_argument(fmt::format("cuda backend: device {} does not exist; {}", device,
                                            count == 0 ? std::string("this machine has no CUDA device")
                                                       : fmt::format("valid ids are 0..{}", count - 1)));
  TG_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

const CudaBackendOptions& checked_options(const CudaBackendOptions& o) {
  if (o.conv_cudnn && !kBuiltWithCudnn)
    throw std::invalid_argument(
        "cuda backend: conv_cudnn=1 but this build has no cuDNN (cmake/Cudnn.cmake found none); pass conv_cudnn=0, "
        "or configure with TWOGRAPH_CUDNN_ROOT naming cuDNN's folder");
  if (o.attention_cudnn && !kBuiltWithCudnnFrontend)
    throw std::invalid_argument(
        "cuda backend: attention_cudnn=1 but this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none); "
        "pass attention_cudnn=0, or run scripts/fetch-cudnn-frontend.sh (or set TWOGRAPH_CUDNN_FRONTEND_ROOT) and "
        "configure again");
  if (o.conv_frontend && !(kBuiltWithCudnn && kBuiltWithCudnnFrontend))
    throw std::invalid_argument(
        "cuda backend: conv_frontend=1 but this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none); "
        "pass conv_frontend=0, or run scripts/fetch-cudnn-frontend.sh (or set TWOGRAPH_CUDNN_FRONTEND_ROOT) and "
        "configure again");
  return o;
}

std::string device_name(int device) {
  cudaDeviceProp p{};
  TG_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return fmt::format("cuda:{} ({})", device, p.name);
}

}  // namespace

CudaBackend::CudaBackend(int device, bool tf32, const CudaBackendOptions& options)
    : device_(checked_device(device)),
      tf32_(tf32),
      name_(device_name(device_)),
      stream_(cuda::Stream::create()),
      cublas_(cuda::CublasHandle::create()),
      lt_(cuda::CublasLtHandle::create()),
      workspace_(cuda::DeviceBuffer::allocate(kCublasWorkspaceBytes)),
      scratch_(cuda::DeviceBuffer::allocate(kScratchBytes)),
      side_scratch_(cuda::DeviceBuffer::allocate(kScratchBytes)) {
  TG_CUBLAS_CHECK(cublasSetStream(cublas_.get(), stream_.get()));
  TG_CUBLAS_CHECK(cublasSetWorkspace(cublas_.get(), workspace_.get(), workspace_.bytes()));
  TG_CUBLAS_CHECK(cublasSetMathMode(cublas_.get(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  ctx_.options = checked_options(options);
  ctx_.stream = stream_.get();
  ctx_.cublas = cublas_.get();
  ctx_.tf32 = tf32;
  ctx_.scratch = scratch_.as<float>();
  ctx_.scratch_bytes = scratch_.bytes();
  // The GEMMs may use as much workspace as cuBLAS has: the heuristic then picks the same
  // algorithms for a static plan (whose workspace is in its arena) and for dynamic.
  lt_cache_ = std::make_unique<kernels::cuda::LtCache>(lt_.get(), kCublasWorkspaceBytes, options.gemm_autotune);
  ctx_.lt = lt_cache_.get();
  ctx_.workspace = workspace_.get();
  ctx_.workspace_bytes = workspace_.bytes();
  // The convolutions' algorithms are held to one workspace limit in both executors, for the
  // same reason: one choice for both (conv_workspace_mb).
  if (options.conv_cudnn)
    dnn_ = std::make_unique<kernels::cuda::ConvDnn>(
        static_cast<size_t>(options.conv_workspace_mb) << 20,
        kernels::cuda::ConvDnnRule{options.conv_benchmark, options.conv_deterministic, options.conv_transforms,
                                   options.conv_frontend});
  ctx_.dnn = dnn_.get();
  if (options.attention_cudnn)
    attn_dnn_ = std::make_unique<kernels::cuda::AttnDnn>(options.attention_deterministic);
  ctx_.attn_dnn = attn_dnn_.get();
  side_ctx_ = ctx_;
  side_ctx_.scratch = side_scratch_.as<float>();
  side_ctx_.scratch_bytes = side_scratch_.bytes();
}

CudaBackend::~CudaBackend() {
  // Work still queued may use the workspace and the scratch: finish it first.
  if (stream_) TG_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_.get()));
}

std::vector<kernels::cuda::ConvDnnChoice> CudaBackend::conv_choices() const {
  return dnn_ ? dnn_->choices() : std::vector<kernels::cuda::ConvDnnChoice>{};
}

std::vector<kernels::cuda::AttnDnnChoice> CudaBackend::attention_choices() const {
  return attn_dnn_ ? attn_dnn_->choices() : std::vector<kernels::cuda::AttnDnnChoice>{};
}

void CudaBackend::run(const kernels::OpCall& call) {
  if (call.op == OpKind::all_reduce && communicator()) return kernels::run_all_reduce(call, *communicator(), ctx_.stream);
  kernels::run_cuda(call, ctx_);
}

void CudaBackend::run_on(const kernels::OpCall& call, cudaStream_t s) {
  if (call.op == OpKind::all_reduce && communicator()) return kernels::run_all_reduce(call, *communicator(), s);
  kernels::CudaExecContext ctx = side_ctx_;
  ctx.stream = s;
  kernels::run_cuda(call, ctx);
}

void* CudaBackend::raw_alloc(size_t bytes) {
  void* p = nullptr;
  // Zero bytes still gets a unique pointer, as on the CPU backend.
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
  if (e == cudaSuccess) return p;
  cudaGetLastError();
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
  constexpr double MiB = 1024.0 * 1024.0;
  throw CudaError(fmt::format("{}: cudaMalloc({} bytes = {:.1f} MiB) failed: {} ({}); the device has {:.1f} MiB free "
                              "of {:.1f} MiB; reduce the batch or model size, or use the caching allocator",
                              name_, bytes, static_cast<double>(bytes) / MiB, cudaGetErrorName(e),
                              cudaGetErrorString(e), static_cast<double>(free_b) / MiB,
                              static_cast<double>(total_b) / MiB));
}

void CudaBackend::raw_free(void* p) noexcept {
  if (p) TG_CUDA_CHECK_NOTHROW(cudaFree(p));
}

void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (ctx_.options.staged_copies && bytes >= ParallelMemcpy::kMinParallelBytes) return staged_copy(dst, src, bytes, true);
  TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
  TG_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (ctx_.options.staged_copies && bytes >= ParallelMemcpy::kMinParallelBytes) return staged_copy(dst, src, bytes, false);
  TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  TG_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudaBackend::staged_copy(void* dst, const void* src, size_t bytes, bool to_device) {
  std::lock_guard<std::mutex> lock(staging_mu_);
  if (!staging_[0]) {
    for (int b = 0; b < 2; ++b) {
      staging_[b] = cuda::PinnedBuffer::allocate(kStagingChunkBytes);
      staged_[b] = cuda::Event::create(cudaEventDisableTiming);
    }
  }
  const cudaStream_t s = stream_.get();
  const size_t chunks = (bytes + kStagingChunkBytes - 1) / kStagingChunkBytes;
  auto len = [&](size_t i) { return std::min(kStagingChunkBytes, bytes - i * kStagingChunkBytes); };
  auto host_at = [](const void* p, size_t i) { return static_cast<const char*>(p) + i * kStagingChunkBytes; };
  ParallelMemcpy& copier = shared_host_copier();
  if (to_device) {
    for (size_t i = 0; i < chunks; ++i) {
      const int b = static_cast<int>(i % 2);
      if (i >= 2) staged_[b].synchronize();  // chunk i-2's transfer has left this buffer
      copier.copy(staging_[b].get(), host_at(src, i), len(i), ParallelMemcpy::Stores::streaming);
      TG_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + i * kStagingChunkBytes, staging_[b].get(), len(i),
                                    cudaMemcpyHostToDevice, s));
      staged_[b].record(s);
    }
    TG_CUDA_CHECK(cudaStreamSynchronize(s));
    return;
  }
  auto transfer = [&](size_t i) {
    const int b = static_cast<int>(i % 2);
    TG_CUDA_CHECK(cudaMemcpyAsync(staging_[b].get(), host_at(src, i), len(i), cudaMemcpyDeviceToHost, s));
    staged_[b].record(s);
  };
  transfer(0);
  for (size_t i = 0; i < chunks; ++i) {
    const int b = static_cast<int>(i % 2);
    staged_[b].synchronize();
    // The other buffer's chunk (i-1) has left it on the host threads: the next transfer may fill it.
    if (i + 1 < chunks) transfer(i + 1);
    copier.copy(const_cast<char*>(host_at(dst, i)), staging_[b].get(), len(i), ParallelMemcpy::Stores::streaming);
  }
}

void CudaBackend::copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
}

void CudaBackend::synchronize() { TG_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

void CudaBackend::ensure_update_workspace() {
  if (update_workspace_ || !ctx_.options.gemm_update_streamk) return;
  // Enough for any shape, so that it is allocated once and never moves: captured CUDA Graphs
  // keep its address. Zeroed once: every launch leaves its flags zero again.
  const size_t bytes = kernels::cuda::matmul_sgd_momentum_streamk_workspace(1, 0, 0, 0);
  update_workspace_ = cuda::DeviceBuffer::allocate(bytes);
  side_update_workspace_ = cuda::DeviceBuffer::allocate(bytes);
  TG_CUDA_CHECK(cudaMemset(update_workspace_.get(), 0, bytes));
  TG_CUDA_CHECK(cudaMemset(side_update_workspace_.get(), 0, bytes));
  ctx_.update_workspace = update_workspace_.get();
  ctx_.update_workspace_bytes = bytes;
  side_ctx_.update_workspace = side_update_workspace_.get();
  side_ctx_.update_workspace_bytes = bytes;
}

Backend::Prepared CudaBackend::prepare(const kernels::OpCall& call) {
  if (call.op == OpKind::matmul_sgd_momentum) ensure_update_workspace();
  if (conv_window_from_weight(call.op)) {
    ConvGeometry g;
    Shape out;
    const Shape in[4] = {call.in[0].shape, call.in[1].shape, call.in[2].shape, call.in[3].shape};
    // A call whose shapes do not fit is left for run() to refuse, with its message.
    if (!dnn_ || !call.attrs || !conv_op_geometry(call.op, in, call.attrs->conv, g, out, nullptr)) return {};
    const kernels::cuda::ConvDnnPlan* p = dnn_->plan(call, g, tf32_, stream_.get(), true);
    return p ? Prepared{p, kernels::cuda::conv_dnn_workspace_bytes(*p)} : Prepared{};
  }
  if (op_in_family(call.op, "attention")) {
    const kernels::cuda::AttnDnnPlan* p = attn_dnn_ ? attn_dnn_->plan(call, stream_.get(), true) : nullptr;
    return p ? Prepared{p, kernels::cuda::attention_dnn_workspace_bytes(*p)} : Prepared{};
  }
  const kernels::cuda::LtGemm* g = kernels::prepare_cuda(call, ctx_);
  if (!g) return {};
  const size_t staging = call.op == OpKind::matmul_heads ? 0 : kernels::cuda::gemm_staging_bytes(call, ctx_);
  return Prepared{g, staging + g->workspace_bytes(), staging > 0};
}

bool CudaBackend::pads_unaligned_gemms() const {
  return ctx_.options.gemm_align_staging && !kernels::batch_invariant_matmul();
}

std::unique_ptr<Backend> make_cuda_backend(int device, bool tf32, const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(device, tf32, options);
}

}  // namespace tg
