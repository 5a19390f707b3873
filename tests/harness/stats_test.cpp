#include <doctest/doctest.h>

#include <stdexcept>

#include "experiments/harness/stats.h"

using namespace tg::harness;

TEST_CASE("quantiles interpolate linearly between closest ranks (type 7)") {
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Summary s = summarize(x);
  CHECK(s.count == 11);
  CHECK(s.min == 1);
  CHECK(s.max == 11);
  CHECK(s.p10 == doctest::Approx(2.0));
  CHECK(s.median == doctest::Approx(6.0));
  CHECK(s.p90 == doctest::Approx(10.0));
  CHECK(s.mean == doctest::Approx(6.0));
  // Even count: the median is the mean of the middle two; p10 at h = 0.3.
  Summary e = summarize({4, 1, 3, 2});
  CHECK(e.median == doctest::Approx(2.5));
  CHECK(e.p10 == doctest::Approx(1.3));
  CHECK(e.p90 == doctest::Approx(3.7));
  CHECK(e.p25 == doctest::Approx(1.75));
  CHECK(e.p75 == doctest::Approx(3.25));
}

TEST_CASE("one sample is its own every statistic, with zero noise") {
  Summary s = summarize({0.25});
  CHECK(s.min == 0.25);
  CHECK(s.p10 == 0.25);
  CHECK(s.median == 0.25);
  CHECK(s.p90 == 0.25);
  CHECK(s.max == 0.25);
  CHECK(s.noise == 0.0);
  CHECK_FALSE(s.noisy);
}

TEST_CASE("noise is IQR/median and flagged above 10%") {
  // Sorted 99 99 99 100 100 100 100 101 101 101: p25 at rank 2.25 is 99.25, p75 at rank
  // 6.75 is 100.75, the median 100, so IQR/median = 1.5 / 100.
  Summary quiet = summarize({99, 100, 100, 101, 99, 101, 100, 100, 99, 101});
  CHECK(quiet.p25 == doctest::Approx(99.25));
  CHECK(quiet.p75 == doctest::Approx(100.75));
  CHECK(quiet.noise == doctest::Approx(0.015));
  CHECK(quiet.noise < 0.10);
  CHECK_FALSE(quiet.noisy);
  // Spread 50..150: IQR 50 on median 100 = 50%.
  Summary loud = summarize({50, 75, 100, 125, 150});
  CHECK(loud.noise == doctest::Approx(0.5));
  CHECK(loud.noisy);
  // The threshold itself is not noisy: exactly 10% stays unflagged.
  Summary edge = summarize({95, 100, 105});  // p25 97.5, p75 102.5 -> 5%
  CHECK(edge.noise == doctest::Approx(0.05));
  CHECK_FALSE(summarize({95, 100, 105}, 0.05 + 1e-12).noisy);
  CHECK(summarize({95, 100, 105}, 0.04).noisy);
  // One outlier does not make a set noisy (the reason for IQR rather than stddev).
  Summary outlier = summarize({10, 10, 10, 10, 10, 10, 10, 10, 10, 1000});
  CHECK_FALSE(outlier.noisy);
  CHECK(outlier.max == 1000);
}

TEST_CASE("summarize rejects empty and non-finite sample sets") {
  CHECK_THROWS_AS(summarize({}), std::invalid_argument);
  CHECK_THROWS_AS(summarize({1.0, 0.0 / 0.0}), std::invalid_argument);
  CHECK_THROWS_AS(quantile_sorted({1.0}, 1.5), std::invalid_argument);
}
