#pragma once
// The raw CUDA floors under every executor number, written with nothing but the
// runtime API: a kernel launched eagerly, and the same kernel as the nodes of one
// CUDA Graph. Two kernels, because they measure different things:
//   empty: <<<1,1>>> that does nothing. Eager, it measures the host's enqueue rate.
//   touch: <<<1,64>>> that reads and writes 64 floats the previous launch wrote, like a
//          chain op. The GPU must finish one before the next starts, so it measures the
//          GPU's launch-to-launch latency, which is what a chain of tiny ops really pays.
// Either can be launched with programmatic dependent launch (PDL, Hopper and newer): the
// next kernel is scheduled while the previous one runs and waits in griddepcontrol.wait
// for its results, which hides the launch latency behind the previous kernel.
// CPU-only builds compile raw_floors_stub.cpp (have_cuda() false; the rest throws).
#include <cstdint>
#include <vector>

#include "experiments/harness/cold_start.h"

namespace tg::launch {

bool have_cuda();

enum class RawKernel { empty, touch };
const char* raw_kernel_name(RawKernel k);

// A private non-blocking stream, the 64-float buffer `touch` works on, and whether the
// device supports PDL (compute capability >= 9.0). RAII.
class RawCuda {
 public:
  RawCuda();
  ~RawCuda();
  RawCuda(const RawCuda&) = delete;
  RawCuda& operator=(const RawCuda&) = delete;
  void launch(int64_t n, RawKernel k, bool pdl);  // n checked launches, back to back
  void sync();                                    // cudaStreamSynchronize, checked
  bool pdl_supported() const { return pdl_supported_; }
  void* stream() const { return stream_; }

 private:
  void* stream_ = nullptr;
  float* buffer_ = nullptr;
  bool pdl_supported_ = false;
};

// n launches of one kernel captured from `rc`'s stream and instantiated.
class RawGraph {
 public:
  RawGraph(RawCuda& rc, int64_t nodes, RawKernel k, bool pdl);
  ~RawGraph();
  RawGraph(const RawGraph&) = delete;
  RawGraph& operator=(const RawGraph&) = delete;
  void launch();  // cudaGraphLaunch on rc's stream, checked; does not wait
  double capture_s = 0, instantiate_s = 0;

 private:
  RawCuda& rc_;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
};

#ifdef TWOGRAPH_HAVE_CUDA
// The steps of tg-launch's cold-start child (experiments/harness/cold_start.h): the
// runtime and the context, then the first and second launch of the empty kernel, each
// followed by a synchronize. With CUDA's lazy module loading (the default since 12.2)
// the first launch of a kernel also loads its module.
std::vector<harness::ColdStep> cold_start_steps(int device);
#endif

}  // namespace tg::launch
