#include <doctest/doctest.h>

#include "experiments/harness/interrupt.h"
#include "experiments/harness/measure.h"

using namespace tg::harness;

namespace {
// A fake clock: each sample "takes" a fixed number of seconds, so the stop rule is
// tested exactly, independent of the machine's load.
struct FakeBody {
  double seconds;
  int calls = 0;
  double operator()() {
    ++calls;
    return seconds;
  }
};
// LoopOptions' first four fields, in their order; the rest at their defaults.
LoopOptions opts(int warmup, int min_reps, double min_time, int max_reps) {
  return LoopOptions{warmup, min_reps, min_time, max_reps};
}
}  // namespace

TEST_CASE("warm-up calls are run and not recorded") {
  FakeBody b{1.0};
  auto s = run_loop(opts(3, 5, 0.0, 100), std::ref(b));
  CHECK(s.size() == 5);
  CHECK(b.calls == 8);
}

TEST_CASE("the minimum count holds even when the minimum time is reached at once") {
  FakeBody b{10.0};
  CHECK(run_loop(opts(0, 7, 1.0, 100), std::ref(b)).size() == 7);
}

TEST_CASE("the minimum time holds beyond the minimum count") {
  FakeBody b{0.01};
  // 0.5 s of 10 ms samples = 50 samples (> min count 5).
  auto s = run_loop(opts(0, 5, 0.5, 1000), std::ref(b));
  CHECK(s.size() >= 50);
  CHECK(s.size() <= 51);
}

TEST_CASE("the maximum count bounds a body too fast for the minimum time") {
  FakeBody b{1e-9};
  CHECK(run_loop(opts(0, 5, 10.0, 200), std::ref(b)).size() == 200);
}

TEST_CASE("batch divides the sample and counts toward the minimum time") {
  LoopOptions o = opts(0, 1, 0.0, 10);
  o.batch = 100;
  int calls = 0;
  auto s = time_host(o, [&] { ++calls; });
  CHECK(s.size() == 1);
  CHECK(calls == 100);
  // Fake: a per-call sample of 1 ms with batch 100 is 100 ms timed; 0.25 s needs 3 samples.
  FakeBody b{0.001};
  o.min_time_s = 0.25;
  CHECK(run_loop(o, std::ref(b)).size() == 3);
}

TEST_CASE("time_host calls sync around the timed calls and measures real time") {
  int syncs = 0;
  auto s = time_host(opts(1, 4, 0.0, 4), [] {}, [&] { ++syncs; });
  CHECK(s.size() == 4);
  CHECK(syncs == 2 * 5);  // warm-up sample included
  for (double v : s) CHECK(v >= 0.0);
}

TEST_CASE("invalid loop options are rejected with the field named") {
  FakeBody b{1.0};
  CHECK_THROWS_WITH_AS(run_loop(opts(-1, 5, 0, 10), std::ref(b)), doctest::Contains("warm-up"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(run_loop(opts(0, 0, 0, 10), std::ref(b)), doctest::Contains("repetitions"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(run_loop(opts(0, 20, 0, 10), std::ref(b)), doctest::Contains("maximum"), std::invalid_argument);
}

TEST_CASE("an interrupt stops the loop with Interrupted") {
  set_interrupted_for_testing(true);
  FakeBody b{1.0};
  CHECK_THROWS_AS(run_loop(opts(0, 5, 0, 10), std::ref(b)), Interrupted);
  CHECK(b.calls == 0);
  set_interrupted_for_testing(false);
  CHECK(run_loop(opts(0, 5, 0, 10), std::ref(b)).size() == 5);
}
