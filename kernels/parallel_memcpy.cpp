#include "kernels/parallel_memcpy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace tg {

ParallelMemcpy::ParallelMemcpy(int threads) {
  if (threads < 1) throw std::invalid_argument(fmt::format("ParallelMemcpy: threads must be >= 1, got {}", threads));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ParallelMemcpy::~ParallelMemcpy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ParallelMemcpy::slice(int index, void* dst, const void* src, size_t bytes) const {
  // Slices are multiples of 4 KiB so that no two threads write the same page.
  const size_t n = static_cast<size_t>(threads());
  const size_t per = ((bytes + n - 1) / n + 4095) / 4096 * 4096;
  const size_t begin = per * static_cast<size_t>(index);
  if (begin >= bytes) return;
  const size_t len = std::min(per, bytes - begin);
  std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, len);
}

void ParallelMemcpy::copy(void* dst, const void* src, size_t bytes) {
  if (workers_.empty() || bytes < 256 * 1024) {  // below this the hand-off costs more than it saves
    std::memcpy(dst, src, bytes);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    dst_ = dst;
    src_ = src;
    bytes_ = bytes;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  slice(0, dst, src, bytes);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
}

void ParallelMemcpy::worker(int index) {
  unsigned long seen = 0;
  for (;;) {
    void* dst;
    const void* src;
    size_t bytes;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      dst = dst_;
      src = src_;
      bytes = bytes_;
    }
    slice(index, dst, src, bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_cv_.notify_one();
  }
}

ParallelMemcpy& shared_host_copier() {
  static ParallelMemcpy pool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u)));
  return pool;
}

}  // namespace tg
