#include "experiments/transfer/host_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "experiments/transfer/buffers.h"
#include "kernels/parallel_memcpy.h"

namespace tg::transfer {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

void measure_host_memcpy(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                         std::vector<int> thread_counts) {
  std::sort(thread_counts.begin(), thread_counts.end());
  thread_counts.erase(std::unique(thread_counts.begin(), thread_counts.end()), thread_counts.end());
  for (int threads : thread_counts) {
    ParallelMemcpy pm(threads, kCopyThreadsMinBytes);
    for (size_t bytes : sizes) {
      // Preparing a large pair of buffers takes seconds; the loops below poll only while timing.
      harness::throw_if_interrupted();
      HostBuffer src(bytes), dst(bytes);
      src.touch();  // first-touch page faults must not be timed
      dst.touch();
      fill_pattern(src.data(), bytes, bytes);
      poison(dst.data(), bytes);
      pm.copy(dst.data(), src.data(), bytes);
      verify_pattern(dst.data(), bytes, bytes, fmt::format("host memcpy on {} threads", threads));
      // A 1 KiB memcpy takes tens of nanoseconds, about a clock read: batch small copies
      // (each sample then covers >= ~256 KiB copied; the data stays cache-hot, as it would).
      harness::LoopOptions o = opt;
      o.batch = static_cast<int64_t>(std::clamp<size_t>(256 * KiB / bytes, 1, 1000));
      auto samples = harness::time_host(o, [&] { pm.copy(dst.data(), src.data(), bytes); });
      auto& m = r.add_time("copy", {{"size_bytes", bytes}, {"direction", "h2h"}, {"memory", "pageable"},
                                    {"mode", "memcpy"}, {"copy_threads", threads}},
                           std::move(samples));
      m.extra["GB/s"] = static_cast<double>(bytes) / m.stats.median / 1e9;
    }
  }
}

void measure_host_alloc(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes) {
  for (size_t bytes : sizes) {
    // One loop, three clocks per sample: malloc, touch every page, free. The loop's
    // minimum time counts only the malloc (microseconds), while a sample really costs
    // the touch too (a second at 512 MiB): above 1 MiB, stop at the minimum count.
    harness::LoopOptions o = opt;
    if (bytes > MiB) o.max_reps = o.min_reps;
    std::vector<double> touch_s, free_s;
    auto malloc_s = harness::run_loop(o, [&] {
      auto t0 = Clock::now();
      void* p = std::malloc(bytes);
      const double a = since(t0);
      if (!p) throw std::bad_alloc();
      t0 = Clock::now();
      auto* b = static_cast<volatile unsigned char*>(p);
      for (size_t i = 0; i < bytes; i += 4096) b[i] = 1;
      touch_s.push_back(since(t0));
      t0 = Clock::now();
      std::free(p);
      free_s.push_back(since(t0));
      return a;
    });
    const size_t n = malloc_s.size();
    keep_last(touch_s, n);
    keep_last(free_s, n);
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "malloc"}}, std::move(malloc_s));
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "first_touch"}}, std::move(touch_s));
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "free"}}, std::move(free_s));
  }
}

}  // namespace tg::transfer
