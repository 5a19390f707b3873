#pragma once
// A device the executors run on. The CPU backend (kernels/cpu) runs each op at
// once; the CUDA backend (kernels/cuda) enqueues it on its stream. Executors own
// allocation policy (dynamic/ allocators, static/ arenas) and call the raw
// allocation here only to get memory from the device.
#include <cstddef>
#include <memory>
#include <string>

#include "kernels/cuda_options.h"
#include "kernels/op_call.h"

namespace tg {

class Communicator;  // kernels/communicator.h

enum class DeviceKind { cpu, cuda };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // "cpu", "cuda:0 (NVIDIA H200)"
  // Runs (CPU) or enqueues (CUDA) one op.
  virtual void run(const kernels::OpCall& call) = 0;
  // Raw device memory, 256-byte aligned. Throws on failure with a message that
  // states the request and the device's free and total memory.
  virtual void* raw_alloc(size_t bytes) = 0;
  virtual void raw_free(void* p) noexcept = 0;
  // Blocking copies between host memory and this device's memory.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  // Device to device, ordered with run().
  virtual void copy_on_device(void* dst, const void* src, size_t bytes) = 0;
  // Waits until everything enqueued has finished.
  virtual void synchronize() = 0;

  // What the backend settles for a call before it runs (the CUDA backend: the cuBLASLt
  // algorithm of a GEMM, and the workspace it needs). The static executor asks once per
  // call when it builds its schedule and passes the answer in OpCall::prepared; the
  // dynamic executor never asks and gets the same answer at run time. Only the call's
  // op, attributes and shapes are read.
  struct Prepared {
    const void* state = nullptr;
    size_t workspace_bytes = 0;
    // The workspace is large and this call's alone (a GEMM's aligned copies of its operands):
    // the static plan gives it a region live while the call runs, as a convolution's, not
    // room in the region all calls share for the whole step.
    bool own_workspace = false;
  };
  virtual Prepared prepare(const kernels::OpCall& call) {
    (void)call;
    return {};
  }

  // Whether the backend has a kernel for `op` on tensors of dtype `dt` (kernels::call_dtype:
  // the dtype of the op's first input, or of its output when it has none). The CPU backend
  // runs every op in every dtype. The executors ask for each node before they run any.
  virtual bool runs(OpKind op, DType dt) const {
    (void)op;
    (void)dt;
    return true;
  }

  // Whether the backend computes a GEMM whose extents are not whole 16-byte steps at padded
  // extents (kernels/gemm/gemm_staging.h: the CUDA backend's gemm_align_staging). The static
  // compiler's vocab_pad pass pads such a product in the graph only then, so that both
  // executors run the same padded product.
  virtual bool pads_unaligned_gemms() const { return false; }

  // The group this backend's all_reduce calls reduce over (data parallelism,
  // kernels/communicator.h); without one the backend is a group of one. Join before
  // compiling or stepping: a captured CUDA graph keeps the communicator it captured.
  // Throws std::invalid_argument for a communicator of the other memory (host vs GPU).
  void set_communicator(std::shared_ptr<Communicator> c);
  Communicator* communicator() const { return comm_.get(); }
  // The communicator's rank count; 1 without one.
  int world_size() const;

 private:
  std::shared_ptr<Communicator> comm_;
};

// Refuses (GraphError, exit 2 in the tools) a node whose op `be` has no kernel for in dtype
// `dt` (Backend::runs), naming `executor`, the node and what to do instead. Both executors
// call it for every node before they run any.
void require_kernel(const Backend& be, const char* executor, const std::string& node, OpKind op, DType dt);

std::unique_ptr<Backend> make_cpu_backend();

// The backend of a resolved device (kernels/device_info.h): a CUDA ordinal, or -1
// for the CPU backend. A GPU ordinal in a build without CUDA is a logic error: the
// harness refuses it first. `cuda`: a CUDA backend's kernel choices (ignored for the
// CPU). (kernels/make_backend.cpp)
std::shared_ptr<Backend> make_backend(int device, const CudaBackendOptions& cuda = {}, bool tf32 = false);
// The stream a backend enqueues on, for CUDA event timing; nullptr on the CPU.
void* backend_stream(Backend& b);

}  // namespace tg
