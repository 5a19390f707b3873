#pragma once
// A backend that records every device allocation: the real one (CPU or CUDA)
// with raw_alloc / raw_free observed, so that tg-memory can name the bytes a
// static plan really took from the device (its arena, input buffers, parameter
// store) instead of trusting the plan's own numbers. On CUDA it is a CudaBackend
// (the static executor's CUDA runner and the pool allocator need one), on the
// CPU a decorator of the CPU backend. cuBLAS's workspace and the kernels'
// scratch are allocated by CudaBackend's constructor directly and are not seen.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "kernels/backend.h"

namespace tg::memory {

// Live device allocations by base pointer: bytes requested from the device.
// Single-threaded, as the executors are.
class AllocationLog {
 public:
  void on_alloc(const void* p, size_t bytes) { live_[p] = bytes; }
  void on_free(const void* p) noexcept { live_.erase(p); }
  const std::map<const void*, size_t>& live() const { return live_; }

 private:
  std::map<const void*, size_t> live_;
};

// device: the CUDA ordinal, or -1 for the CPU backend; cuda: a CUDA backend's kernel
// choices. Throws std::logic_error for a GPU in a build without CUDA.
std::shared_ptr<Backend> make_recording_backend(int device, std::shared_ptr<AllocationLog> log,
                                                const CudaBackendOptions& cuda = {});

}  // namespace tg::memory
