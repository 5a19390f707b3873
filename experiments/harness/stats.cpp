#include "experiments/harness/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tg::harness {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample set");
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument(fmt::format("quantile {} outside [0, 1]", q));
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double v = sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
  // Rounding may put v an ulp past its neighbours; clamped, the quantiles are ordered
  // exactly as the report validator requires (min <= p10 <= median <= p90 <= max).
  return std::min(std::max(v, sorted[lo]), sorted[hi]);
}

Summary summarize(std::vector<double> samples, double noise_threshold) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples (the loop ran zero repetitions)");
  for (size_t i = 0; i < samples.size(); ++i)
    if (!std::isfinite(samples[i]))
      throw std::invalid_argument(fmt::format("summarize: sample {} is not finite ({})", i, samples[i]));
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.p10 = quantile_sorted(samples, 0.10);
  s.p25 = quantile_sorted(samples, 0.25);
  s.median = quantile_sorted(samples, 0.50);
  s.p75 = quantile_sorted(samples, 0.75);
  s.p90 = quantile_sorted(samples, 0.90);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  s.noise = s.median != 0.0 ? (s.p75 - s.p25) / std::fabs(s.median) : 0.0;
  s.noisy = s.noise > noise_threshold;
  return s;
}

}  // namespace tg::harness
