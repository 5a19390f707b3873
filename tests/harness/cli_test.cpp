// The common CLI, end to end through the real tg-noop binary.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "experiments/harness/report_io.h"
#include "kernels/cuda_options.h"
#include "tests/run_tool.h"

namespace {
using Result = tg::testing::ToolResult;
Result run(const std::string& args) { return tg::testing::run_tool(TG_NOOP_BIN, args); }
bool exists(const std::string& p) { return tg::testing::file_exists(p); }
}  // namespace

TEST_CASE("--help shows the common flags and an example, exit 0") {
  Result r = run("--help");
  CHECK(r.status == 0);
  for (const char* s : {"--device", "--list-devices", "--quick", "--repetitions", "--warmup", "--min-time", "--json",
                        "--csv", "--cuda-options", "TG_CUDA_OPTIONS", "small_gemm=1", "skinny_gemm=1",
                        "gemm_update_streamk=1", "gemm_autotune=0", "pdl=1", "Example:", "tg-noop --device auto --quick"})
    CHECK_MESSAGE(r.output.find(s) != std::string::npos, s);
}

TEST_CASE("--list-devices lists the CPU, exit 0") {
  Result r = run("--list-devices");
  CHECK(r.status == 0);
  CHECK(r.output.find("cpu") != std::string::npos);
}

TEST_CASE("bad flags and values exit 2 with a message naming them") {
  struct Case {
    const char* args;
    const char* expect;
  } cases[] = {
      {"--frobnicate", "frobnicate"},
      {"--repetitions -1", "repetitions"},
      {"--repetitions 0", "repetitions"},
      {"--repetitions abc", "repetitions"},
      {"--warmup -3", "warmup"},
      {"--min-time -1", "min-time"},
      {"--device 99", "99"},
      {"--device banana", "banana"},
      {"--device", "device"},
      {"--batch 0", "batch"},
  };
  for (const auto& c : cases) {
    Result r = run(c.args);
    CAPTURE(c.args);
    CAPTURE(r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    CHECK(r.output.find("error") != std::string::npos);
  }
}

TEST_CASE("a report records the CUDA options of the run: the defaults, TG_CUDA_OPTIONS over them, the flag over both") {
  tg::testing::TempDir dir;
  Result r = tg::testing::run_tool(std::string("env -u TG_CUDA_OPTIONS ") + TG_NOOP_BIN,
                                   "--device cpu --quick --json " + (dir / "d.json"));
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  const tg::harness::Params d = tg::harness::read_report(dir / "d.json").meta.options.at("cuda");
  CHECK(d.size() == 16);
  CHECK(d.at("small_gemm").as_bool());
  CHECK(d.at("skinny_gemm").as_bool());
  CHECK(d.at("gemm_update_streamk").as_bool());
  CHECK_FALSE(d.at("gemm_autotune").as_bool());
  CHECK(d.at("pdl").as_bool());
  CHECK(d.at("conv_cudnn").as_bool() == tg::kBuiltWithCudnn);  // which convolutions ran
  CHECK_FALSE(d.at("conv_benchmark").as_bool());                // and how their algorithms were chosen
  CHECK(d.at("conv_deterministic").as_bool());
  CHECK(d.at("attention_cudnn").as_bool() == tg::kBuiltWithCudnnFrontend);  // which attention path ran
  CHECK(d.at("conv_workspace_mb").as_int() == 32);  // which convolution algorithms could be reached
  CHECK_FALSE(d.at("conv_transforms").as_bool());
  CHECK(d.at("conv_frontend").as_bool() == (tg::kBuiltWithCudnn && tg::kBuiltWithCudnnFrontend));  // which cuDNN API ran them
  CHECK(d.at("staged_copies").as_bool());
  CHECK(d.at("gemm_align_staging").as_bool());  // whether odd-extent GEMMs ran padded
  CHECK_FALSE(d.at("gemm_bias_grad_sums").as_bool());  // how 16-bit bias gradients were summed
  CHECK(d.at("attention_deterministic").as_bool());     // whether the attention backward used atomics
  r = tg::testing::run_tool(std::string("env TG_CUDA_OPTIONS=pdl=0,small_gemm=0 ") + TG_NOOP_BIN,
                            "--device cpu --quick --cuda-options small_gemm=1,gemm_autotune=1 --json " + (dir / "f.json"));
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  const tg::harness::Params f = tg::harness::read_report(dir / "f.json").meta.options.at("cuda");
  CHECK_FALSE(f.at("pdl").as_bool());        // the variable's
  CHECK(f.at("small_gemm").as_bool());       // the flag's, over the variable's
  CHECK(f.at("gemm_autotune").as_bool());    // the flag's
  CHECK(f.at("skinny_gemm").as_bool());      // the default
}

TEST_CASE("a run writes a valid JSON report and its CSV, and a failed write leaves nothing") {
  char tmpl[] = "/tmp/tg_cli_testXXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  Result r = run("--device cpu --quick --json " + dir + "/n.json --csv " + dir + "/n.csv");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("empty_host_function") != std::string::npos);  // the table on stdout
  CHECK(r.output.find("skipped empty_kernel") != std::string::npos);
  auto rep = tg::harness::read_report(dir + "/n.json");
  CHECK(rep.meta.tool == "tg-noop");
  CHECK(rep.meta.device_id == -1);
  CHECK(rep.meta.quick);
  CHECK(rep.measurements.size() >= 2);
  CHECK(rep.notes.size() == 1);
  for (const auto& m : rep.measurements) CHECK(m.stats.count >= 5);
  CHECK(exists(dir + "/n.csv"));
  CHECK_FALSE(exists(dir + "/n.json.tmp"));

  // --repetitions and --min-time 0 give exactly that many samples (max grows to fit).
  r = run("--device cpu --repetitions 3 --warmup 0 --min-time 0 --json " + dir + "/three.json");
  REQUIRE(r.status == 0);
  for (const auto& m : tg::harness::read_report(dir + "/three.json").measurements) CHECK(m.stats.count == 3);

  // A report into a missing folder: a usage error before the run (exit 2), nothing appears.
  r = run("--device cpu --quick --json " + dir + "/nope/n.json");
  CHECK(r.status == 2);
  CHECK(r.output.find("nope/n.json") != std::string::npos);
  CHECK_FALSE(exists(dir + "/nope"));
  std::remove((dir + "/n.json").c_str());
  std::remove((dir + "/n.csv").c_str());
  std::remove((dir + "/three.json").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("SIGINT during the run: exit 130 and no report file") {
  char tmpl[] = "/tmp/tg_cli_sigintXXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  // A long run (10^8 repetitions, 30 s minimum) interrupted after 0.5 s.
  const std::string cmd = std::string(TG_NOOP_BIN) + " --device cpu --repetitions 100000000 --min-time 30 --json " + dir +
                          "/i.json >/dev/null 2>&1 & pid=$!; sleep 0.5; kill -INT $pid; wait $pid";
  const int st = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(st) == 130);
  CHECK_FALSE(exists(dir + "/i.json"));
  CHECK_FALSE(exists(dir + "/i.json.tmp"));
  ::rmdir(dir.c_str());
}

TEST_CASE("numbers are decimal: --batch 010 is ten (not octal 8), 0x10 is refused") {
  tg::testing::TempDir dir;
  Result r = run("--device cpu --quick --batch 010 --json " + dir / "b.json");
  REQUIRE(r.status == 0);
  bool found = false;
  for (const auto& m : tg::harness::read_report(dir / "b.json").measurements)
    if (m.name == "empty_host_function") {
      found = true;
      CHECK(m.params.at("batch").as_int() == 10);
    }
  CHECK(found);
  r = run("--device cpu --quick --batch 0x10 --json " + dir / "h.json");
  CHECK(r.status == 2);
  CHECK(r.output.find("--batch: Value 0x10 is not a decimal integer") != std::string::npos);
  CHECK_FALSE(exists(dir / "h.json"));
}

TEST_CASE("--json '' is a usage error, not a run that writes nothing") {
  Result r = run("--device cpu --quick --json ''");
  CHECK(r.status == 2);
  CHECK(r.output.find("--json '': the file name is empty") != std::string::npos);
  CHECK(r.output.find("device cpu") == std::string::npos);  // refused before the run
}

TEST_CASE("SIGTERM during the run: exit 143, its name on stderr, no report file") {
  tg::testing::TempDir dir;
  const std::string cmd = std::string(TG_NOOP_BIN) + " --device cpu --repetitions 100000000 --min-time 30 --json " +
                          dir / "t.json" + " >/dev/null 2>" + dir / "err" +
                          // The handlers are installed before the "device" line: signal after it.
                          " & pid=$!; for i in $(seq 600); do grep -q 'device' " + dir / "err" +
                          " && break; sleep 0.05; done; kill -TERM $pid; wait $pid";
  const int st = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(st) == 143);
  CHECK(tg::testing::read_text(dir / "err").find("interrupted (SIGTERM): no report was written") != std::string::npos);
  CHECK_FALSE(exists(dir / "t.json"));
  CHECK_FALSE(exists(dir / "t.json.tmp"));
}
