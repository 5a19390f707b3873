#pragma once
// Move-only owners of CUDA resources. A moved-from object holds nothing and its
// destructor does nothing; destructors never throw (errors are logged).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/check.h"

namespace tg::cuda {

// The common shape: one handle, a deleter, moves that leave a null handle behind.
template <typename H, void (*Destroy)(H) noexcept>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(H h) : h_(h) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, H{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, H{});
    }
    return *this;
  }
  ~UniqueHandle() { reset(); }
  H get() const { return h_; }
  explicit operator bool() const { return h_ != H{}; }
  void reset() noexcept {
    if (h_ != H{}) Destroy(std::exchange(h_, H{}));
  }

 private:
  H h_{};
};

namespace detail {
inline void destroy_stream(cudaStream_t s) noexcept { TG_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s)); }
inline void destroy_event(cudaEvent_t e) noexcept { TG_CUDA_CHECK_NOTHROW(cudaEventDestroy(e)); }
inline void destroy_graph(cudaGraph_t g) noexcept { TG_CUDA_CHECK_NOTHROW(cudaGraphDestroy(g)); }
inline void destroy_exec(cudaGraphExec_t g) noexcept { TG_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(g)); }
inline void destroy_cublas(cublasHandle_t h) noexcept { TG_CUBLAS_CHECK_NOTHROW(cublasDestroy(h)); }
inline void destroy_cublaslt(cublasLtHandle_t h) noexcept { TG_CUBLAS_CHECK_NOTHROW(cublasLtDestroy(h)); }
inline void free_device(void* p) noexcept { TG_CUDA_CHECK_NOTHROW(cudaFree(p)); }
inline void free_pinned(void* p) noexcept { TG_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }
}  // namespace detail

// A non-blocking stream: it does not synchronize with the legacy default stream.
class Stream : public UniqueHandle<cudaStream_t, detail::destroy_stream> {
 public:
  Stream() = default;
  static Stream create(unsigned flags = cudaStreamNonBlocking) {
    cudaStream_t s = nullptr;
    TG_CUDA_CHECK(cudaStreamCreateWithFlags(&s, flags));
    return Stream(s);
  }
  void synchronize() const { TG_CUDA_CHECK(cudaStreamSynchronize(get())); }

 private:
  explicit Stream(cudaStream_t s) : UniqueHandle(s) {}
};

class Event : public UniqueHandle<cudaEvent_t, detail::destroy_event> {
 public:
  Event() = default;
  static Event create(unsigned flags = cudaEventDefault) {
    cudaEvent_t e = nullptr;
    TG_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return Event(e);
  }
  void record(cudaStream_t s) const { TG_CUDA_CHECK(cudaEventRecord(get(), s)); }
  void synchronize() const { TG_CUDA_CHECK(cudaEventSynchronize(get())); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    TG_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), get()));
    return ms;
  }

 private:
  explicit Event(cudaEvent_t e) : UniqueHandle(e) {}
};

class CudaGraph : public UniqueHandle<cudaGraph_t, detail::destroy_graph> {
 public:
  CudaGraph() = default;
  explicit CudaGraph(cudaGraph_t g) : UniqueHandle(g) {}  // takes ownership (e.g. from cudaStreamEndCapture)
};

class GraphExec : public UniqueHandle<cudaGraphExec_t, detail::destroy_exec> {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t g) : UniqueHandle(g) {}
  static GraphExec instantiate(const CudaGraph& g) {
    cudaGraphExec_t e = nullptr;
    TG_CUDA_CHECK(cudaGraphInstantiate(&e, g.get(), 0));
    return GraphExec(e);
  }
  void launch(cudaStream_t s) const { TG_CUDA_CHECK(cudaGraphLaunch(get(), s)); }
};

class CublasHandle : public UniqueHandle<cublasHandle_t, detail::destroy_cublas> {
 public:
  CublasHandle() = default;
  static CublasHandle create() {
    cublasHandle_t h = nullptr;
    TG_CUBLAS_CHECK(cublasCreate(&h));
    return CublasHandle(h);
  }

 private:
  explicit CublasHandle(cublasHandle_t h) : UniqueHandle(h) {}
};

class CublasLtHandle : public UniqueHandle<cublasLtHandle_t, detail::destroy_cublaslt> {
 public:
  CublasLtHandle() = default;
  static CublasLtHandle create() {
    cublasLtHandle_t h = nullptr;
    TG_CUBLAS_CHECK(cublasLtCreate(&h));
    return CublasLtHandle(h);
  }

 private:
  explicit CublasLtHandle(cublasLtHandle_t h) : UniqueHandle(h) {}
};

// Bytes of device or pinned host memory.
template <void (*Free)(void*) noexcept>
class Buffer {
 public:
  Buffer() = default;
  Buffer(void* p, size_t bytes) : p_(p), bytes_(bytes) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~Buffer() { reset(); }
  void reset() noexcept {
    if (p_) Free(std::exchange(p_, nullptr));
    bytes_ = 0;
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class DeviceBuffer : public Buffer<detail::free_device> {
 public:
  using Buffer::Buffer;
  static DeviceBuffer allocate(size_t bytes) {
    void* p = nullptr;
    if (bytes) TG_CUDA_CHECK(cudaMalloc(&p, bytes));
    return DeviceBuffer(p, bytes);
  }
};

class PinnedBuffer : public Buffer<detail::free_pinned> {
 public:
  using Buffer::Buffer;
  static PinnedBuffer allocate(size_t bytes) {
    void* p = nullptr;
    if (bytes) TG_CUDA_CHECK(cudaMallocHost(&p, bytes));
    return PinnedBuffer(p, bytes);
  }
};

}  // namespace tg::cuda
