// The report's optional top-level "error" (label cpu): JSON round trip and
// validation, tg-report's warnings, and tg-noop's --fault on a CPU run (a usage
// error: exit 2, no report).
#include <doctest/doctest.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "experiments/harness/experiment.h"
#include "experiments/harness/report_io.h"
#include "kernels/out_of_memory.h"
#include "tests/run_tool.h"
#include "tools/tg-report/compare.h"

namespace tg {
namespace {

using namespace tg::testing;

harness::Report small_report() {
  harness::Report r;
  r.meta = harness::collect_metadata("tg-test", "tg-test --quick");
  r.add_time("step", {{"batch", 32}}, {1e-3, 1.1e-3, 0.9e-3});
  return r;
}

TEST_CASE("report error: absent by default, round-trips through JSON for every kind") {
  harness::Report ok = small_report();
  const std::string ok_json = harness::to_json(ok);
  CHECK(ok_json.find("\"error\"") == std::string::npos);  // optional: a run that worked has none
  CHECK_FALSE(harness::report_from_json(ok_json).error.has_value());
  for (const char* kind : harness::kRunErrorKinds) {
    harness::Report r = small_report();
    r.error = harness::RunError{kind, std::string("it failed: \"quoted\", a, comma\nand a line")};
    const std::string json = harness::to_json(r);
    CHECK(harness::validate_report_json(json).empty());
    const harness::Report back = harness::report_from_json(json);
    REQUIRE(back.error.has_value());
    CHECK(back.error->kind == kind);
    CHECK(back.error->message == r.error->message);
    CHECK(back.measurements.size() == 1);  // the measurements taken before stay
    // The CSV holds the measurements only: the same rows as without the error.
    CHECK(harness::to_csv(r) == harness::to_csv(small_report()));
  }
}

TEST_CASE("report error: the validator names a bad kind or a missing message") {
  harness::Report r = small_report();
  r.error = harness::RunError{"failure", "x"};
  const std::string json = harness::to_json(r);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = json;
    const auto at = j.find(from);
    REQUIRE(at != std::string::npos);
    return j.replace(at, from.size(), to);
  };
  auto first = [](const std::vector<std::string>& v) { return v.empty() ? std::string() : v.front(); };
  CHECK(first(harness::validate_report_json(with("\"kind\": \"failure\"", "\"kind\": \"oops\""))).find("error.kind") == 0);
  CHECK(first(harness::validate_report_json(with("\"message\": \"x\"", "\"mess\": \"x\""))) == "error.message: missing");
  CHECK(first(harness::validate_report_json(with("\"kind\": \"failure\"", "\"kind\": 3"))).find("error.kind") == 0);
  CHECK_THROWS_AS(harness::report_from_json(with("\"kind\": \"failure\"", "\"kind\": \"oops\"")), harness::ReportError);
}

TEST_CASE("tg-report compare and markdown warn when a report records an error") {
  harness::Report a = small_report(), b = small_report();
  b.error = harness::RunError{"sticky_cuda_error", "cudaErrorIllegalAddress"};
  const report::Comparison c = report::compare(a, b, 0.05);
  const std::string text = report::format_comparison(c, "a.json", "b.json", 0.05);
  INFO(text);
  CHECK(text.find("WARNING: B (b.json) records a failed run (sticky_cuda_error): cudaErrorIllegalAddress") !=
        std::string::npos);
  CHECK(text.find("WARNING: B records a failed run") != std::string::npos);  // again at the end
  CHECK(text.find("WARNING: A") == std::string::npos);
  const std::string clean = report::format_comparison(report::compare(a, a, 0.05), "a.json", "a.json", 0.05);
  CHECK(clean.find("WARNING") == std::string::npos);
  CHECK(report::markdown(b, "b.json").find("This run failed (sticky_cuda_error)") != std::string::npos);
}

// Experiment::run with a body that measures, then throws `fault`: exit 1 and the report.
harness::Report run_failing_body(const TempDir& dir, const std::string& name, const std::exception_ptr& fault) {
  harness::Experiment ex("tg-test", "a body that fails", "tg-test --device cpu");
  const std::string json = dir / (name + ".json"), csv = dir / (name + ".csv");
  std::string a0 = "tg-test", a1 = "--device", a2 = "cpu", a3 = "--quick", a4 = "--json", a5 = json, a6 = "--csv",
              a7 = csv;
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data(), a6.data(), a7.data()};
  const int rc = ex.run(8, argv, [&](harness::Experiment& e) {
    e.report().add_time("before_the_fault", {{"n", 1}}, {1e-6, 2e-6});
    std::rethrow_exception(fault);
  });
  CHECK(rc == harness::kExitFailure);
  CHECK(file_exists(csv));
  CHECK(read_text(csv).find("before_the_fault") != std::string::npos);
  return harness::read_report(json);
}

TEST_CASE("Experiment::run: a body that throws still writes the report, with the error and what it measured") {
  TempDir dir;
  const harness::Report plain = run_failing_body(dir, "plain", std::make_exception_ptr(std::runtime_error("boom")));
  REQUIRE(plain.error.has_value());
  CHECK(plain.error->kind == "failure");
  CHECK(plain.error->message == "boom");
  REQUIRE(plain.measurements.size() == 1);
  CHECK(plain.measurements[0].name == "before_the_fault");
  const harness::Report oom = run_failing_body(
      dir, "oom", std::make_exception_ptr(OutOfMemoryError("static plan (arena): out of memory on cpu: ...")));
  REQUIRE(oom.error.has_value());
  CHECK(oom.error->kind == "out_of_memory");
  CHECK(oom.measurements.size() == 1);
}

TEST_CASE("tg-noop --fault on a CPU run is a usage error: exit 2, 'needs a GPU', no report") {
  TempDir dir;
  for (const char* fault : {"sticky", "oom"}) {
    const ToolResult r = run_tool(TG_NOOP_BIN, std::string("--device cpu --quick --fault ") + fault + " --json " +
                                                   (dir / "r.json"));
    INFO("--fault ", fault, ": ", r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find("needs a GPU") != std::string::npos);
    CHECK_FALSE(file_exists(dir / "r.json"));
  }
  const ToolResult bad = run_tool(TG_NOOP_BIN, "--device cpu --fault bogus");
  INFO(bad.output);
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--fault must be none, sticky or oom, got 'bogus'") != std::string::npos);
  const ToolResult none = run_tool(TG_NOOP_BIN, "--device cpu --quick --fault none --json " + (dir / "n.json"));
  CHECK(none.status == 0);
  CHECK_FALSE(harness::read_report(dir / "n.json").error.has_value());
  const ToolResult help = run_tool(TG_NOOP_BIN, "--help");
  CHECK(help.output.find("--fault") != std::string::npos);
}

}  // namespace
}  // namespace tg
