#pragma once
// Human-readable output: an aligned text table of a report's measurements, value
// formatting with SI prefixes, and a progress bar on stderr (only on a terminal).
#include <cstdio>
#include <string>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::harness {

// "4.21 us", "1.50 ms", "55.0 GB/s", "512 MiB" (unit "B"): 3 significant digits.
std::string format_value(double v, const std::string& unit);

// Aligned columns; the first row is the header. Numbers should already be strings.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// The table an experiment prints on stdout: name, params, median, p10..p90,
// noise (with a "!" when noisy), samples, extras; then the notes.
std::string report_table(const Report& r);

// A one-line progress bar redrawn on stderr with \r; silent when stderr is not a
// terminal (logs and CI stay clean). Finishes (clears the line) on destruction.
class Progress {
 public:
  Progress(size_t total, std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void tick(const std::string& what = {});  // one step done
  static bool enabled();                    // isatty(stderr)

 private:
  size_t total_, done_ = 0;
  std::string label_;
  bool on_;
};

}  // namespace tg::harness
