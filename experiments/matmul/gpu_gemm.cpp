#include "experiments/matmul/gpu_gemm.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "experiments/harness/gpu_timing.h"
#include "graph/float_formats.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::matmul {

namespace {

// What the backend gives its cuBLASLt GEMMs, so that the heuristic picks the algorithms the
// executors run.
constexpr size_t kLtWorkspaceBytes = CudaBackend::kCublasWorkspaceBytes;

size_t matrix_bytes(int64_t n, GemmType p) {
  return static_cast<size_t>(n * n) * static_cast<size_t>(dtype_size(p.dtype));
}

}  // namespace

GpuGemm::GpuGemm(int64_t max_n, bool tune) : max_n_(max_n) {
  const size_t bytes = matrix_bytes(max_n, GemmType{});  // the widest dtype
  stream_ = cuda::Stream::create();
  cublas_ = cuda::CublasHandle::create();
  lt_handle_ = cuda::CublasLtHandle::create();
  lt_ = std::make_unique<kernels::cuda::LtCache>(lt_handle_.get(), kLtWorkspaceBytes, tune);
  da_ = cuda::DeviceBuffer::allocate(bytes);
  db_ = cuda::DeviceBuffer::allocate(bytes);
  dc_ = cuda::DeviceBuffer::allocate(bytes);
  lt_workspace_ = cuda::DeviceBuffer::allocate(kLtWorkspaceBytes);
  ha_ = cuda::PinnedBuffer::allocate(bytes);
  hb_ = cuda::PinnedBuffer::allocate(bytes);
  hc_ = cuda::PinnedBuffer::allocate(bytes);
}

void GpuGemm::load_host(const float* a, const float* b, int64_t n, GemmType p) {
  if (n > max_n_) throw std::invalid_argument(fmt::format("GpuGemm: n = {} exceeds the allocated {}", n, max_n_));
  const size_t count = static_cast<size_t>(n * n);
  store_as_dtype(a, count, p.dtype, ha_.get());
  store_as_dtype(b, count, p.dtype, hb_.get());
}

std::vector<float> GpuGemm::host_result(int64_t n, GemmType p) const {
  std::vector<float> c(static_cast<size_t>(n * n));
  load_from_dtype(hc_.get(), c.size(), p.dtype, c.data());
  return c;
}

void GpuGemm::enqueue_product(int64_t n, GemmType p) {
  if (n > max_n_) throw std::invalid_argument(fmt::format("GpuGemm: n = {} exceeds the allocated {}", n, max_n_));
  const DType dt = p.dtype;
  if (dt == DType::F32) {
    // n = 0 is an empty product: nothing to read, nothing to write. The leading
    // dimensions stay >= 1 because BLAS requires lda >= max(1, k) even then.
    const int64_t ld = n > 0 ? n : 1;
    kernels::cuda::sgemm(cublas_.get(), stream_.get(), p.tf32, false, false, n, n, n, da_.as<float>(),
                         ld, db_.as<float>(), ld, dc_.as<float>(), ld);
    return;
  }
  if (n == 0) return;  // cuBLASLt takes no empty matrix; the empty product is a no-op
  kernels::cuda::LtKey key;
  key.m = key.n = key.k = key.lda = key.ldb = key.ldd = n;
  key.dtype = dt;
  const kernels::cuda::LtGemm& g = lt_->get(key, stream_.get());
  g.run(lt_->handle(), da_.get(), db_.get(), nullptr, dc_.get(), nullptr, lt_workspace_.get(), lt_workspace_.bytes(),
        stream_.get());
}

void GpuGemm::run_with_transfers(int64_t n, GemmType p) {
  const size_t bytes = matrix_bytes(n, p);
  cudaStream_t s = stream_.get();
  if (bytes) {
    TG_CUDA_CHECK(cudaMemcpyAsync(da_.get(), ha_.get(), bytes, cudaMemcpyHostToDevice, s));
    TG_CUDA_CHECK(cudaMemcpyAsync(db_.get(), hb_.get(), bytes, cudaMemcpyHostToDevice, s));
  }
  enqueue_product(n, p);
  if (bytes) TG_CUDA_CHECK(cudaMemcpyAsync(hc_.get(), dc_.get(), bytes, cudaMemcpyDeviceToHost, s));
  stream_.synchronize();
}

void GpuGemm::poison_c(int64_t n) {
  // All-ones bytes are a NaN in f32, bf16 and f16 alike.
  const size_t bytes = matrix_bytes(n, GemmType{});
  if (bytes) TG_CUDA_CHECK(cudaMemsetAsync(dc_.get(), 0xFF, bytes, stream_.get()));
  stream_.synchronize();
  if (bytes) std::memset(hc_.get(), 0xFF, bytes);
}

std::vector<double> GpuGemm::time_compute(const harness::LoopOptions& opt, int64_t n, GemmType p) {
  return harness::time_gpu(opt, [&](void*) { enqueue_product(n, p); }, stream_.get());
}

std::vector<double> GpuGemm::time_with_transfers(const harness::LoopOptions& opt, int64_t n, GemmType p) {
  return harness::time_host(opt, [&] { run_with_transfers(n, p); }, [&] { stream_.synchronize(); });
}

}  // namespace tg::matmul
