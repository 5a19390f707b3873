#pragma once
// memcpy split over a few persistent threads. One core copies pageable memory at
// roughly 10-20 GB/s, below what a PCIe Gen5 x16 DMA drains (~55 GB/s), so the
// staged copy's host half would be the bottleneck on one thread. Workers are
// started once: spawning threads per chunk would cost tens of microseconds per copy.
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace tg::transfer {

class ParallelMemcpy {
 public:
  explicit ParallelMemcpy(int threads);  // threads >= 1; 1 copies on the caller alone
  ~ParallelMemcpy();
  ParallelMemcpy(const ParallelMemcpy&) = delete;
  ParallelMemcpy& operator=(const ParallelMemcpy&) = delete;

  // Copies bytes from src to dst; returns when every slice is done.
  void copy(void* dst, const void* src, size_t bytes);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void worker(int index);
  void slice(int index, void* dst, const void* src, size_t bytes) const;

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  void* dst_ = nullptr;
  const void* src_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tg::transfer
