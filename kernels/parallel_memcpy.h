#pragma once
// memcpy split over a few persistent threads. One core copies pageable memory at
// roughly 10-20 GB/s, below what a PCIe Gen5 x16 DMA drains (~55 GB/s), so a copy
// into pinned staging (tg-transfer's staged copy, the static executor's feeds)
// would be the bottleneck on one thread. Workers are started once: spawning
// threads per copy would cost tens of microseconds each time.
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace tg {

class ParallelMemcpy {
 public:
  explicit ParallelMemcpy(int threads);  // threads >= 1; 1 copies on the caller alone
  ~ParallelMemcpy();
  ParallelMemcpy(const ParallelMemcpy&) = delete;
  ParallelMemcpy& operator=(const ParallelMemcpy&) = delete;

  // Copies bytes from src to dst; returns when every slice is done. Callers on
  // several threads take turns: the workers serve one copy at a time.
  void copy(void* dst, const void* src, size_t bytes);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void worker(int index);
  void slice(int index, void* dst, const void* src, size_t bytes) const;

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one copy() at a time
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  void* dst_ = nullptr;
  const void* src_ = nullptr;
  size_t bytes_ = 0;
};

// The process-wide pool the static executor copies large feeds with: min(4,
// hardware threads) threads, started on first use. Four threads reach ~48 GB/s
// host to host on the H200's host (docs/results/transfer.txt), near the PCIe
// link's rate; more add threads without adding speed.
ParallelMemcpy& shared_host_copier();

}  // namespace tg
