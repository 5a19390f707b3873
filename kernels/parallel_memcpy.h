#pragma once
// memcpy split over a few persistent threads. One core copies pageable memory at
// roughly 6-20 GB/s, below what a PCIe Gen5 x16 DMA drains (~55 GB/s), so a copy
// into pinned staging (tg-transfer's staged copy, the static executor's feeds)
// would be the bottleneck on one thread. Workers are started once: spawning
// threads per copy would cost tens of microseconds each time.
//
// Waking the workers is not free either: a hand-off costs tens of microseconds,
// more than one thread takes to copy a small feed, so
// a batch below the pool's min_parallel_bytes (kMinParallelBytes unless the
// constructor is told otherwise) is copied on the caller, and several copies are
// handed off together (copy_all: one wake-up per batch, not per buffer).
//
// Stores::streaming writes with non-temporal stores: the bytes go to memory
// instead of into this core's cache. For a buffer the GPU reads next by DMA
// (pinned staging) the cached copy leaves dirty lines the DMA must snoop, and
// writing a line into the cache first reads it; whether streaming pays is
// measured by tg-train's feed rows (docs/train.md).
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace tg {

class ParallelMemcpy {
 public:
  struct Job {
    void* dst;
    const void* src;
    size_t bytes;
  };
  enum class Stores { cached, streaming };
  static constexpr size_t kMinParallelBytes = size_t{1} << 20;

  // threads >= 1; 1 copies on the caller alone. Batches of fewer than
  // min_parallel_bytes are copied on the caller whatever the thread count.
  explicit ParallelMemcpy(int threads, size_t min_parallel_bytes = kMinParallelBytes);
  ~ParallelMemcpy();
  ParallelMemcpy(const ParallelMemcpy&) = delete;
  ParallelMemcpy& operator=(const ParallelMemcpy&) = delete;

  // Copies bytes from src to dst; returns when every slice is done. Callers on
  // several threads take turns: the workers serve one batch at a time.
  void copy(void* dst, const void* src, size_t bytes, Stores stores = Stores::cached) {
    copy_all({Job{dst, src, bytes}}, stores);
  }
  // Every job, split by bytes over the threads as if the jobs were one buffer.
  // The jobs must not overlap each other. Below min_parallel_bytes in all, the
  // caller copies with memcpy whatever `stores` says.
  void copy_all(const std::vector<Job>& jobs, Stores stores = Stores::cached);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void worker(int index);
  void slice(int index) const;  // this thread's share of jobs_

  std::vector<std::thread> workers_;
  size_t min_parallel_bytes_;
  std::mutex call_mu_;  // one copy_all() at a time
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  const std::vector<Job>* jobs_ = nullptr;
  size_t total_ = 0;
  Stores stores_ = Stores::cached;
};

// The process-wide pool the static executor copies large feeds with: min(4,
// hardware threads) threads, started on first use. Four threads copy host to host
// near the PCIe link's rate (docs/results/transfer.txt); more add threads without
// adding speed.
ParallelMemcpy& shared_host_copier();

// memcpy with non-temporal stores where the CPU has them (x86-64: SSE2), else
// memcpy; the stores are fenced before it returns.
void copy_streaming(void* dst, const void* src, size_t bytes);

}  // namespace tg
