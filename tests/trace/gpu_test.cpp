// GPU spans from CUPTI: a 1000-op chain gives 1000 kernel spans, each after the call that
// launched it on one clock, the host spans still nest, and the NVTX ranges follow the spans
// on a CUDA backend too. Each case prints TG_SKIP without a device.
#include <doctest/doctest.h>

#include <set>

#include "dynamic/trainer.h"
#include "graph/models.h"
#include "kernels/backend.h"
#include "static/compiler.h"
#include "tests/gpu_skip.h"
#include "tests/trace/nvtx_capture.h"
#include "tests/trace/trace_checks.h"
#include "trace/cupti.h"

namespace tg {
namespace {

using testing::json;

constexpr int kOps = 1000;

ModelFn chain_of(int n) {
  ChainConfig c;
  c.n = n;
  c.size = 256;
  c.with_loss = false;
  return [c](Builder& b) { return chain(b, c); };
}
const Feeds kFeeds{{"x", std::vector<float>(256, 0.5f)}};

// A trace with GPU activity around body(); the trace read back.
template <typename Body>
json traced_on_gpu(Backend& be, Body body) {
  trace::start({});
  REQUIRE(trace::start_gpu_activity(0, "test device") == "");
  body();
  be.synchronize();
  const size_t dropped = trace::stop_gpu_activity();
  CHECK(dropped == 0);
  return testing::stop_and_read({{"tool", "test"}, {"backend", "cuda"}, {"device", "0"}, {"gpu_spans", "cupti"}});
}

TEST_CASE("a 1000-op chain replayed as a CUDA graph: one kernel span per op, each after its launch") {
  TG_REQUIRE_GPU();
  auto be = make_backend(0);
  CompileOptions co;
  co.training = false;
  co.backend = be;
  CompiledPlan plan = compile(chain_of(kOps), co);
  plan.run(kFeeds);  // the first replay, untraced
  be->synchronize();
  const json t = traced_on_gpu(*be, [&] { plan.run(kFeeds); });
  CHECK(testing::count_cat(t, "kernel") == static_cast<size_t>(plan.exec->kernels_per_run()));
  CHECK(testing::count_cat(t, "kernel") >= static_cast<size_t>(kOps));
  CHECK(testing::kernel_launch_problem(t) == "");
  CHECK(testing::nesting_problem(t) == "");
  CHECK(testing::events_of(t, 'X', "replay").size() == 1);
}

TEST_CASE("a 1000-op chain run by the dynamic executor: 1000 kernels, 1000 launches before them") {
  TG_REQUIRE_GPU();
  auto be = make_backend(0);
  DynamicOptions o;
  o.inference = true;
  DynamicTrainer dyn(chain_of(kOps), *be, "caching", o);
  dyn.run_inference(kFeeds);
  const json t = traced_on_gpu(*be, [&] { dyn.run_inference(kFeeds); });
  CHECK(testing::count_cat(t, "kernel") == static_cast<size_t>(kOps));
  CHECK(testing::events_of(t, 'X', "launch").size() == static_cast<size_t>(kOps));
  CHECK(testing::kernel_launch_problem(t) == "");
  CHECK(testing::nesting_problem(t) == "");
  CHECK(testing::count_cat(t, "cuda_api") >= static_cast<size_t>(kOps));
  CHECK_FALSE(testing::events_of(t, 'C', "memory: dynamic allocator").empty());
}

TEST_CASE("a training step of a wide MLP: every kernel, cuBLAS's included, has a launch before it") {
  // cuBLAS launches some of its kernels with the driver API, not the runtime's: their launch
  // flows come from CUPTI's driver records.
  TG_REQUIRE_GPU();
  auto be = make_backend(0);
  MlpConfig c;
  c.batch = 512;
  c.in = 1024;
  c.width = 1024;
  c.depth = 3;
  const ModelFn fn = [c](Builder& b) { return mlp(b, c); };
  const Feeds feeds{{"x", std::vector<float>(static_cast<size_t>(c.batch * c.in), 0.25f)},
                    {"target", std::vector<float>(static_cast<size_t>(c.batch * c.out), 0.5f)}};
  DynamicOptions o;
  DynamicTrainer dyn(fn, *be, "caching", o);
  dyn.step(feeds);
  const json t = traced_on_gpu(*be, [&] { dyn.step(feeds); });
  CHECK(testing::count_cat(t, "kernel") >= 6);
  CHECK(testing::kernel_launch_problem(t) == "");
  CHECK(testing::nesting_problem(t) == "");
}

TEST_CASE("on a CUDA backend each span is an NVTX range of the same name") {
  TG_REQUIRE_GPU();
  auto be = make_backend(0);
  testing::take_nvtx_ranges();
  trace::start({});
  DynamicOptions o;
  o.inference = true;
  DynamicTrainer dyn(chain_of(30), *be, "caching", o);
  dyn.run_inference(kFeeds);
  CompileOptions co;
  co.training = false;
  co.backend = be;
  CompiledPlan plan = compile(chain_of(30), co);
  plan.run(kFeeds);
  be->synchronize();
  const json t = testing::stop_and_read();
  const testing::NvtxRanges r = testing::take_nvtx_ranges();
  std::multiset<std::string> spans, ranges(r.pushed.begin(), r.pushed.end());
  for (const json& e : testing::events_of(t, 'X')) spans.insert(e["name"].get<std::string>());
  CHECK(ranges == spans);
  CHECK(spans.count("capture") == 1);
  CHECK(spans.count("instantiate") == 1);
  CHECK(spans.count("replay") == 1);
  CHECK(r.popped == static_cast<int>(r.pushed.size()));
}

}  // namespace
}  // namespace tg
