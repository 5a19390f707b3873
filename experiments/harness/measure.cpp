#include "experiments/harness/measure.h"

#include <fmt/format.h>

#include <algorithm>

#include "experiments/harness/interrupt.h"
#include "trace/recorder.h"

namespace tg::harness {

LoopOptions default_loop_options() { return LoopOptions{}; }

LoopOptions quick_loop_options() {
  LoopOptions o;
  o.warmup = 1;
  o.min_reps = 5;
  o.min_time_s = 0.02;
  o.max_reps = 200;
  return o;
}

void check(const LoopOptions& o) {
  if (o.warmup < 0) throw std::invalid_argument(fmt::format("warm-up count must be >= 0, got {}", o.warmup));
  if (o.min_reps < 1) throw std::invalid_argument(fmt::format("repetitions must be >= 1, got {}", o.min_reps));
  if (o.max_reps < o.min_reps)
    throw std::invalid_argument(fmt::format("maximum repetitions {} is below the minimum {}", o.max_reps, o.min_reps));
  if (!(o.min_time_s >= 0.0)) throw std::invalid_argument(fmt::format("minimum time must be >= 0 s, got {}", o.min_time_s));
  if (o.batch < 1) throw std::invalid_argument(fmt::format("batch must be >= 1, got {}", o.batch));
}

std::vector<double> run_loop(const LoopOptions& opt, const std::function<double()>& sample) {
  check(opt);
  // A trace (--trace) records the first few samples of each loop and not its warm-up.
  trace::LoopWindow window;
  for (int i = 0; i < opt.warmup; ++i) {
    throw_if_interrupted();
    sample();
  }
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::min(opt.min_reps, 4096)));  // a huge --repetitions must not allocate up front
  double timed = 0.0;
  // Both minimums must hold; the maximum count bounds a body so fast that min_time
  // would otherwise need millions of samples.
  while (static_cast<int>(out.size()) < opt.max_reps &&
         (static_cast<int>(out.size()) < opt.min_reps || timed < opt.min_time_s)) {
    throw_if_interrupted();
    window.before_sample(static_cast<int>(out.size()));
    const double s = sample();
    out.push_back(s);
    timed += s * static_cast<double>(opt.batch);
  }
  return out;
}

std::vector<double> time_host(const LoopOptions& opt, const std::function<void()>& body,
                              const std::function<void()>& sync) {
  const auto batch = opt.batch;
  return run_loop(opt, [&] {
    if (sync) sync();
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < batch; ++i) body();
    if (sync) sync();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(batch);
  });
}

}  // namespace tg::harness
