#pragma once
// Order statistics of a sample set.
//
// Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7,
// numpy's default, Excel's PERCENTILE.INC): with the samples sorted ascending as
// x[0..n-1], the q-quantile sits at position h = q * (n - 1) and is
// x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
// So p10 of {1..11} is 2, the median of {1,2,3,4} is 2.5, and one sample is its own
// p10, median and p90.
//
// noise = IQR / median = (p75 - p25) / median, a robust spread that a few outliers
// (a page fault, a context switch) do not move. It is flagged when above 10%.
#include <cstddef>
#include <vector>

namespace tg::harness {

inline constexpr double kNoiseThreshold = 0.10;

struct Summary {
  size_t count = 0;
  double min = 0, p10 = 0, p25 = 0, median = 0, p75 = 0, p90 = 0, max = 0, mean = 0;
  double noise = 0;    // IQR / median; 0 when the median is 0
  bool noisy = false;  // noise > threshold
};

// Throws std::invalid_argument for an empty set or a non-finite sample.
Summary summarize(std::vector<double> samples, double noise_threshold = kNoiseThreshold);

// The q-quantile (0 <= q <= 1) of samples already sorted ascending (type 7 above).
double quantile_sorted(const std::vector<double>& sorted, double q);

}  // namespace tg::harness
