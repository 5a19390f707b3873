// Every span is an NVTX range of the same name (CUDA builds): a static injection
// (nvtx_capture.cpp) plays the tool, so this runs with or without a GPU.
#include <doctest/doctest.h>

#include <set>

#include "dynamic/trainer.h"
#include "graph/models.h"
#include "static/compiler.h"
#include "tests/trace/nvtx_capture.h"
#include "tests/trace/trace_checks.h"

namespace tg {
namespace {

using testing::json;

// A chain of 12 ops run by both executors, on the CPU backend.
void run_both_executors() {
  ChainConfig c;
  c.n = 12;
  c.size = 16;
  const ModelFn model = [c](Builder& b) { return chain(b, c); };
  const Feeds feeds{{"x", std::vector<float>(16, 0.5f)}, {"target", std::vector<float>(16, 0.25f)}};
  auto be = std::shared_ptr<Backend>(make_cpu_backend());
  DynamicTrainer dyn(model, *be, "caching");
  dyn.step(feeds);
  CompileOptions co;
  co.backend = be;
  CompiledPlan plan = compile(model, co);
  plan.step(feeds);
}

TEST_CASE("each span is an NVTX range of the same name, pushed and popped") {
  testing::take_nvtx_ranges();
  trace::start({});
  run_both_executors();
  const json t = testing::stop_and_read();
  const testing::NvtxRanges r = testing::take_nvtx_ranges();
  std::multiset<std::string> spans, ranges(r.pushed.begin(), r.pushed.end());
  for (const json& e : testing::events_of(t, 'X')) spans.insert(e["name"].get<std::string>());
  REQUIRE(spans.size() > 100);  // the executors' phases and every op's steps
  CHECK(ranges == spans);
  CHECK(r.popped == static_cast<int>(r.pushed.size()));
  for (const char* phase : {"graph build", "autodiff", "plan", "schedule", "run schedule", "dynamic training step",
                            "backward", "build", "allocate", "launch", "feed", "read back"})
    CHECK_MESSAGE(spans.count(phase) > 0, phase);
}

TEST_CASE("with an NVTX tool and no trace, the ranges are still pushed") {
  REQUIRE_FALSE(trace::active());
  testing::take_nvtx_ranges();
  run_both_executors();
  const testing::NvtxRanges r = testing::take_nvtx_ranges();
  CHECK(r.pushed.size() > 100);
  CHECK(r.popped == static_cast<int>(r.pushed.size()));
}

}  // namespace
}  // namespace tg
