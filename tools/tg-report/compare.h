#pragma once
// tg-report's logic, separate from its CLI so that tests call it directly.
#include <optional>
#include <string>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::report {

enum class Verdict { same, faster, slower, noisy, missing, added };
const char* verdict_name(Verdict v);

struct Row {
  std::string name;
  std::string params;       // params_str
  std::string unit;
  double a = 0, b = 0;      // medians (NaN when absent)
  double ratio = 0;         // B/A of the medians (NaN when undefined)
  Verdict verdict = Verdict::same;
};

struct Comparison {
  std::vector<Row> rows;    // in A's order, then measurements only in B
  double geomean_cost = 1;  // geometric mean of B/A cost ratios (A/B for "higher is better"); < 1: B is better
  int compared = 0, faster = 0, slower = 0, noisy = 0, same = 0, missing = 0, added = 0;
  // A report's "error": that run stopped early, so measurements it lacks are not
  // regressions and the ones it has may predate the fault. format_comparison warns.
  std::optional<harness::RunError> a_error, b_error;
  // Matched rows measured while a trace recorded on one side only (tracing costs host
  // time): tg-report refuses them unless --allow-traced. The first one, "name [params]".
  int traced_mixed = 0;
  std::string traced_example;
  bool a_traced = false, b_traced = false;  // the first such row's sides
};

// Matching across executors (or any string parameter): a measurement of A whose
// parameter `key` is `a` is compared with the measurement of B whose `key` is `b`,
// name and other parameters equal. `tg-report compare --pair executor=static:torch_cuda_graph`.
struct ParamPair {
  std::string key, a, b;
};
// Parses "KEY=A:B"; throws std::invalid_argument saying what is wrong.
ParamPair parse_pair(const std::string& spec);

// threshold: relative change below which medians count as the same (0.05 = 5%).
// A change is claimed only when it is beyond the threshold AND the p10..p90
// intervals are disjoint; otherwise a noisy flag on either side gives "noisy",
// and no flag gives "same".
Verdict verdict(const harness::Measurement& a, const harness::Measurement& b, double threshold);
// Matches by name and params through a hash (linear in the number of measurements);
// `pairs` rename A's params as B spells them first (--pair executor=static:torch_cuda_graph).
Comparison compare(const harness::Report& a, const harness::Report& b, double threshold,
                   const std::vector<ParamPair>& pairs = {});
// "" when A and B are reports of the same tool. Else why they are not (tg-report exits 2
// with it when no measurement matches either: a comparison that says "0 compared" reads
// like success).
std::string comparable(const harness::Report& a, const harness::Report& b, const std::string& a_name,
                       const std::string& b_name);

// Removes the parameters `keys` from every measurement of r, so that runs that differ in
// one setting (threads=16 vs threads=1, size=64 vs size=4096) can be compared point by
// point. Throws std::invalid_argument, naming both, when two measurements become one.
void drop_params(harness::Report& r, const std::vector<std::string>& keys, const std::string& file);

// Why A and B cannot be compared as they are because of tracing ("" when they can):
// names the files, the side that was traced and the first row, and the way out.
std::string traced_refusal(const Comparison& c, const std::string& a_name, const std::string& b_name);

// The text printed by `tg-report compare`.
std::string format_comparison(const Comparison& c, const std::string& a_name, const std::string& b_name,
                              double threshold);
// The markdown printed by `tg-report markdown` for one report (markdown.cpp). Every
// text from the report goes through markdown_text, so a name or parameter holding
// '|', a backtick, '*' or a line break cannot split a row or shift its columns.
std::string markdown(const harness::Report& r, const std::string& file);
// `s` as literal markdown text, safe inside a table cell: markdown's punctuation is
// backslash-escaped, a line break becomes <br>, another control character \xNN.
std::string markdown_text(const std::string& s);
// `s` as an inline code span, fenced with more backticks than it holds in a row.
std::string markdown_code(const std::string& s);

}  // namespace tg::report
