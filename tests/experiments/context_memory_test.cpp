// tg-memory's context-memory rows on the CPU (experiments/memory/context_memory.h): the
// child's line protocol and its parser, the bytes each step added (per process, or the
// device's with a note), CUDA_MODULE_LOADING's parsing, the rows and notes in the report,
// NVML's loader refusing a missing library, and the real child skipping cleanly where NVML
// is absent. The CUDA steps run in memory_gpu_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "experiments/memory/context_memory.h"
#include "experiments/memory/nvml.h"

using namespace tg::memory;
namespace th = tg::harness;

namespace {

constexpr int64_t MiB = 1 << 20;

const th::Note* note_of(const th::Report& r, const std::string& part) {
  for (const th::Note& n : r.notes)
    if (n.part == part) return &n;
  return nullptr;
}

// Five steps after the baseline, as the child reads them: the process is not listed before
// its context; the device holds 1000 MiB of another process's throughout.
ContextChildOutput sample_output(bool process_listed) {
  ContextChildOutput out;
  out.settings = {{"module_loading", "lazy"}, {"module_loading_env", "unset"}};
  out.notes = {{"context_memory step=cudnn_handle", "no cuDNN"}};
  auto at = [&](const char* step, int64_t process, std::optional<int64_t> meminfo) {
    ContextSnapshot s;
    s.step = step;
    s.device_used = 1000 * MiB + process;
    if (process_listed && process > 0) s.process_used = process;
    s.meminfo_used = meminfo;
    out.snapshots.push_back(s);
  };
  at("before_context", 0, std::nullopt);
  at("context", 500 * MiB, 1500 * MiB);
  at("first_kernel", 502 * MiB, 1502 * MiB);
  at("cublas_handle", 510 * MiB, 1510 * MiB);
  at("cublaslt_handle", 512 * MiB, 1512 * MiB);
  at("cublas_workspace", 544 * MiB, 1544 * MiB);
  return out;
}

}  // namespace

TEST_CASE("the context-memory child's output survives the round trip through its parser") {
  const ContextChildOutput out = sample_output(true);
  const ContextChildOutput back = parse_context_output(format_context_output(out));
  CHECK(back.skip_reason.empty());
  CHECK(back.settings == out.settings);
  CHECK(back.notes == out.notes);
  REQUIRE(back.snapshots.size() == out.snapshots.size());
  for (size_t i = 0; i < out.snapshots.size(); ++i) {
    CAPTURE(i);
    CHECK(back.snapshots[i].step == out.snapshots[i].step);
    CHECK(back.snapshots[i].device_used == out.snapshots[i].device_used);
    CHECK(back.snapshots[i].process_used == out.snapshots[i].process_used);
    CHECK(back.snapshots[i].meminfo_used == out.snapshots[i].meminfo_used);
  }
  CHECK_FALSE(back.snapshots[0].process_used.has_value());
  CHECK_FALSE(back.snapshots[0].meminfo_used.has_value());

  ContextChildOutput skip;
  skip.skip_reason = "cannot load libnvidia-ml.so.1\t(reason)";
  CHECK(parse_context_output(format_context_output(skip)).skip_reason == "cannot load libnvidia-ml.so.1 (reason)");
}

TEST_CASE("a malformed context-memory line is an error that names the line") {
  const std::string good = format_context_output(sample_output(true));
  const std::string bad_line = "line " + std::to_string(std::count(good.begin(), good.end(), '\n') + 1);
  for (const char* bad :
       {"context_memory\tx\t1\t2\n", "context_memory\tx\t-1\t2\t3\n", "context_memory\tx\t-\t2\t3\n",
        "context_memory\tx\t1\tten\t3\n", "context_memory\t\t1\t2\t3\n", "context_memory_setting\tmodule_loading\n",
        "context_memory_skip\t\n", "other\tline\n", "\n"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_context_output(good + bad), doctest::Contains(bad_line.c_str()), std::runtime_error);
  }
  // Readings are taken before and after the steps: fewer than two, without a skip, is a broken child.
  const std::string one = "context_memory\tbefore_context\t1\t-\t-\n";
  CHECK_THROWS_WITH_AS(parse_context_output(one), doctest::Contains("1 readings"), std::runtime_error);
  CHECK_THROWS_WITH_AS(parse_context_output(""), doctest::Contains("0 readings"), std::runtime_error);
}

TEST_CASE("context_deltas takes the per-process figure when NVML lists the process after every step") {
  const ContextDeltas d = context_deltas(sample_output(true).snapshots);
  CHECK(d.source == "nvml_process");
  CHECK(d.fallback_note.empty());
  REQUIRE(d.steps.size() == 5);
  CHECK(d.steps[0].step == "context");
  CHECK(d.steps[0].bytes == 500 * MiB);
  CHECK(d.steps[0].device_delta == 500 * MiB);
  CHECK_FALSE(d.steps[0].meminfo_delta.has_value());  // no cudaMemGetInfo before the context
  CHECK(d.steps[0].process_after == 500 * MiB);
  CHECK(d.steps[1].bytes == 2 * MiB);
  CHECK(d.steps[1].meminfo_delta == 2 * MiB);
  CHECK(d.steps[4].step == "cublas_workspace");
  CHECK(d.steps[4].bytes == 32 * MiB);
  CHECK(d.total == 544 * MiB);
  CHECK_THROWS_AS(context_deltas({}), std::invalid_argument);
  CHECK_THROWS_AS(context_deltas({ContextSnapshot{}}), std::invalid_argument);
}

TEST_CASE("context_deltas falls back to the device's deltas, and says why, when the process is not listed") {
  std::vector<ContextSnapshot> s = sample_output(false).snapshots;
  // Another process frees 100 MiB during the first kernel's step: the device delta shows it.
  for (size_t i = 2; i < s.size(); ++i) s[i].device_used -= 100 * MiB;
  const ContextDeltas d = context_deltas(s);
  CHECK(d.source == "nvml_device");
  CHECK(d.fallback_note.find("other processes") != std::string::npos);
  CHECK(d.steps[0].bytes == 500 * MiB);
  CHECK(d.steps[1].bytes == -98 * MiB);
  CHECK_FALSE(d.steps[1].process_after.has_value());
  CHECK(d.total == 444 * MiB);

  // Listed after some steps only: the device's deltas for all, not a mix of sources.
  std::vector<ContextSnapshot> partly = sample_output(true).snapshots;
  partly[3].process_used.reset();
  CHECK(context_deltas(partly).source == "nvml_device");

  // Listed before the context step: something created a context first, and the note says so.
  std::vector<ContextSnapshot> early = sample_output(true).snapshots;
  early[0].process_used = 300 * MiB;
  const ContextDeltas e = context_deltas(early);
  CHECK(e.source == "nvml_device");
  CHECK(e.fallback_note.find("before its first step") != std::string::npos);
}

TEST_CASE("CUDA_MODULE_LOADING: the two documented values, and anything else reported as it is") {
  CHECK(parse_module_loading_env(nullptr).text == "unset");
  CHECK(parse_module_loading_env(nullptr).requested.empty());
  CHECK(parse_module_loading_env("LAZY").requested == "lazy");
  CHECK(parse_module_loading_env("EAGER").requested == "eager");
  CHECK(parse_module_loading_env("EAGER").text == "EAGER");
  CHECK(parse_module_loading_env("eager").requested.empty());
  CHECK(parse_module_loading_env("eager").text == "eager");
  CHECK(parse_module_loading_env("").text == "empty");
}

TEST_CASE("record_context_memory writes a row per step with its settings, the total and the notes") {
  th::Report r;
  record_context_memory(r, sample_output(true));
  const th::Params common{{"source", "nvml_process"}, {"module_loading", "lazy"}, {"module_loading_env", "unset"}};
  th::Params context = common;
  context.emplace("step", "context");
  const th::Measurement* m = r.find("context_memory", context);
  REQUIRE(m != nullptr);
  CHECK(m->unit == "B");
  CHECK(m->stats.median == 500 * MiB);
  CHECK(m->extra.at("nvml_device_delta_B") == 500 * MiB);
  CHECK(m->extra.count("meminfo_delta_B") == 0);
  th::Params ws = common;
  ws.emplace("step", "cublas_workspace");
  const th::Measurement* w = r.find("context_memory", ws);
  REQUIRE(w != nullptr);
  CHECK(w->stats.median == 32 * MiB);
  CHECK(w->extra.at("meminfo_delta_B") == 32 * MiB);
  const th::Measurement* total = r.find("context_memory_total", common);
  REQUIRE(total != nullptr);
  CHECK(total->stats.median == 544 * MiB);
  CHECK(r.measurements.size() == 6);
  REQUIRE(note_of(r, "context_memory step=cudnn_handle") != nullptr);
  CHECK(note_of(r, "context_memory source=nvml_process") == nullptr);

  th::Report fallback;
  record_context_memory(fallback, sample_output(false));
  CHECK(note_of(fallback, "context_memory source=nvml_process") != nullptr);

  th::Report skipped;
  ContextChildOutput skip;
  skip.skip_reason = "cannot load libnvidia-ml.so.1";
  record_context_memory(skipped, skip);
  CHECK(skipped.measurements.empty());
  REQUIRE(note_of(skipped, "context_memory") != nullptr);
  CHECK(note_of(skipped, "context_memory")->reason == "cannot load libnvidia-ml.so.1");
}

TEST_CASE("Nvml: a library that cannot be loaded is Unavailable, naming it") {
  CHECK_THROWS_WITH_AS(Nvml("libnvidia-ml-absent-twograph-test.so.1"),
                       doctest::Contains("cannot load libnvidia-ml-absent-twograph-test.so.1"), Nvml::Unavailable);
}

#ifdef TWOGRAPH_HAVE_CUDA  // a build without CUDA has no child: its tg-memory records "built without CUDA"
TEST_CASE("tg-memory's context-memory child without NVML: the rows are skipped with the reason") {
  // Where NVML loads (a machine with the driver) the child would create a CUDA context, which
  // a CPU test must not: there it checks that a failed NVML call names the call instead, and
  // memory_gpu_test.cpp runs the child.
  try {
    const Nvml nvml;
    CHECK_THROWS_WITH_AS(nvml.device_by_pci_bus_id("not-a-bus-id"),
                         doctest::Contains("nvmlDeviceGetHandleByPciBusId_v2(\"not-a-bus-id\") failed"), Nvml::Error);
    return;
  } catch (const Nvml::Unavailable&) {
  }
  th::Report r;
  measure_context_memory(r, {TG_MEMORY_BIN, kContextMemoryChildFlag, "0"});
  CHECK(r.measurements.empty());
  const th::Note* n = note_of(r, "context_memory");
  REQUIRE(n != nullptr);
  CHECK(n->reason.find("cannot load libnvidia-ml.so.1") != std::string::npos);
}
#endif
