// tg-shapes: an NLP-like workload whose sequence length changes every iteration.
// The model is an MLP applied per token: x [len, in] -> [len, out], mse loss, one
// SGD-momentum training step per iteration. Dynamic rebuilds per iteration and does
// not care about the shape; the four static strategies (static/shape_strategy.h)
// each pay for it differently. Checked first: every strategy's losses and final
// parameters against dynamic's, bitwise (bucket: with the batch-invariant matmul).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "dynamic/trainer.h"
#include "experiments/harness/exec_common.h"
#include "experiments/harness/harness.h"
#include "graph/init.h"
#include "kernels/gemm/gemm_mode.h"
#include "static/shape_strategy.h"

namespace th = tg::harness;
using namespace tg;

namespace {

constexpr int64_t kMinLen = 8, kMaxLen = 128;

struct Model {
  int64_t in = 64, width = 256, out = 64;
  int depth = 4;
  ShapedModelFn at() const {
    return [m = *this](int64_t len) -> ModelFn {
      MlpConfig c;
      c.batch = len;  // one row per token
      c.in = m.in;
      c.width = m.width;
      c.depth = m.depth;
      c.out = m.out;
      return [c](Builder& b) { return mlp(b, c); };
    };
  }
};

// Deterministic lengths (splitmix64). Skewed like real sentence lengths: the
// minimum of two uniform draws puts most mass on short sequences, with a long tail
// to kMaxLen. `distinct` > 0 restricts the lengths to that many values spread
// evenly over [kMinLen, kMaxLen] (the sweep's x axis).
struct Lengths {
  uint64_t state;
  int distinct;
  uint64_t next_u64() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t next() {
    const double u = std::min(next_u64() >> 11, next_u64() >> 11) * 0x1.0p-53;
    if (distinct <= 0) return kMinLen + static_cast<int64_t>(u * static_cast<double>(kMaxLen - kMinLen + 1));
    const int k = std::min(distinct - 1, static_cast<int>(u * distinct));
    return distinct == 1 ? kMaxLen / 2 : kMinLen + (kMaxLen - kMinLen) * k / (distinct - 1);
  }
};

std::vector<int64_t> make_lengths(int n, int distinct, uint64_t seed) {
  Lengths g{seed, distinct};
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(g.next());
  return v;
}

// Feeds per length, made once: the experiment times the executors, not the RNG.
class FeedBank {
 public:
  explicit FeedBank(ShapedModelFn m) : runner_(std::move(m), ShapeStrategyOptions{}) {}
  const Feeds& at(int64_t len) {
    auto it = feeds_.find(len);
    if (it != feeds_.end()) return it->second;
    Feeds f;
    uint64_t salt = 0;
    for (const auto& [name, s] : runner_.input_shapes(len)) {
      std::vector<float> v(static_cast<size_t>(s.numel()));
      random_fill(v, 7000 + static_cast<uint64_t>(len) * 131 + salt++);
      f[name] = std::move(v);
    }
    return feeds_[len] = std::move(f);
  }

 private:
  ShapeStrategyRunner runner_;  // used only for input_shapes (records, never compiles)
  std::map<int64_t, Feeds> feeds_;
};

const std::vector<ShapeStrategy> kStrategies = {ShapeStrategy::recapture, ShapeStrategy::cache, ShapeStrategy::bucket,
                                                ShapeStrategy::update};

// --passes and --pass-options: the static plans' graph passes (static/passes), every
// strategy alike.
PassSet g_passes = PassSet::none();
PassOptions g_pass_options;

ShapeStrategyOptions strategy_options(ShapeStrategy s, const std::shared_ptr<Backend>& be, size_t cache_capacity) {
  ShapeStrategyOptions o;
  o.strategy = s;
  o.compile.backend = be;
  o.compile.passes = g_passes;
  o.compile.pass_options = g_pass_options;
  o.cache_capacity = cache_capacity;
  o.buckets = {16, 32, 64, 128};  // powers of two over the length range
  return o;
}

std::string first_mismatch(const std::vector<float>& a, const std::vector<float>& b, bool exact) {
  if (exact) return bench::bitwise_diff(a, b);
  if (a.size() != b.size()) return fmt::format("sizes differ: {} vs {}", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= 1e-5f + 1e-4f * std::fabs(b[i])))
      return fmt::format("[{}] {:.9g} vs {:.9g} (atol 1e-5 + rtol 1e-4)", i, a[i], b[i]);
  return "";
}

// The dynamic executor at a length that changes: the model function reads the
// current length when it runs, which is all define-by-run needs (parameters are
// found by name, so they carry over between shapes).
struct DynamicAtLength {
  std::shared_ptr<int64_t> len = std::make_shared<int64_t>(kMinLen);
  DynamicTrainer trainer;
  DynamicAtLength(const Model& m, Backend& be)
      : trainer([len = len, at = m.at()](Builder& b) { return at(*len)(b); }, be, "caching", DynamicOptions{}) {}
  float step(int64_t l, const Feeds& f) {
    *len = l;
    return trainer.step(f);
  }
};

// Every strategy against dynamic over a short sequence with repeats, both from the
// same initial parameters: per-step loss and, at the end, every parameter and
// velocity, bit for bit. bucket twice: with the batch-invariant matmul
// (kernels/gemm/gemm_mode.h, both executors) it must be exact too; with the vendor
// BLAS, which may round a row differently for another row count, to f32 rounding.
void check_results(th::Experiment& e, const std::shared_ptr<Backend>& be, const Model& m, FeedBank& bank) {
  TG_NVTX_RANGE("check_results");
  const std::vector<int64_t> lens = {24, 100, 8, 100, 57, 24, 128, 8, 57};
  std::vector<std::pair<ShapeStrategy, bool>> runs;
  for (ShapeStrategy s : kStrategies) runs.emplace_back(s, false);
  runs.emplace_back(ShapeStrategy::bucket, true);
  for (const auto& [s, invariant] : runs) {
    // With passes, a CUDA GEMM's epilogue rounds otherwise than the unfused ops, except
    // in the batch-invariant mode (which runs the fused ops unfused); on the CPU the fused
    // kernels give the unfused bits.
    const bool fused_rounding = !g_passes.empty() && be->kind() == DeviceKind::cuda && !invariant;
    const bool exact = (s != ShapeStrategy::bucket || invariant) && !fused_rounding;
    const kernels::BatchInvariantMatmul mode(invariant);
    const char* matmul = invariant ? "batch_invariant" : "vendor";
    ShapeStrategyRunner runner(m.at(), strategy_options(s, be, 3));
    DynamicAtLength dyn(m, *be);
    trace::LoopWindow window;
    for (size_t i = 0; i < lens.size(); ++i) {
      th::throw_if_interrupted();
      window.before_sample(static_cast<int>(i));
      const Feeds& f = bank.at(lens[i]);
      const float ls = runner.step(lens[i], f).loss;
      const float ld = dyn.step(lens[i], f);
      const std::string d = first_mismatch({ls}, {ld}, exact);
      if (!d.empty())
        throw std::runtime_error(fmt::format("tg-shapes: {} ({} matmul) loss differs from dynamic at step {} (length "
                                             "{}): {}", shape_strategy_name(s), matmul, i, lens[i], d));
    }
    int checked = 0;
    for (const std::string& name : dyn.trainer.parameter_names()) {
      for (const std::string& n : {name, name + ".velocity"}) {
        const std::string d = first_mismatch(runner.parameter(n), dyn.trainer.parameter(n), exact);
        if (!d.empty())
          throw std::runtime_error(fmt::format("tg-shapes: {} ({} matmul) parameter '{}' differs from dynamic after "
                                               "{} steps: {}", shape_strategy_name(s), matmul, n, lens.size(), d));
        ++checked;
      }
    }
    e.report().add_value("check_vs_dynamic",
                         bench::with_passes({{"strategy", shape_strategy_name(s)}, {"exact", exact}, {"matmul", matmul}},
                                            g_passes),
                         static_cast<double>(checked), "tensors", "higher");
  }
}

struct RunStats {
  std::vector<double> iter_s;  // per iteration, compile included
  double compile_s = 0;        // total
  int compiles = 0, updates = 0, reinstantiations = 0, hits = 0;
  double waste_sum = 0;
  size_t max_graphs = 0;
  int64_t max_bytes = 0;
};

RunStats run_dynamic(const std::shared_ptr<Backend>& be, const Model& m, FeedBank& bank, const std::vector<int64_t>& lens) {
  RunStats r;
  DynamicAtLength dyn(m, *be);
  trace::LoopWindow window;
  for (int64_t l : lens) {
    th::throw_if_interrupted();  // the steps are this experiment's own loop, not run_loop's
    window.before_sample(static_cast<int>(r.iter_s.size()));
    const Feeds& f = bank.at(l);
    const auto t0 = std::chrono::steady_clock::now();
    dyn.step(l, f);  // reads the loss back: synchronized
    r.iter_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return r;
}

RunStats run_strategy(ShapeStrategy s, const std::shared_ptr<Backend>& be, const Model& m, FeedBank& bank,
                      const std::vector<int64_t>& lens, size_t cache_capacity) {
  RunStats r;
  ShapeStrategyRunner runner(m.at(), strategy_options(s, be, cache_capacity));
  trace::LoopWindow window;
  for (int64_t l : lens) {
    th::throw_if_interrupted();
    window.before_sample(static_cast<int>(r.iter_s.size()));
    const ShapeStepReport rep = runner.step(l, bank.at(l));
    r.iter_s.push_back(rep.iteration_ms * 1e-3);
    r.compile_s += rep.compile_ms * 1e-3;
    r.compiles += rep.compiled;
    r.hits += rep.cache_hit;
    if (rep.compiled && s == ShapeStrategy::update && r.compiles > 1) (rep.graph_updated ? r.updates : r.reinstantiations)++;
    r.waste_sum += rep.padding_waste;
    r.max_graphs = std::max(r.max_graphs, rep.graphs_cached);
    r.max_bytes = std::max(r.max_bytes, rep.cached_bytes);
  }
  return r;
}

th::Measurement& record(th::Experiment& e, const std::string& name, th::Params p, const RunStats& r) {
  const double n = static_cast<double>(r.iter_s.size());
  auto& meas = e.report().add_time(name, std::move(p), r.iter_s);
  meas.extra["compile_ms_amortized"] = r.compile_s * 1e3 / n;
  meas.extra["compiles"] = r.compiles;
  meas.extra["cache_hits"] = r.hits;
  meas.extra["padding_waste"] = r.waste_sum / n;
  meas.extra["graphs_cached_max"] = static_cast<double>(r.max_graphs);
  meas.extra["cached_MiB_max"] = static_cast<double>(r.max_bytes) / (1 << 20);
  return meas;
}

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-shapes", "What do static graphs pay for variable shapes? (sequence length per iteration)",
                    "tg-shapes --device auto --quick --json docs/results/shapes.json");
  int iterations = 0;
  int64_t cache_capacity = 16;
  ex.add_option("--iterations", iterations, "Training steps per strategy (0: 400, 80 with --quick)", 0, 1000000);
  ex.add_option("--cache-capacity", cache_capacity, "cache strategy: plans kept at most", 1, 4096);
  std::string passes = "none";
  ex.add_option("--passes", passes, "Graph passes of every static plan: none, all, or a comma list (static/passes)");
  std::string pass_options;
  bench::add_pass_options_flag(ex, pass_options);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const bool gpu = e.on_gpu();
    const int n = iterations > 0 ? iterations : (e.quick() ? (gpu ? 120 : 60) : 400);
    g_passes = bench::parse_passes_flag(passes);
    g_pass_options = bench::resolve_pass_options(e, pass_options);
    const std::shared_ptr<Backend> be = make_backend(e.device(), e.cuda_options());
    const Model m;
    FeedBank bank(m.at());
    th::Progress bar(3, "tg-shapes");
    check_results(e, be, m, bank);
    bar.tick("checked");
    if (!gpu) {
      e.report().skip("update: cudaGraphExecUpdate vs re-instantiation",
                      "no GPU: the CPU backend has no CUDA graph instance to update, so `update` runs as recapture");
      e.report().skip("CUDA graph capture/replay cost", "no GPU: on the CPU a static plan runs its schedule directly; "
                                                      "compile = record + autodiff + plan + schedule, no capture");
    }
    // 1) The skewed length distribution, every length in [8, 128] possible.
    {
      const std::vector<int64_t> lens = make_lengths(n, 0, 42);
      int64_t tokens = 0;
      for (int64_t l : lens) tokens += l;
      const th::Params base =
          bench::with_passes({{"distribution", "skewed_min_of_2_uniform_8_128"}, {"iterations", n}}, g_passes);
      auto with = [&](std::string strat) { th::Params p = base; p.insert_or_assign("strategy", th::Param(std::move(strat))); return p; };
      auto& d = record(e, "iteration", with("dynamic"), run_dynamic(be, m, bank, lens));
      d.extra["mean_len"] = static_cast<double>(tokens) / n;
      for (ShapeStrategy s : kStrategies) {
        const RunStats r = run_strategy(s, be, m, bank, lens, static_cast<size_t>(cache_capacity));
        auto& meas = record(e, "iteration", with(shape_strategy_name(s)), r);
        if (s == ShapeStrategy::update && gpu) {
          meas.extra["graph_exec_updates"] = r.updates;
          meas.extra["reinstantiations"] = r.reinstantiations;
        }
        if (s == ShapeStrategy::cache) meas.extra["cache_capacity"] = static_cast<double>(cache_capacity);
      }
      bar.tick("skewed");
    }
    // 2) Sweep: how many distinct lengths occur. Few -> caching pays off; many ->
    //    recompiles dominate and the static strategies fall behind dynamic.
    {
      std::vector<int> ds = e.quick() ? std::vector<int>{1, 4, 16, 64} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 121};
      const int sweep_n = e.quick() ? n / 2 : n;
      for (int dcount : ds) {
        const std::vector<int64_t> lens = make_lengths(sweep_n, dcount == 121 ? 0 : dcount, 1000 + dcount);
        auto p = [&](std::string strat) {
          return bench::with_passes(
              {{"distinct_shapes", int64_t{dcount}}, {"iterations", int64_t{sweep_n}}, {"strategy", std::move(strat)}},
              g_passes);
        };
        const double dyn = record(e, "sweep_iteration", p("dynamic"), run_dynamic(be, m, bank, lens)).stats.mean;
        for (ShapeStrategy s : kStrategies) {
          auto& meas = record(e, "sweep_iteration", p(shape_strategy_name(s)), run_strategy(s, be, m, bank, lens, static_cast<size_t>(cache_capacity)));
          meas.extra["mean_vs_dynamic"] = meas.stats.mean / dyn;  // < 1: static wins over the whole run
        }
      }
      bar.tick("sweep");
    }
  });
}
