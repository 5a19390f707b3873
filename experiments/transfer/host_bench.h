#pragma once
// The parts of tg-transfer that need no GPU: host memcpy bandwidth and the cost of
// malloc, free and first touch. They run on every build and every --device.
#include <cstddef>
#include <vector>

#include "experiments/harness/measure.h"
#include "experiments/harness/report.h"

namespace tg::transfer {

// run_loop calls a sample during warm-up too; a sample that also records side
// clocks (free after malloc) keeps only the entries that match timed samples.
inline void keep_last(std::vector<double>& v, size_t n) {
  if (v.size() > n) v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(n));
}

// copy [direction=h2h memory=pageable mode=memcpy size_bytes copy_threads]: memcpy
// between two touched pageable buffers on 1..N threads (ParallelMemcpy), steady_clock.
// GB/s counts the bytes copied once. This is the ceiling of the staged copy's host half.
void measure_host_memcpy(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                         std::vector<int> thread_counts);

// alloc [api=malloc|free|first_touch size_bytes=N]: malloc of a large block only
// reserves address space; first_touch is the page faults that actually back it, the
// cost that an untouched pageable buffer would smuggle into a timed copy.
void measure_host_alloc(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes);

}  // namespace tg::transfer
