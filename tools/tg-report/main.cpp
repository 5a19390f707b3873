// tg-report: compare two reports, or print reports as markdown tables.
//   tg-report compare A.json B.json [--threshold PCT] [--pair KEY=A:B ...]
//                                                        exit 0 nothing slower, 1 something slower
//   tg-report markdown FILE...                           markdown on stdout
// Exit 2 for bad usage or a report that cannot be read (the message names the file).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "experiments/harness/report_io.h"
#include "tools/tg-report/compare.h"

int main(int argc, char** argv) {
  CLI::App app("Compares twograph timing reports and turns them into markdown", "tg-report");
  app.require_subcommand(1);
  app.footer(
      "Examples:\n  tg-report compare base/tg-launch.json new/tg-launch.json --threshold 5\n"
      "  tg-report markdown report/*.json > report/summary.md\n\n"
      "Exit status: compare: 0 nothing slower, 1 something slower; 2 bad usage or an unreadable report.");
  std::string a_path, b_path;
  double threshold_pct = 5.0;
  auto* cmp = app.add_subcommand("compare", "Ratios B/A per measurement with a verdict (same, faster, slower, noisy)");
  cmp->add_option("A", a_path, "Baseline report (JSON)")->required();
  cmp->add_option("B", b_path, "New report (JSON)")->required();
  cmp->add_option("--threshold", threshold_pct, "Changes below PCT percent count as the same")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  std::vector<std::string> pair_specs;
  cmp->add_option("--pair", pair_specs,
                  "KEY=A:B: compare A's measurements whose KEY is A with B's whose KEY is B (repeatable), e.g. "
                  "--pair executor=static:torch_cuda_graph --pair executor=dynamic:torch_eager_h2d");
  std::vector<std::string> md_files;
  auto* md = app.add_subcommand("markdown", "Markdown tables, one section per report");
  md->add_option("FILE", md_files, "Reports (JSON)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tg-report: error: %s\nRun 'tg-report --help' for usage and examples.\n", e.what());
    return 2;
  }
  if (std::isnan(threshold_pct)) {  // CLI::Range lets NaN through, and NaN would make every change "same"
    std::fprintf(stderr, "tg-report: error: --threshold: must be a percentage in [0, 1000], got nan\n");
    return 2;
  }
  try {
    if (*cmp) {
      std::vector<tg::report::ParamPair> pairs;
      try {
        for (const auto& p : pair_specs) pairs.push_back(tg::report::parse_pair(p));
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "tg-report: error: %s\n", e.what());
        return 2;
      }
      const auto a = tg::harness::read_report(a_path);
      const auto b = tg::harness::read_report(b_path);
      const auto c = tg::report::compare(a, b, threshold_pct / 100.0, pairs);
      std::fputs(tg::report::format_comparison(c, a_path, b_path, threshold_pct / 100.0).c_str(), stdout);
      return c.slower > 0 ? 1 : 0;
    }
    // Every report is read before anything is printed: a bad third file must not
    // leave the first two in a redirected summary.md.
    std::string out;
    for (const auto& f : md_files) out += tg::report::markdown(tg::harness::read_report(f), f);
    std::fputs(out.c_str(), stdout);
    return 0;
  } catch (const tg::harness::ReportError& e) {
    std::fprintf(stderr, "tg-report: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tg-report: failed: %s\n", e.what());
    return 2;
  }
}
