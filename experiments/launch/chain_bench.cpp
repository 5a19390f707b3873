#include "experiments/launch/chain_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "dynamic/trainer.h"
#include "experiments/harness/exec_common.h"
#include "static/compiler.h"

namespace th = tg::harness;

namespace tg::launch {

namespace {

// Inference runs without the loss: the dynamic executor would otherwise run the
// mse_loss op that the static inference graph prunes, one op more than static.
ModelFn chain_model(const ChainPoint& p, bool with_loss) {
  ChainConfig c;
  c.n = p.n_ops;
  c.size = p.size;
  c.with_loss = with_loss;
  return [c](Builder& b) { return chain(b, c); };
}

uint64_t feed_seed(const ChainPoint& p) { return 1000 + static_cast<uint64_t>(p.n_ops); }

double median_of(std::vector<double> v) { return th::summarize(std::move(v)).median; }

// Compile repetitions: enough for a median, few because N = 10000 compiles take a while.
int compile_reps(const th::Experiment& e) { return e.quick() ? 3 : 7; }

// How the static executor compiles a chain point: training or inference, on `be`, with
// or without a CUDA Graph, and the point's passes.
CompileOptions chain_compile_options(const std::shared_ptr<Backend>& be, const ChainPoint& p, bool training,
                                     bool graph) {
  CompileOptions co;
  co.training = training;
  co.backend = be;
  co.use_cuda_graph = graph;
  co.passes = p.passes;
  co.pass_options = p.pass_options;
  return co;
}

// The report's launch param of a static run.
std::string launch_name(const Backend& be, bool graph) {
  return be.kind() == DeviceKind::cuda ? (graph ? "cuda_graph" : "plain") : "cpu_schedule";
}

// Keyed by chain_ops, not n_ops: compile cost is not a per-op launch cost, so the
// per_op_cost figure leaves it out (docs/launch.md shows it as a table).
void report_phases(th::Experiment& e, const std::vector<CompileTimings>& ts, const th::Params& base) {
  bench::report_compile_phases(e.report(), ts, base);
}

}  // namespace

double measure_dynamic(th::Experiment& e, Backend& be, const ChainPoint& p, const std::string& allocator,
                       std::vector<float>* out) {
  TG_NVTX_RANGE("dynamic_chain");
  const ModelFn model = chain_model(p, false);
  const Feeds feeds = bench::model_feeds(model, feed_seed(p));
  DynamicOptions opt;
  opt.inference = true;
  opt.timing = Timing::sampled;  // one op in 16 timed; dynamic/README.md: cost within noise
  DynamicTrainer dyn(model, be, allocator, opt);
  if (out) *out = dyn.run_inference(feeds);
  std::vector<IterationBreakdown> parts;
  const th::LoopOptions lo = e.loop();
  auto samples = th::time_host(lo, [&] {
    dyn.run_inference(feeds);
    parts.push_back(dyn.last_breakdown());
  }, [&] { be.synchronize(); });
  // The first lo.warmup bodies were the untimed warm-up: the breakdown covers the timed ones.
  parts.erase(parts.begin(), parts.begin() + std::min<size_t>(parts.size(), static_cast<size_t>(lo.warmup)));
  const std::string suffix = allocator == "caching" ? "" : "_" + allocator;
  const th::Params params{{"n_ops", p.n_ops}, {"executor", "dynamic"}, {"allocator", allocator}, {"size", p.size}};
  auto& m = e.report().add_time("dynamic_iteration" + suffix, params, std::move(samples));
  const double med = m.stats.median;
  m.extra["us_per_op"] = med / p.n_ops * 1e6;
  const std::pair<const char*, double IterationBreakdown::*> phases[] = {{"build", &IterationBreakdown::build_s},
                                                                         {"alloc", &IterationBreakdown::alloc_s},
                                                                         {"launch", &IterationBreakdown::launch_s},
                                                                         {"other", &IterationBreakdown::other_s}};
  for (const auto& [name, field] : phases) {
    std::vector<double> s;
    for (const IterationBreakdown& b : parts) s.push_back(std::max(0.0, b.*field));
    if (s.empty()) continue;
    auto& pm = e.report().add_time(fmt::format("dynamic_{}{}", name, suffix), params, std::move(s));
    pm.extra["us_per_op"] = pm.stats.median / p.n_ops * 1e6;
  }
  return med;
}

void measure_timing_overhead(th::Experiment& e, Backend& be, const ChainPoint& p) {
  TG_NVTX_RANGE("dynamic_timing_overhead");
  const ModelFn model = chain_model(p, false);
  const Feeds feeds = bench::model_feeds(model, feed_seed(p));
  DynamicOptions off, on;
  off.inference = on.inference = true;
  off.timing = Timing::off;
  on.timing = Timing::sampled;
  DynamicTrainer a(model, be, "caching", off), b(model, be, "caching", on);
  // Interleaved, one iteration of each per round, so that a drift of the machine
  // (clocks, other load) hits both alike; the difference of the medians is the cost.
  const th::LoopOptions lo = e.loop();
  const int rounds = std::max(lo.min_reps, e.quick() ? 20 : 200);
  auto once = [&](DynamicTrainer& t) {
    be.synchronize();
    const double t0 = th::now_s();
    t.run_inference(feeds);
    be.synchronize();
    return th::now_s() - t0;
  };
  trace::LoopWindow window;
  for (int w = 0; w < std::max(1, lo.warmup); ++w) {
    once(a);
    once(b);
  }
  std::vector<double> sa, sb;
  for (int r = 0; r < rounds; ++r) {
    th::throw_if_interrupted();
    window.before_sample(r);
    sa.push_back(once(a));
    sb.push_back(once(b));
  }
  const th::Params params{{"n_ops", p.n_ops}, {"executor", "dynamic"}, {"allocator", "caching"}, {"size", p.size}};
  th::Params pa = params, pb = params;
  pa.emplace("timing", "off");
  pb.emplace("timing", "sampled");
  const double ma = e.report().add_time("dynamic_iteration_timing", pa, std::move(sa)).stats.median;
  const double mb = e.report().add_time("dynamic_iteration_timing", pb, std::move(sb)).stats.median;
  e.report().add_value("timing_overhead", params, (mb / ma - 1.0) * 100.0, "%");
}

StaticResult measure_static(th::Experiment& e, const std::shared_ptr<Backend>& be, const ChainPoint& p, bool graph,
                            const std::vector<float>& expected) {
  TG_NVTX_RANGE("static_chain");
  const ModelFn model = chain_model(p, false);
  const Feeds feeds = bench::model_feeds(model, feed_seed(p));
  const bool cuda = be->kind() == DeviceKind::cuda;
  const std::string launch = launch_name(*be, graph);
  const CompileOptions co = chain_compile_options(be, p, /*training=*/false, graph);
  std::vector<CompileTimings> ts;
  CompiledPlan plan;
  for (int r = 0; r < compile_reps(e); ++r) {
    plan = compile(model, co);
    ts.push_back(plan.timings);
  }
  report_phases(e, ts,
                bench::with_passes({{"chain_ops", p.n_ops}, {"executor", "static"}, {"mode", "inference"}, {"launch", launch}},
                                   p.passes));

  // Check before timing: same kernels, same order, so the same bits.
  plan.run(feeds);
  const std::string diff = bench::bitwise_diff(plan.read(plan.prediction), expected);
  if (!diff.empty())
    throw std::runtime_error(fmt::format("tg-launch: static ({}) and dynamic chain outputs differ at n_ops={}: {}",
                                         launch, p.n_ops, diff));

  const th::Params params =
      bench::with_passes({{"n_ops", p.n_ops}, {"executor", "static"}, {"launch", launch}, {"size", p.size}}, p.passes);
  const std::string suffix = graph || !cuda ? "" : "_plain";
  // What the dynamic iteration does too: feeds in, the chain, the output back to the host.
  auto it = th::time_host(e.loop(), [&] { plan.run(feeds); (void)plan.read(plan.prediction); },
                          [&] { be->synchronize(); });
  auto& m = e.report().add_time("static_iteration" + suffix, params, std::move(it));
  m.extra["us_per_op"] = m.stats.median / p.n_ops * 1e6;
  m.extra["kernels"] = plan.exec->kernels_per_run();
  StaticResult res{m.stats.median, median_of([&] {
                     std::vector<double> v;
                     for (const CompileTimings& t : ts) v.push_back(t.total() * 1e-3);
                     return v;
                   }())};

  // The replay alone (no feeds, no read-back): host wall time, and the GPU's own time.
  auto rp = th::time_host(e.loop(), [&] { plan.run(); }, [&] { be->synchronize(); });
  auto& r = e.report().add_time("static_replay" + suffix, params, std::move(rp));
  r.extra["us_per_node"] = r.stats.median / p.n_ops * 1e6;
#ifdef TWOGRAPH_HAVE_CUDA
  if (cuda) {
    auto g = th::time_gpu(e.loop(), [&](void*) { plan.run(); }, backend_stream(*be));
    auto& gm = e.report().add_time("static_replay_gpu" + suffix, params, std::move(g), "gpu");
    gm.extra["us_per_node"] = gm.stats.median / p.n_ops * 1e6;
  }
#endif
  return res;
}

void measure_training_compile(th::Experiment& e, const std::shared_ptr<Backend>& be, const ChainPoint& p, bool graph) {
  TG_NVTX_RANGE("static_training_compile");
  const CompileOptions co = chain_compile_options(be, p, /*training=*/true, graph);
  std::vector<CompileTimings> ts;
  for (int r = 0; r < compile_reps(e); ++r) ts.push_back(compile(chain_model(p, true), co).timings);
  const std::string launch = launch_name(*be, graph);
  report_phases(e, ts,
                bench::with_passes({{"chain_ops", p.n_ops}, {"executor", "static"}, {"mode", "training"}, {"launch", launch}},
                                   p.passes));
}

}  // namespace tg::launch
