// tg-noop: the harness's own smoke test and the floor under every other number. It
// times an empty host function (the cost of the timing itself) and, with a GPU, an
// empty kernel launch, end to end through the CLI, the loop and the report files.
#include <fmt/format.h>

#include <atomic>

#include "experiments/harness/harness.h"
#include "experiments/noop/noop_kernel.h"
#include "graph/quote.h"

namespace th = tg::harness;

namespace {
// A call the optimizer cannot remove: a relaxed atomic add is the cheapest observable work.
std::atomic<int64_t> g_sink{0};
void empty_host_function() { g_sink.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-noop", "Times an empty host function and an empty CUDA kernel launch (harness smoke test)",
                    "tg-noop --device auto --quick --json noop.json --csv noop.csv");
  int64_t batch = 1000;
  ex.add_option("--batch", batch, "Calls per sample for the host function", 1, 100000000);
  // For the harness's own tests (docs/reliability.md, "Faults"): fail on purpose
  // after the measurements, to show what a failed run prints and reports.
  std::string fault = "none";
  ex.add_option("--fault", fault,
                "Test only: after measuring, fail on purpose: none, sticky (a kernel writes through an invalid "
                "pointer: the CUDA context is lost) or oom (cudaMalloc of more than the card has); needs a GPU");
  ex.check_flags([&] {
    if (fault != "none" && fault != "sticky" && fault != "oom")
      throw th::UsageError(fmt::format("--fault must be none, sticky or oom, got {}", tg::quote_name(fault)));
  });
  return ex.run(argc, argv, [&](th::Experiment& e) {
    if (fault != "none" && (!tg::noop::have_cuda_build() || !e.on_gpu()))
      throw th::UsageError(fmt::format("--fault {} needs a GPU (--device N){}", fault,
                                       tg::noop::have_cuda_build() ? "" : "; this build has no CUDA"));
    th::Progress bar(3, "tg-noop");
    {
      TG_NVTX_RANGE("empty_host_function");
      auto s = th::time_host(e.loop(batch), empty_host_function);
      e.report().add_time("empty_host_function", {{"batch", batch}}, std::move(s));
      bar.tick("host");
    }
    // The timer's own floor: one sample of an empty body.
    {
      auto s = th::time_host(e.loop(), [] {});
      e.report().add_time("timer_floor", {{"batch", 1}}, std::move(s));
      bar.tick("timer");
    }
    if (!tg::noop::have_cuda_build()) {
      e.report().skip("empty_kernel", "built without CUDA (TWOGRAPH_CUDA=OFF)");
    } else if (!e.on_gpu()) {
      e.report().skip("empty_kernel", "no GPU selected (--device cpu, or auto found none)");
    } else {
      TG_NVTX_RANGE("empty_kernel");
      // Host view: launch then synchronize, per launch (what an eager framework pays with a sync).
      auto host = th::time_host(e.loop(), [] { tg::noop::launch_empty_kernel(nullptr); },
                                [] { tg::noop::synchronize(); });
      e.report().add_time("empty_kernel_launch_sync", {{"executor", "eager"}}, std::move(host));
      // Back-to-back launches: the host enqueue rate.
      auto b2b = th::time_host(e.loop(100), [] { tg::noop::launch_empty_kernel(nullptr); },
                               [] { tg::noop::synchronize(); });
      e.report().add_time("empty_kernel_back_to_back", {{"executor", "eager"}}, std::move(b2b));
      auto gpu = tg::noop::time_empty_kernel_gpu(e.loop(100));
      e.report().add_time("empty_kernel_gpu_time", {{"executor", "eager"}}, std::move(gpu), "gpu");
    }
    bar.tick("kernel");
    if (fault == "sticky") tg::noop::fault_sticky();
    if (fault == "oom") tg::noop::fault_oom(e.device());
  });
}
