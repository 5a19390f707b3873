#include "experiments/memory/recording_backend.h"

#include <stdexcept>
#include <utility>

#ifdef TWOGRAPH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace tg::memory {

namespace {

// The CPU backend is not a public class: wrap it and forward everything.
class RecordingCpuBackend final : public Backend {
 public:
  explicit RecordingCpuBackend(std::shared_ptr<AllocationLog> log) : inner_(make_cpu_backend()), log_(std::move(log)) {}
  DeviceKind kind() const override { return inner_->kind(); }
  std::string name() const override { return inner_->name(); }
  void run(const kernels::OpCall& call) override { inner_->run(call); }
  void* raw_alloc(size_t bytes) override {
    void* p = inner_->raw_alloc(bytes);
    try {
      log_->on_alloc(p, bytes);
    } catch (...) {
      inner_->raw_free(p);
      throw;
    }
    return p;
  }
  void raw_free(void* p) noexcept override {
    log_->on_free(p);
    inner_->raw_free(p);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override { inner_->copy_to_device(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { inner_->copy_to_host(dst, src, bytes); }
  void copy_on_device(void* dst, const void* src, size_t bytes) override { inner_->copy_on_device(dst, src, bytes); }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::shared_ptr<AllocationLog> log_;
};

#ifdef TWOGRAPH_HAVE_CUDA
class RecordingCudaBackend final : public CudaBackend {
 public:
  RecordingCudaBackend(int device, std::shared_ptr<AllocationLog> log, const CudaBackendOptions& cuda)
      : CudaBackend(device, false, cuda), log_(std::move(log)) {}
  void* raw_alloc(size_t bytes) override {
    void* p = CudaBackend::raw_alloc(bytes);
    try {
      log_->on_alloc(p, bytes);
    } catch (...) {
      CudaBackend::raw_free(p);
      throw;
    }
    return p;
  }
  void raw_free(void* p) noexcept override {
    log_->on_free(p);
    CudaBackend::raw_free(p);
  }

 private:
  std::shared_ptr<AllocationLog> log_;
};
#endif

}  // namespace

std::shared_ptr<Backend> make_recording_backend(int device, std::shared_ptr<AllocationLog> log,
                                                const CudaBackendOptions& cuda) {
  if (!log) throw std::invalid_argument("make_recording_backend: the allocation log is null");
#ifdef TWOGRAPH_HAVE_CUDA
  if (device >= 0) return std::make_shared<RecordingCudaBackend>(device, std::move(log), cuda);
#endif
  if (device >= 0) throw std::logic_error("a GPU was selected but this build has no CUDA backend");
  return std::make_shared<RecordingCpuBackend>(std::move(log));
}

}  // namespace tg::memory
