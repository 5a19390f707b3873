// tg-launch: what do rebuilding and eager launching cost? A chain of N tiny ops
// run by the dynamic executor (build / alloc / launch / other per op), by the
// static one (CUDA Graph replay, plain launches, compile phases), the break-even
// between them, and the raw CUDA floors measured in the same run.
#include <fmt/format.h>

#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/launch/chain_bench.h"
#include "experiments/harness/exec_common.h"
#include "experiments/launch/raw_floors.h"

namespace th = tg::harness;
using namespace tg;

namespace {

void break_even(th::Experiment& e, int n, const std::string& launch, double dyn_s, const launch::StaticResult& st) {
  const double saved = dyn_s - st.iteration_s;
  const th::Params p{{"chain_ops", n}, {"launch", launch}};
  if (saved <= 0) {
    e.report().skip(fmt::format("break_even chain_ops={} launch={}", n, launch),
                    fmt::format("static is not faster per iteration ({:.2f} us vs dynamic {:.2f} us): it never pays "
                                "back its {:.2f} ms compile", st.iteration_s * 1e6, dyn_s * 1e6, st.compile_s * 1e3));
    return;
  }
  auto& m = e.report().add_value("break_even_iterations", p, st.compile_s / saved, "iterations");
  m.extra["compile_ms"] = st.compile_s * 1e3;
  m.extra["saved_us_per_iteration"] = saved * 1e6;
}

void raw_floors(th::Experiment& e, const std::vector<int>& ns) {
  if (!launch::have_cuda()) {
    e.report().skip("raw_cuda_floors, cold_start", "built without CUDA (TWOGRAPH_CUDA=OFF)");
    return;
  }
  if (!e.on_gpu()) {
    e.report().skip("raw_cuda_floors, cold_start", "no GPU selected (--device cpu, or auto found none): empty "
                                                   "kernels, CUDA Graph replay and first CUDA calls need a device");
    return;
  }
#ifdef TWOGRAPH_HAVE_CUDA
  TG_NVTX_RANGE("raw_floors");
  launch::RawCuda rc;
  auto sync = [&] { rc.sync(); };
  // One kernel then a sync: what an eager framework pays when it reads a result after every op.
  e.report().add_time("raw_eager_sync", {{"n_ops", 1}, {"executor", "raw_eager"}},
                      th::time_host(e.loop(), [&] { rc.launch(1, launch::RawKernel::empty, false); rc.sync(); }));
  std::vector<bool> pdl_modes{false};
  if (rc.pdl_supported()) pdl_modes.push_back(true);
  else e.report().skip("raw_floors pdl=1", "programmatic dependent launch needs compute capability >= 9.0");
  for (int n : ns) {
    for (const launch::RawKernel k : {launch::RawKernel::empty, launch::RawKernel::touch}) {
      for (const bool pdl : pdl_modes) {
        const char* kn = launch::raw_kernel_name(k);
        // N launches back to back, one sync at the end: the host enqueue rate (empty),
        // or the GPU's launch-to-launch latency when that is slower (touch).
        auto& eg = e.report().add_time("raw_eager", {{"n_ops", n}, {"executor", "raw_eager"}, {"kernel", kn},
                                                     {"pdl", pdl ? 1 : 0}},
                                       th::time_host(e.loop(), [&] { rc.launch(n, k, pdl); }, sync));
        eg.extra["us_per_kernel"] = eg.stats.median / n * 1e6;
        launch::RawGraph g(rc, n, k, pdl);
        const th::Params gp{{"n_ops", n}, {"executor", "raw_graph"}, {"kernel", kn}, {"pdl", pdl ? 1 : 0}};
        auto& gh = e.report().add_time("raw_graph", gp, th::time_host(e.loop(), [&] { g.launch(); }, sync));
        gh.extra["us_per_node"] = gh.stats.median / n * 1e6;
        gh.extra["capture_ms"] = g.capture_s * 1e3;
        gh.extra["instantiate_ms"] = g.instantiate_s * 1e3;
        auto& gg = e.report().add_time("raw_graph_gpu", gp,
                                       th::time_gpu(e.loop(), [&](void*) { g.launch(); }, rc.stream()), "gpu");
        gg.extra["us_per_node"] = gg.stats.median / n * 1e6;
        if (n == 1000 && k == launch::RawKernel::empty && !pdl) {
          // The host cost of the cudaGraphLaunch call alone (the GPU work is waited for outside the sample).
          auto call = th::run_loop(e.loop(), [&] {
            rc.sync();
            const double t0 = th::now_s();
            g.launch();
            const double t = th::now_s() - t0;
            rc.sync();
            return t;
          });
          e.report().add_time("cuda_graph_launch_call", {{"graph_nodes", n}}, std::move(call));
        }
      }
    }
  }
  TG_NVTX_RANGE("cold_start");
  th::measure_cold_start(e.report(), th::self_cold_start_argv(e.device()), e.quick() ? 3 : 10);
#endif
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TWOGRAPH_HAVE_CUDA
  // A cold-start child (cold_start.h) must touch nothing before its own steps.
  if (auto rc = th::cold_start_child(argc, argv, launch::cold_start_steps)) return *rc;
#endif
  th::Experiment ex("tg-launch", "What do rebuilding and eager launching cost? (chain of N tiny ops)",
                    "tg-launch --device auto --json docs/results/launch.json --csv launch.csv");
  std::vector<int> ns;
  int64_t size = 64;
  std::string passes = "none";
  ex.add_option("--ops", ns, "Chain lengths (default 1 10 100 1000 10000; --quick: 1 10 100 1000)", 1, 100000);
  ex.add_option("--passes", passes,
                "Graph passes of the static executor: none, all, or a comma list (static/passes); the elementwise "
                "pass fuses the chain itself into a few kernels");
  std::string pass_options;
  bench::add_pass_options_flag(ex, pass_options);
  ex.add_option("--size", size, "Elements per tensor (tiny: each op is pure overhead)", 1, int64_t{1} << 24);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    if (ns.empty()) ns = e.quick() ? std::vector<int>{1, 10, 100, 1000} : std::vector<int>{1, 10, 100, 1000, 10000};
    const PassSet pass_set = bench::parse_passes_flag(passes);
    const PassOptions po = bench::resolve_pass_options(e, pass_options);
    auto be = make_backend(e.device(), e.cuda_options());
    const bool gpu = be->kind() == DeviceKind::cuda;
    if (!gpu)
      e.report().skip("static_cuda_graph_replay", "CPU backend: no CUDA Graph; the static schedule runs as is "
                                                  "(launch=cpu_schedule), and on the CPU 'launch' is the kernel itself");
    th::Progress bar(ns.size(), "tg-launch");
    for (int n : ns) {
      const launch::ChainPoint p{n, size, pass_set, po};
      std::vector<float> expected;
      const double dyn = launch::measure_dynamic(e, *be, p, "caching", &expected);
      if (n == 1000) {
        launch::measure_timing_overhead(e, *be, p);
        launch::measure_dynamic(e, *be, p, "raw", nullptr);
        if (gpu) launch::measure_dynamic(e, *be, p, "pool", nullptr);
        else e.report().skip("dynamic_pool n_ops=1000", "pool (cudaMallocAsync) exists only on a GPU");
      }
      const launch::StaticResult st = launch::measure_static(e, be, p, gpu, expected);
      break_even(e, n, gpu ? "cuda_graph" : "cpu_schedule", dyn, st);
      if (gpu) break_even(e, n, "plain", dyn, launch::measure_static(e, be, p, false, expected));
      launch::measure_training_compile(e, be, p, gpu);
      bar.tick(fmt::format("n={}", n));
    }
    raw_floors(e, ns);
  });
}
