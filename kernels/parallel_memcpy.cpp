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

void ParallelMemcpy::slice(int index) const {
  // Thread `index` copies bytes [begin, end) of the jobs laid end to end. Shares
  // are multiples of 4 KiB, so that neighbouring threads rarely write one page.
  const size_t n = static_cast<size_t>(threads());
  const size_t per = ((total_ + n - 1) / n + 4095) / 4096 * 4096;
  const size_t begin = per * static_cast<size_t>(index);
  const size_t end = std::min(total_, begin + per);
  size_t at = 0;  // where the current job starts in the laid-out bytes
  for (const Job& j : *jobs_) {
    const size_t lo = std::max(begin, at), hi = std::min(end, at + j.bytes);
    if (lo < hi) std::memcpy(static_cast<char*>(j.dst) + (lo - at), static_cast<const char*>(j.src) + (lo - at), hi - lo);
    at += j.bytes;
    if (at >= end) break;
  }
}

void ParallelMemcpy::copy_all(const std::vector<Job>& jobs) {
  size_t total = 0;
  for (const Job& j : jobs) total += j.bytes;
  if (workers_.empty() || total < kMinParallelBytes) {
    for (const Job& j : jobs)
      if (j.bytes) std::memcpy(j.dst, j.src, j.bytes);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = &jobs;
    total_ = total;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  slice(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  jobs_ = nullptr;
}

void ParallelMemcpy::worker(int index) {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    // jobs_ and total_ stay fixed until every worker has counted itself done.
    slice(index);
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
