#pragma once
// What every probe of dev/cuda shares: the check macro, RAII for streams, events and
// cuBLAS / cuBLASLt handles, event timing, and pseudo-random operands on the device. A
// probe is a standalone program (README.md), not part of the library; this header keeps
// the probes from each writing these again. Host code only, so a .cpp probe includes it too.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace probe {

inline const char* status_text(cudaError_t e) { return cudaGetErrorString(e); }
// The number alone (cublas_api.h names it): cublasGetStatusString lives in libcublas, which
// the probes that use cuBLASLt alone do not link.
inline const char* status_text(cublasStatus_t) { return "cublasStatus_t"; }

[[noreturn]] inline void fail(const char* file, int line, const char* call, int code, const char* text) {
  std::printf("FAIL %s:%d %s = %d (%s)\n", file, line, call, code, text);
  std::exit(1);
}

}  // namespace probe

// Every CUDA runtime, cuBLAS and cuBLASLt call of a probe: a failure prints the file, the
// line, the call and its status, and ends the program (exit 1).
#define CK(x)                                                                                   \
  do {                                                                                          \
    const auto ck_status_ = (x);                                                                \
    if (static_cast<int>(ck_status_) != 0)                                                      \
      probe::fail(__FILE__, __LINE__, #x, static_cast<int>(ck_status_), probe::status_text(ck_status_)); \
  } while (0)

namespace probe {

// A stream, destroyed with its owner. Non-blocking by default: a probe's streams do not
// wait for the legacy default stream.
class Stream {
 public:
  explicit Stream(unsigned flags = cudaStreamNonBlocking) { CK(cudaStreamCreateWithFlags(&s_, flags)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_{};
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { CK(cudaEventCreateWithFlags(&e_, flags)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return e_; }

 private:
  cudaEvent_t e_{};
};

class BlasHandle {
 public:
  BlasHandle() { CK(cublasCreate(&h_)); }
  ~BlasHandle() { cublasDestroy(h_); }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  operator cublasHandle_t() const { return h_; }

 private:
  cublasHandle_t h_{};
};

class LtHandle {
 public:
  LtHandle() { CK(cublasLtCreate(&h_)); }
  ~LtHandle() { cublasLtDestroy(h_); }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  operator cublasLtHandle_t() const { return h_; }

 private:
  cublasLtHandle_t h_{};
};

// A workspace of `bytes` on the device, given to cuBLAS handle h with stream s (cuBLASLt
// calls take it per call).
inline void* blas_workspace(cublasHandle_t h, cudaStream_t s, size_t bytes) {
  void* ws;
  CK(cudaMalloc(&ws, bytes));
  CK(cublasSetStream(h, s));
  CK(cublasSetWorkspace(h, ws, bytes));
  return ws;
}

// Microseconds of body() on stream s between two events, for `calls` calls back to back.
template <typename Body>
float events_us(cudaStream_t s, int calls, Body&& body) {
  Event start, stop;
  CK(cudaEventRecord(start, s));
  for (int i = 0; i < calls; ++i) body();
  CK(cudaEventRecord(stop, s));
  CK(cudaEventSynchronize(stop));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, start, stop));
  return ms * 1000.0f;
}

// The mean microseconds per call of `iters` calls back to back, after `warmup` untimed ones.
template <typename Body>
float mean_us(cudaStream_t s, int warmup, int iters, Body&& body) {
  for (int i = 0; i < warmup; ++i) body();
  return events_us(s, iters, body) / static_cast<float>(iters);
}

// The median of `runs` single timed calls, after `warmup` untimed ones.
template <typename Body>
float median_us(cudaStream_t s, Body&& body, int warmup = 2, int runs = 9) {
  for (int i = 0; i < warmup; ++i) body();
  std::vector<float> t;
  for (int r = 0; r < runs; ++r) t.push_back(events_us(s, 1, body));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// n floats of a linear congruential sequence, uniform in [-scale / 2, scale / 2): the same
// operands in every probe and on every run.
inline std::vector<float> pseudo_random(long n, unsigned seed, float scale) {
  std::vector<float> h(static_cast<size_t>(n));
  unsigned s = seed;
  for (float& x : h) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
  }
  return h;
}

// A device copy of h (at least one float, so an empty h still gives a valid pointer).
// Probes keep their buffers to the end of the program.
inline float* upload(const std::vector<float>& h) {
  float* d;
  CK(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(float)));
  if (!h.empty()) CK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

inline float* clone(const float* src, long n) {
  float* d;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, src, n * sizeof(float), cudaMemcpyDeviceToDevice));
  return d;
}

inline std::vector<float> download(const float* src, long n) {
  std::vector<float> h(static_cast<size_t>(n));
  CK(cudaMemcpy(h.data(), src, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

// max |a - b| over n device floats.
inline double max_abs_diff(const float* a_dev, const float* b_dev, long n) {
  const std::vector<float> a = download(a_dev, n), b = download(b_dev, n);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

// max |a - b| / max |a| over n device floats.
inline double max_rel_diff(const float* a_dev, const float* b_dev, long n) {
  const std::vector<float> a = download(a_dev, n), b = download(b_dev, n);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

}  // namespace probe
