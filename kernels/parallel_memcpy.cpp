#include "kernels/parallel_memcpy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define TG_HAVE_SSE2_STREAM 1
#endif

namespace tg {

void copy_streaming(void* dst, const void* src, size_t bytes) {
#ifdef TG_HAVE_SSE2_STREAM
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Streaming stores need 16-byte aligned targets; whole 64-byte lines avoid partial-line writes.
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
  // Non-temporal stores are weakly ordered: fence them before anyone is told the copy is done.
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

ParallelMemcpy::ParallelMemcpy(int threads, size_t min_parallel_bytes) : min_parallel_bytes_(min_parallel_bytes) {
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
    if (lo < hi) {
      char* d = static_cast<char*>(j.dst) + (lo - at);
      const char* s = static_cast<const char*>(j.src) + (lo - at);
      if (stores_ == Stores::streaming) copy_streaming(d, s, hi - lo);
      else std::memcpy(d, s, hi - lo);
    }
    at += j.bytes;
    if (at >= end) break;
  }
}

void ParallelMemcpy::copy_all(const std::vector<Job>& jobs, Stores stores) {
  size_t total = 0;
  for (const Job& j : jobs) total += j.bytes;
  if (total < min_parallel_bytes_) {
    for (const Job& j : jobs)
      if (j.bytes) std::memcpy(j.dst, j.src, j.bytes);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  // With no workers this is slice(0) over everything: pending_ is 0 at once.
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = &jobs;
    total_ = total;
    stores_ = stores;
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
