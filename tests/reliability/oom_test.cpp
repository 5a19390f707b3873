// Running out of GPU memory, end to end (label gpu; RUN_SERIAL, see CMakeLists.txt):
// with most of the card taken by a ballast allocation, a model whose parameters,
// gradients and momentum do not fit must fail on both executors with an
// OutOfMemoryError whose message gives the breakdown, give every byte back, and
// leave the process able to train a small model on both executors bitwise equal.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "dynamic/trainer.h"
#include "kernels/cuda/raii.h"
#include "static/compiler.h"
#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#include "tests/reliability/reliability_util.h"

namespace tg {
namespace {

using namespace tg::testing;

constexpr size_t GiB = size_t{1} << 30;
// What the ballast leaves free: room for the small model, the test's extra
// backends (40 MiB each) and cuBLAS, but not for the big model below.
constexpr size_t kLeftFree = 3 * GiB / 2;

// 4 weight matrices of 8192 x 8192 (~256 MiB each): 1 GiB of parameters, as much
// again of gradients and of momentum: 3 GiB needed, 1.5 GiB left. The host-side
// initial values stay at 1 GiB, generated only for what gets allocated.
MlpConfig big_mlp() { return mlp_config(8, 8192, 8192, 5, 10); }

void check_has(const std::string& msg, const char* part) {
  INFO("message: ", msg);
  CHECK_MESSAGE(msg.find(part) != std::string::npos, "missing '", part, "'");
}

TEST_CASE("out of memory: dynamic and static fail with the breakdown, leak nothing, and the process still trains") {
  TG_REQUIRE_GPU();
  auto be = gpu_backend();
  check_small_step_still_runs("nothing (warm-up: loads the kernels before free memory is measured)");

  const size_t free0 = device_free_bytes();
  if (free0 < kLeftFree + 4 * GiB) {
    // Reported as skipped (ctest's SKIP_REGULAR_EXPRESSION), not passed: nothing was tested.
    std::printf("TG_SKIP: only %s of device memory free, too little to leave %zu/2 GiB beside a 4 GiB ballast\n",
                format_bytes(static_cast<int64_t>(free0)).c_str(), kLeftFree / (GiB / 2));
    return;
  }
  cuda::DeviceBuffer ballast = cuda::DeviceBuffer::allocate(free0 - kLeftFree);
  MESSAGE("ballast ", format_bytes(static_cast<int64_t>(ballast.bytes())), ", left free ",
          format_bytes(static_cast<int64_t>(device_free_bytes())));
  const ModelFn model = mlp_model(big_mlp());

  SUBCASE("dynamic (caching allocator)") {
    const size_t before = device_free_bytes();
    std::string msg;
    {
      DynamicTrainer tr(model, *be, "caching", DynamicOptions{});
      const Feeds f = random_feeds(model_input_shapes(model), 11);
      try {
        tr.step(f);
        FAIL("the step of a 3 GiB model fitted in 1.5 GiB");
      } catch (const OutOfMemoryError& e) {
        msg = e.what();
      }
    }  // the trainer, its parameters and its allocator's cache go here
    MESSAGE(msg);
    for (const char* part : {"caching allocator: out of memory on cuda:0", "tried to allocate", "device free",
                             "of total", "allocated by this allocator", "reserved", "by role: parameter"})
      check_has(msg, part);
    check_clean_after("dynamic OOM", before, *be);
    check_small_step_still_runs("the dynamic OOM");
  }

  SUBCASE("static (compile)") {
    const size_t before = device_free_bytes();
    std::string msg;
    try {
      CompileOptions co;
      co.backend = be;  // no parameter store given: compile's own goes with the failed plan
      CompiledPlan p = compile(model, co);
      FAIL("a 3 GiB plan compiled in 1.5 GiB");
    } catch (const OutOfMemoryError& e) {
      msg = e.what();
    }
    MESSAGE(msg);
    for (const char* part : {"out of memory on cuda:0", "tried to allocate", "device free", "of total",
                             "the plan needs arena", "+ inputs", "+ parameters and optimizer state",
                             "allocated so far", "by role: parameter"})
      check_has(msg, part);
    const bool named = msg.find("static plan") != std::string::npos || msg.find("parameter store") != std::string::npos;
    CHECK_MESSAGE(named, "the message names neither the static plan nor its parameter store: ", msg);
    check_clean_after("static OOM", before, *be);
    check_small_step_still_runs("the static OOM");
  }
}

}  // namespace
}  // namespace tg
