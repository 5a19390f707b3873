#pragma once
// The measurement loop: warm-up, then repetitions until a minimum count AND a
// minimum time have both been reached, bounded by a maximum count.
//
// One repetition yields one sample in seconds. A sample may cover `batch` calls of the
// body and is then divided by `batch`, so that a body of a few nanoseconds is not
// drowned by the clock's own cost (steady_clock reads take ~20 ns).
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "experiments/harness/interrupt.h"  // Interrupted, thrown by the loops

namespace tg::harness {

struct LoopOptions {
  int warmup = 3;            // untimed calls first (caches, lazy init, JIT)
  int min_reps = 10;         // at least this many samples...
  double min_time_s = 0.2;   // ...and at least this much timed time in total
  int max_reps = 1000;       // never more samples than this (wins over min_time_s)
  int64_t batch = 1;         // body calls per sample; the sample is divided by it
  // time_gpu only: each sample enqueued behind a kernel that holds the stream until the
  // host has enqueued the whole sample, so the events time the device's work alone and
  // not the host's enqueueing too (nvbench's blocking kernel; gpu_timing.h).
  bool hold_gpu = false;
};

// Defaults for a normal run and for --quick (seconds for the whole main job).
LoopOptions default_loop_options();
LoopOptions quick_loop_options();
// Throws std::invalid_argument naming the field when an option is out of range.
void check(const LoopOptions& opt);

// The loop itself: calls sample() (which returns one sample's seconds, already
// divided by the batch) warmup times untimed, then until the stop rule holds.
// Returns the samples in the order taken.
std::vector<double> run_loop(const LoopOptions& opt, const std::function<double()>& sample);

// Host timing: sync(); t0 = steady_clock; batch x body(); sync(); t1. sync is the
// device's synchronize (e.g. [&]{ backend.synchronize(); }) so that the time covers
// the work, not just its enqueueing; pass {} for pure host code.
std::vector<double> time_host(const LoopOptions& opt, const std::function<void()>& body,
                              const std::function<void()>& sync = {});

// Seconds since an arbitrary epoch, from steady_clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tg::harness
