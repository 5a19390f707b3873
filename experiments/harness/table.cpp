#include "experiments/harness/table.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "graph/quote.h"

namespace tg::harness {

namespace {
constexpr size_t kMaxCellBytes = 512;

// Names and params come from flags and files (a model's name, tg-graph bench's
// --params): escaped, one line each, and cut, so a cell cannot forge a row or flood.
std::string cell(const std::string& text) { return printable_line(text, kMaxCellBytes); }

std::string sig3(double v) {
  const double a = std::fabs(v);
  // Fixed notation up to a million only: a 1.7e308 read from a report would print 309 digits.
  if (a >= 1e6) return fmt::format("{:.3g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}
}  // namespace

std::string format_value(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "n/a";
  if (unit == "s") {
    const double a = std::fabs(v);
    if (a == 0) return "0 s";
    if (a < 1e-6) return sig3(v * 1e9) + " ns";
    if (a < 1e-3) return sig3(v * 1e6) + " us";
    if (a < 1) return sig3(v * 1e3) + " ms";
    return sig3(v) + " s";
  }
  if (unit == "B") {
    const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = v;
    int i = 0;
    while (std::fabs(x) >= 1024 && i < 4) {
      x /= 1024;
      ++i;
    }
    return i == 0 ? fmt::format("{:.0f} B", v) : sig3(x) + " " + names[i];
  }
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) return fmt::format("{:.3g}", v) + (unit.empty() ? "" : " " + unit);
  return sig3(v) + (unit.empty() ? "" : " " + unit);
}

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i) {
      if (i) line += "  ";
      line += rows[k][i];
      if (i + 1 < rows[k].size()) line += std::string(width[i] - rows[k][i].size(), ' ');
    }
    out += line + '\n';
    if (k == 0) {
      size_t total = 0;
      for (size_t w : width) total += w;
      out += std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') + '\n';
    }
  }
  return out;
}

std::string report_table(const Report& r) {
  std::vector<std::vector<std::string>> rows{{"measurement", "params", "median", "p10", "p90", "noise", "n", "extra"}};
  for (const auto& m : r.measurements) {
    std::string extra;
    for (const auto& [k, v] : m.extra) extra += (extra.empty() ? "" : "  ") + k + "=" + sig3(v);
    const Summary& s = m.stats;
    rows.push_back({cell(m.name), cell(params_str(m.params)), format_value(s.median, m.unit), format_value(s.p10, m.unit),
                    format_value(s.p90, m.unit), fmt::format("{:.1f}%{}", s.noise * 100, s.noisy ? " !" : ""),
                    fmt::format("{}", s.count), cell(extra)});
  }
  std::string out = format_table(rows);
  bool any_noisy = false;
  for (const auto& m : r.measurements) any_noisy |= m.stats.noisy;
  if (any_noisy) out += "! noisy: IQR/median above 10%; rerun with more --repetitions or on a quieter machine\n";
  for (const auto& n : r.notes) out += fmt::format("skipped {}: {}\n", cell(n.part), printable_line(n.reason));
  return out;
}

bool Progress::enabled() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(size_t total, std::string label) : total_(total), label_(std::move(label)), on_(enabled()) {}

Progress::~Progress() {
  if (on_) std::fprintf(stderr, "\r\033[K");
}

void Progress::tick(const std::string& what) {
  ++done_;
  if (!on_) return;
  const size_t width = 30;
  const size_t filled = total_ ? std::min(width, done_ * width / total_) : width;
  std::fprintf(stderr, "\r\033[K%s [%s%s] %zu/%zu %s", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done_, total_, what.c_str());
  std::fflush(stderr);
}

}  // namespace tg::harness
