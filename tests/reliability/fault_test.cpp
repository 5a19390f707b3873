// tg-noop --fault sticky / oom on a GPU (label gpu), end to end through the binary:
// exit 1, the message the user needs, and a report (JSON and CSV, written
// atomically) that validates, records the error with its kind, and keeps the
// measurements taken before the fault.
#include <doctest/doctest.h>

#include <string>

#include "experiments/harness/report_io.h"
#include "tests/gpu_skip.h"
#include "tests/run_tool.h"

namespace tg {
namespace {

using namespace tg::testing;

void check_has(const std::string& out, const char* part) {
  CHECK_MESSAGE(out.find(part) != std::string::npos, "missing '", part, "' in:\n", out);
}

// Runs the fault and returns the report it wrote, after the checks every fault shares.
harness::Report run_fault(const TempDir& dir, const std::string& fault, ToolResult& r) {
  const std::string json = dir / (fault + ".json"), csv = dir / (fault + ".csv");
  r = run_tool(TG_NOOP_BIN, "--device 0 --quick --fault " + fault + " --json " + json + " --csv " + csv);
  INFO("tg-noop --fault ", fault, " said:\n", r.output);
  CHECK(r.status == 1);
  REQUIRE(file_exists(json));
  CHECK(file_exists(csv));
  CHECK_FALSE(file_exists(json + ".tmp"));
  const std::vector<std::string> problems = harness::validate_report_json(read_text(json));
  CHECK_MESSAGE(problems.empty(), "first problem: ", problems.empty() ? "" : problems.front());
  harness::Report rep = harness::read_report(json);
  REQUIRE(rep.error.has_value());
  // Everything tg-noop measures comes before the fault: host, timer and the three kernel timings.
  for (const char* name : {"empty_host_function", "timer_floor", "empty_kernel_launch_sync",
                           "empty_kernel_back_to_back", "empty_kernel_gpu_time"}) {
    bool found = false;
    for (const auto& m : rep.measurements) found = found || m.name == name;
    CHECK_MESSAGE(found, "measurement ", name, " is missing from the report");
  }
  const std::string csv_text = read_text(csv);
  CHECK(csv_text.find("empty_kernel_gpu_time") != std::string::npos);
  return rep;
}

TEST_CASE("tg-noop --fault sticky: the context is lost, exit 1, a clear message, a report with the error") {
  TG_REQUIRE_GPU();
  TempDir dir;
  ToolResult r;
  const harness::Report rep = run_fault(dir, "sticky", r);
  for (const char* part : {"a sticky CUDA error", "cudaErrorIllegalAddress", "the context is lost",
                           "no further GPU work is possible in this process", "compute-sanitizer",
                           "--fault sticky"})
    check_has(r.output, part);
  CHECK(rep.error->kind == "sticky_cuda_error");
  check_has(rep.error->message, "illegal memory access");
}

TEST_CASE("tg-noop --fault oom: exit 1, the breakdown, a report with kind out_of_memory") {
  TG_REQUIRE_GPU();
  TempDir dir;
  ToolResult r;
  const harness::Report rep = run_fault(dir, "oom", r);
  for (const char* part : {"out of memory on cuda:0", "tried to allocate", "device free", "of total",
                           "tg-noop holds nothing else", "cudaErrorMemoryAllocation"})
    check_has(r.output, part);
  CHECK(r.output.find("sticky") == std::string::npos);  // an OOM leaves the context usable
  CHECK(rep.error->kind == "out_of_memory");
  check_has(rep.error->message, "tried to allocate");
}

}  // namespace
}  // namespace tg
