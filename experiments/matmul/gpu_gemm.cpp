#include "experiments/matmul/gpu_gemm.h"

#include <fmt/format.h>

#include <stdexcept>

#include "experiments/harness/gpu_timing.h"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::matmul {

GpuGemm::GpuGemm(int64_t max_n) : max_n_(max_n) {
  const size_t bytes = static_cast<size_t>(max_n) * static_cast<size_t>(max_n) * sizeof(float);
  stream_ = cuda::Stream::create();
  cublas_ = cuda::CublasHandle::create();
  da_ = cuda::DeviceBuffer::allocate(bytes);
  db_ = cuda::DeviceBuffer::allocate(bytes);
  dc_ = cuda::DeviceBuffer::allocate(bytes);
  ha_ = cuda::PinnedBuffer::allocate(bytes);
  hb_ = cuda::PinnedBuffer::allocate(bytes);
  hc_ = cuda::PinnedBuffer::allocate(bytes);
}

void GpuGemm::enqueue_product(int64_t n, bool tf32) {
  if (n > max_n_) throw std::invalid_argument(fmt::format("GpuGemm: n = {} exceeds the allocated {}", n, max_n_));
  // n = 0 is an empty product: nothing to read, nothing to write. The leading
  // dimensions stay >= 1 because BLAS requires lda >= max(1, k) even then.
  const int64_t ld = n > 0 ? n : 1;
  kernels::cuda::sgemm(cublas_.get(), stream_.get(), tf32, false, false, n, n, n, da_.as<float>(), ld,
                       db_.as<float>(), ld, dc_.as<float>(), ld);
}

void GpuGemm::run_with_transfers(int64_t n, bool tf32) {
  const size_t bytes = static_cast<size_t>(n * n) * sizeof(float);
  cudaStream_t s = stream_.get();
  if (bytes) {
    TG_CUDA_CHECK(cudaMemcpyAsync(da_.get(), ha_.get(), bytes, cudaMemcpyHostToDevice, s));
    TG_CUDA_CHECK(cudaMemcpyAsync(db_.get(), hb_.get(), bytes, cudaMemcpyHostToDevice, s));
  }
  enqueue_product(n, tf32);
  if (bytes) TG_CUDA_CHECK(cudaMemcpyAsync(hc_.get(), dc_.get(), bytes, cudaMemcpyDeviceToHost, s));
  stream_.synchronize();
}

void GpuGemm::poison_device_c(int64_t n) {
  const size_t bytes = static_cast<size_t>(n * n) * sizeof(float);
  if (bytes) TG_CUDA_CHECK(cudaMemsetAsync(dc_.get(), 0xFF, bytes, stream_.get()));  // 0xFFFFFFFF is a NaN
  stream_.synchronize();
}

std::vector<double> GpuGemm::time_compute(const harness::LoopOptions& opt, int64_t n, bool tf32) {
  return harness::time_gpu(opt, [&](void*) { enqueue_product(n, tf32); }, stream_.get());
}

std::vector<double> GpuGemm::time_with_transfers(const harness::LoopOptions& opt, int64_t n, bool tf32) {
  return harness::time_host(opt, [&] { run_with_transfers(n, tf32); }, [&] { stream_.synchronize(); });
}

}  // namespace tg::matmul
