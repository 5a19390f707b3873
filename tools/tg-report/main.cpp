// tg-report: compare two reports, or print reports as markdown tables.
//   tg-report compare A.json B.json [--threshold PCT] [--ignore-param KEY...] [--pair KEY=A:B ...] [--allow-traced]
//                                                        exit 0 nothing slower, 1 something slower
//   tg-report markdown FILE...                           markdown on stdout
// Exit 2 for bad usage, a report that cannot be read or is invalid (the message names
// the file and the JSON path), two reports of different tools, or output that cannot
// be written. A closed stdout pipe (`| head`) only stops the printing.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "experiments/harness/cli_validators.h"
#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"
#include "tools/tg-report/compare.h"

namespace {

constexpr int kExitUsage = 2;

// stdout that cannot be written (a full disk) is an error; a closed pipe is not.
int print(const std::string& text, int status) {
  try {
    tg::harness::print_stdout(text);
    return status;
  } catch (const tg::harness::OutputError& e) {
    tg::harness::say_line("tg-report", std::string("error: ") + e.what());
    return kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  tg::harness::ignore_sigpipe();
  CLI::App app("Compares twograph timing reports and turns them into markdown", "tg-report");
  app.require_subcommand(1);
  app.footer(
      "Examples:\n  tg-report compare base/tg-launch.json new/tg-launch.json --threshold 5\n"
      "  tg-report compare a.json b.json --ignore-param threads   # runs that differ in one setting\n"
      "  tg-report markdown report/*.json > report/summary.md\n\n"
      "Exit status: compare: 0 nothing slower, 1 something slower; 2 bad usage, an unreadable or invalid report,\n"
      "reports of two different tools, a traced run against an untraced one (without --allow-traced), or output\n"
      "that cannot be written.");
  std::string a_path, b_path;
  double threshold_pct = 5.0;
  double max_mib = static_cast<double>(tg::harness::kMaxReportBytes >> 20);
  app.fallthrough();  // --max-mib before or after the subcommand
  app.add_option("--max-mib", max_mib, "Largest report read, in MiB (a larger file is refused unread)")
      ->transform(tg::harness::decimal_real(1e-6, 1 << 20))
      ->capture_default_str();
  auto* cmp = app.add_subcommand("compare", "Ratios B/A per measurement with a verdict (same, faster, slower, noisy)");
  cmp->add_option("A", a_path, "Baseline report (JSON)")->required();
  cmp->add_option("B", b_path, "New report (JSON)")->required();
  cmp->add_option("--threshold", threshold_pct, "Changes below PCT percent count as the same")
      ->transform(tg::harness::decimal_real(0.0, 1000.0))
      ->capture_default_str();
  std::vector<std::string> ignored;
  cmp->add_option("--ignore-param", ignored,
                  "Match measurements without these parameters (e.g. threads), to compare runs that differ in them");
  std::vector<std::string> pair_specs;
  cmp->add_option("--pair", pair_specs,
                  "KEY=A:B: compare A's measurements whose KEY is A with B's whose KEY is B (repeatable), e.g. "
                  "--pair executor=static:torch_cuda_graph --pair executor=dynamic:torch_eager_h2d");
  bool allow_traced = false;
  cmp->add_flag("--allow-traced", allow_traced,
                "Compare rows measured while a trace recorded (--trace) with untraced ones (refused otherwise, exit 2)");
  std::vector<std::string> md_files;
  auto* md = app.add_subcommand("markdown", "Markdown tables, one section per report");
  md->add_option("FILE", md_files, "Reports (JSON)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return print(app.help(), 0);
  } catch (const CLI::ParseError& e) {
    // CLI11 quotes the arguments raw; its complaint is one line.
    tg::harness::say_line("tg-report", std::string("error: ") + e.what());
    std::fputs("Run 'tg-report --help' for usage and examples.\n", stderr);
    return kExitUsage;
  }
  const auto max_bytes = static_cast<uint64_t>(max_mib * (1 << 20));
  try {
    if (*cmp) {
      std::vector<tg::report::ParamPair> pairs;
      for (const auto& p : pair_specs) pairs.push_back(tg::report::parse_pair(p));  // invalid_argument: exit 2
      auto a = tg::harness::read_report(a_path, max_bytes);
      auto b = tg::harness::read_report(b_path, max_bytes);
      if (!ignored.empty()) {
        tg::report::drop_params(a, ignored, a_path);
        tg::report::drop_params(b, ignored, b_path);
      }
      const auto c = tg::report::compare(a, b, threshold_pct / 100.0, pairs);
      // Reports of two tools compare only where pairs make their rows meet.
      if (const std::string why = tg::report::comparable(a, b, a_path, b_path); !why.empty() && c.compared == 0) {
        tg::harness::say_line("tg-report", "error: " + why);
        return kExitUsage;
      }
      if (const std::string why = tg::report::traced_refusal(c, a_path, b_path); !why.empty() && !allow_traced) {
        tg::harness::say_line("tg-report", "error: " + why);
        return kExitUsage;
      }
      return print(tg::report::format_comparison(c, a_path, b_path, threshold_pct / 100.0), c.slower > 0 ? 1 : 0);
    }
    // Every report is read before anything is printed: a bad third file must not
    // leave the first two in a redirected summary.md.
    std::string out;
    for (const auto& f : md_files) out += tg::report::markdown(tg::harness::read_report(f, max_bytes), f);
    return print(out, 0);
  } catch (const tg::harness::ReportError& e) {
    // One problem and a count per message; the reports' keys and paths are quoted raw.
    tg::harness::say_line("tg-report", std::string("error: ") + e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    tg::harness::say_line("tg-report", std::string("error: ") + e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    tg::harness::say("tg-report", std::string("failed: ") + e.what());
    return kExitUsage;
  }
}
