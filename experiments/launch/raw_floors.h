#pragma once
// The raw CUDA floors under every executor number: an empty kernel launched
// eagerly, and the same kernel as the nodes of one CUDA Graph. CPU-only builds
// compile raw_floors_stub.cpp (have_cuda() false; the rest throws).
#include <cstdint>
#include <memory>

namespace tg::launch {

bool have_cuda();

// A private non-blocking stream and an empty <<<1,1>>> kernel (RAII).
class RawCuda {
 public:
  RawCuda();
  ~RawCuda();
  RawCuda(const RawCuda&) = delete;
  RawCuda& operator=(const RawCuda&) = delete;
  void launch_empty(int64_t n);  // n checked launches, back to back
  void sync();                   // cudaStreamSynchronize, checked
  void* stream() const { return stream_; }

 private:
  void* stream_ = nullptr;
};

// n empty-kernel nodes captured from `rc`'s stream and instantiated.
class EmptyGraph {
 public:
  EmptyGraph(RawCuda& rc, int64_t nodes);
  ~EmptyGraph();
  EmptyGraph(const EmptyGraph&) = delete;
  EmptyGraph& operator=(const EmptyGraph&) = delete;
  void launch();  // cudaGraphLaunch on rc's stream, checked; does not wait
  double capture_s = 0, instantiate_s = 0;

 private:
  RawCuda& rc_;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
};

}  // namespace tg::launch
