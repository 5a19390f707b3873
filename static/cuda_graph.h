#pragma once
// Stream capture into a CUDA Graph, with failures reported by op. CUDA builds only.
#include <cuda_runtime_api.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/raii.h"

namespace tg {

// A capture that failed: names the op being captured and the CUDA error.
class CaptureError : public std::runtime_error {
 public:
  CaptureError(const std::string& what, int step) : std::runtime_error(what), step_(step) {}
  int step() const { return step_; }  // index of the op that broke the capture
 private:
  int step_;
};

// RAII: begins capture on construction; the destructor ends a capture still in
// progress and drops the partial graph, so an exception never leaves the stream
// capturing. ThreadLocal mode: an unsafe call from this thread (cudaMalloc, a
// synchronize, a pageable copy) fails and invalidates the capture, which is
// exactly what must not happen inside a replayed schedule; other threads'
// unrelated CUDA calls are left alone.
class CaptureGuard {
 public:
  explicit CaptureGuard(cudaStream_t stream, cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal);
  ~CaptureGuard();
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
  // Ends the capture and returns the graph; throws CudaError when the capture was invalidated.
  cuda::CudaGraph end();
  // Ends the capture, discards what was captured, returns the first error seen.
  cudaError_t abort() noexcept;
  // cudaStreamCaptureStatusActive while all is well.
  cudaStreamCaptureStatus status() const;

 private:
  cudaStream_t stream_;
  bool active_ = false;
};

// Captures issue(0) .. issue(count-1), each of which enqueues work on `stream`.
// When issue(i) throws or leaves the capture invalidated, the capture is ended
// and CaptureError says "capture failed at op <describe(i)>: <error>".
cuda::CudaGraph capture_steps(cudaStream_t stream, int count, const std::function<void(int)>& issue,
                              const std::function<std::string(int)>& describe);

// cudaGraphExecUpdate(exec, graph); on refusal (topology or node types
// changed) re-instantiates. Returns true when the cheap update was used.
bool update_or_instantiate(cuda::GraphExec& exec, const cuda::CudaGraph& graph);

}  // namespace tg
