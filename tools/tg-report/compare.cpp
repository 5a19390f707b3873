#include "tools/tg-report/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "experiments/harness/table.h"

namespace tg::report {

using harness::Measurement;
using harness::Report;

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::same: return "same";
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::noisy: return "noisy";
    case Verdict::missing: return "missing in B";
    case Verdict::added: return "only in B";
  }
  return "?";
}

Verdict verdict(const Measurement& a, const Measurement& b, double threshold) {
  const auto& sa = a.stats;
  const auto& sb = b.stats;
  const bool disjoint = sb.p90 < sa.p10 || sb.p10 > sa.p90;
  bool beyond = false;
  bool b_bigger = sb.median > sa.median;
  if (sa.median > 0 && sb.median > 0) {
    beyond = std::fabs(std::log(sb.median / sa.median)) > std::log1p(threshold);
  } else if (sa.median != sb.median) {
    beyond = true;  // one side is zero: any difference is a large one
  }
  if (disjoint && beyond) {
    const bool b_better = (a.better == "higher") ? b_bigger : !b_bigger;
    return b_better ? Verdict::faster : Verdict::slower;
  }
  if (sa.noisy || sb.noisy) return Verdict::noisy;
  return Verdict::same;
}

std::string comparable(const Report& a, const Report& b, const std::string& a_name, const std::string& b_name) {
  if (a.meta.tool == b.meta.tool) return "";
  return fmt::format("A ({}) is a {} report and B ({}) a {} report: their measurements are of different things "
                     "(none would match); compare two reports of the same tool, or pair their params (--pair)",
                     a_name, a.meta.tool, b_name, b.meta.tool);
}

void drop_params(Report& r, const std::vector<std::string>& keys, const std::string& file) {
  std::map<std::string, std::string> seen;  // name + params after dropping -> params before
  for (auto& m : r.measurements) {
    const std::string before = harness::params_str(m.params);
    for (const auto& k : keys) m.params.erase(k);
    const std::string id = m.name + " " + harness::params_str(m.params);
    const auto [it, fresh] = seen.emplace(id, before);
    if (!fresh)
      throw std::invalid_argument(fmt::format(
          "{}: --ignore-param {} makes two measurements one: '{} {}' and '{} {}' differ only in the ignored "
          "parameter(s); ignore fewer", file, fmt::join(keys, ","), m.name, it->second, m.name, before));
  }
}

ParamPair parse_pair(const std::string& spec) {
  const size_t eq = spec.find('='), colon = spec.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || colon == std::string::npos || eq == 0 || colon == eq + 1 || colon + 1 == spec.size())
    throw std::invalid_argument("--pair " + spec + ": give KEY=A:B, e.g. --pair executor=static:torch_cuda_graph");
  return {spec.substr(0, eq), spec.substr(eq + 1, colon - eq - 1), spec.substr(colon + 1)};
}

namespace {
// A's params as B names them under the pairs; `applied` lists the pairs used ("executor=torch_cuda_graph").
harness::Params paired(const harness::Params& p, const std::vector<ParamPair>& pairs, std::string& applied) {
  harness::Params out = p;
  for (const ParamPair& x : pairs) {
    auto it = out.find(x.key);
    if (it == out.end() || it->second.kind() != harness::Param::Kind::string || it->second.as_string() != x.a) continue;
    it->second = harness::Param(x.b);
    applied += (applied.empty() ? "" : " ") + x.key + "=" + x.b;
  }
  return out;
}
}  // namespace

Comparison compare(const Report& a, const Report& b, double threshold, const std::vector<ParamPair>& pairs) {
  Comparison c;
  double log_sum = 0;
  int log_n = 0;
  // Matched by hash, not by a scan of B per measurement of A: 100,000 measurements
  // against themselves took 55 s that way.
  std::unordered_map<std::string, const Measurement*> in_b;
  in_b.reserve(b.measurements.size());
  for (const auto& mb : b.measurements) in_b.emplace(harness::measurement_key(mb.name, mb.params), &mb);
  std::unordered_set<const Measurement*> matched;
  for (const auto& ma : a.measurements) {
    std::string applied;
    const harness::Params want = paired(ma.params, pairs, applied);
    Row row{ma.name, harness::params_str(ma.params) + (applied.empty() ? "" : " | B: " + applied), ma.unit,
            ma.stats.median, NAN, NAN, Verdict::missing};
    const auto found = in_b.find(harness::measurement_key(ma.name, want));
    if (found != in_b.end()) {
      const Measurement* mb = found->second;
      matched.insert(mb);
      row.b = mb->stats.median;
      row.verdict = verdict(ma, *mb, threshold);
      if (ma.traced != mb->traced && c.traced_mixed++ == 0) {
        c.traced_example = ma.name + " [" + harness::params_str(ma.params) + "]";
        c.a_traced = ma.traced;
        c.b_traced = mb->traced;
      }
      ++c.compared;
      if (ma.stats.median > 0 && mb->stats.median > 0) {
        row.ratio = mb->stats.median / ma.stats.median;
        log_sum += std::log(ma.better == "higher" ? 1.0 / row.ratio : row.ratio);
        ++log_n;
      }
    }
    switch (row.verdict) {
      case Verdict::same: ++c.same; break;
      case Verdict::faster: ++c.faster; break;
      case Verdict::slower: ++c.slower; break;
      case Verdict::noisy: ++c.noisy; break;
      case Verdict::missing: ++c.missing; break;
      case Verdict::added: break;
    }
    c.rows.push_back(std::move(row));
  }
  for (const auto& mb : b.measurements)
    if (!matched.count(&mb)) {
      c.rows.push_back({mb.name, harness::params_str(mb.params), mb.unit, NAN, mb.stats.median, NAN, Verdict::added});
      ++c.added;
    }
  c.geomean_cost = log_n ? std::exp(log_sum / log_n) : NAN;
  c.a_error = a.error;
  c.b_error = b.error;
  return c;
}

namespace {
std::string run_error_warning(const char* side, const std::string& name, const std::optional<harness::RunError>& e) {
  if (!e) return "";
  return fmt::format("WARNING: {} ({}) records a failed run ({}): {}\n  Its measurements stop where the run failed; "
                     "those missing are not regressions, and a sticky CUDA error may have disturbed the last ones.\n\n",
                     side, name, e->kind, e->message);
}
}  // namespace

std::string traced_refusal(const Comparison& c, const std::string& a_name, const std::string& b_name) {
  if (c.traced_mixed == 0) return "";
  return fmt::format("{} matched rows were measured while a trace recorded in {} ({}) but not in {} ({}), e.g. {}: "
                     "tracing costs host time, so the verdicts would be about the tracer; compare two untraced runs "
                     "(run without --trace), or give --allow-traced to compare anyway",
                     c.traced_mixed, c.a_traced ? "A" : "B", c.a_traced ? a_name : b_name, c.a_traced ? "B" : "A",
                     c.a_traced ? b_name : a_name, c.traced_example);
}

std::string format_comparison(const Comparison& c, const std::string& a_name, const std::string& b_name,
                              double threshold) {
  std::vector<std::vector<std::string>> rows{{"measurement", "params", "A median", "B median", "B/A", "verdict"}};
  for (const auto& r : c.rows)
    rows.push_back({r.name, r.params, harness::format_value(r.a, r.unit), harness::format_value(r.b, r.unit),
                    std::isfinite(r.ratio) ? fmt::format("{:.3f}", r.ratio) : "n/a", verdict_name(r.verdict)});
  std::string out = fmt::format("A: {}\nB: {}\nthreshold: {:.1f}%\n\n", a_name, b_name, threshold * 100);
  out += run_error_warning("A", a_name, c.a_error) + run_error_warning("B", b_name, c.b_error);
  if (c.traced_mixed > 0)
    out += fmt::format("WARNING (--allow-traced): {} rows compare a traced run with an untraced one; the traced side "
                       "paid for the tracing\n\n", c.traced_mixed);
  out += harness::format_table(rows);
  out += fmt::format("\n{} compared: {} faster, {} slower, {} same, {} noisy; {} missing in B, {} only in B\n",
                     c.compared, c.faster, c.slower, c.same, c.noisy, c.missing, c.added);
  if (std::isfinite(c.geomean_cost))
    out += fmt::format("geometric mean of B/A cost ratios: {:.3f} ({})\n", c.geomean_cost,
                       c.geomean_cost < 1 ? "B is better overall" : c.geomean_cost > 1 ? "B is worse overall" : "equal");
  // Again at the end, where a long table leaves the reader.
  if (c.a_error || c.b_error)
    out += fmt::format("WARNING: {} records a failed run (see the top): compare with care\n",
                       c.a_error && c.b_error ? "each report" : c.a_error ? "A" : "B");
  return out;
}

}  // namespace tg::report
