// tg-shapes: an NLP-like workload whose sequence length changes every iteration.
// The default model is an MLP applied per token: x [len, in] -> [len, out], mse loss, one
// SGD-momentum training step per iteration. With --models gpt2, a GPT-2 language model
// (the two-layer one on the CPU, GPT-2 small on a GPU, as tg-train sizes them) over a batch
// of sequences of the iteration's length, each itself right-padded to a length of its own
// (the key lengths of its attention, graph/attention.h), cross_entropy ignoring the labels
// past it. With the CNNs of tg-train (--models resnet,resnet18,resnet50,vgg16: workload.h,
// cnn_workloads.cpp), the batch of a training run and of a serving run, and the image size
// of a multi-scale training run (the ResNets). Dynamic rebuilds per iteration and does not
// care about the shape; the four static strategies (static/shape_strategy.h) each pay for
// it differently; bucket pads the sequence (or batch) to its bucket, the padded labels
// ignore_index. Checked first: every strategy's
// losses and final parameters against dynamic's, bitwise (the MLP's bucket: with the
// batch-invariant matmul; GPT-2's bucket: to f32 rounding, its padded rows interleaved
// with the real ones in the sums over rows; the CNNs' bucket: to the convolutions' rounding
// at another batch).
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
#include "experiments/shapes/workload.h"
#include "graph/init.h"
#include "kernels/gemm/gemm_mode.h"
#include "static/shape_strategy.h"

namespace th = tg::harness;
using namespace tg;
using shapes::Workload;

namespace {

// The per-token MLP: x [len, in] -> [len, out], depth 4, width 256.
Workload mlp_workload() {
  Workload w;
  w.at = [](int64_t len) -> ModelFn {
    MlpConfig c;
    c.batch = len;  // one row per token
    c.in = 64;
    c.width = 256;
    c.depth = 4;
    c.out = 64;
    return [c](Builder& b) { return mlp(b, c); };
  };
  return w;
}

// GPT-2 as tg-train sizes it: on a GPU GPT-2 small at batch 4 over lengths 16..512; on the
// CPU a two-layer GPT-2 of width 64 at batch 4 over lengths 4..64, whose steps take
// milliseconds there. The key lengths are an input (padding on).
Workload gpt2_workload(bool gpu) {
  Workload w;
  Gpt2Config g = gpu ? gpt2_small_config() : gpt2_tiny_config();
  g.batch = 4;
  g.padding = true;
  w.model = gpu ? "gpt2_small" : "gpt2_tiny";
  w.min_len = gpu ? 16 : 4;
  w.max_len = gpu ? 512 : 64;
  w.buckets = gpu ? std::vector<int64_t>{64, 128, 256, 512} : std::vector<int64_t>{8, 16, 32, 64};
  w.gpt2 = g;
  w.at = [g](int64_t len) -> ModelFn {
    Gpt2Config c = g;
    c.seq = len;
    return [c](Builder& b) { return gpt2(b, c); };
  };
  return w;
}

// Deterministic lengths (splitmix64). Skewed like real sentence lengths: the
// minimum of two uniform draws puts most mass on short sequences, with a long tail
// to max_len. `distinct` > 0 restricts the lengths to that many values spread
// evenly over [min_len, max_len] (the sweep's x axis).
struct Lengths {
  uint64_t state;
  int distinct;
  int64_t min_len, max_len;
  uint64_t next_u64() { return shapes::splitmix64(state); }
  int64_t next() {
    const double u = std::min(next_u64() >> 11, next_u64() >> 11) * 0x1.0p-53;
    if (distinct <= 0) return min_len + static_cast<int64_t>(u * static_cast<double>(max_len - min_len + 1));
    const int k = std::min(distinct - 1, static_cast<int>(u * distinct));
    return distinct == 1 ? max_len / 2 : min_len + (max_len - min_len) * k / (distinct - 1);
  }
};

std::vector<int64_t> make_lengths(const Workload& w, int n, int distinct, uint64_t seed) {
  if (w.draw && distinct == 0) return w.draw(n);
  Lengths g{seed, distinct, w.min_len, w.max_len};
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(g.next());
  return v;
}

// Feeds per length, made once: the experiment times the executors, not the RNG. GPT-2's:
// ids and labels in [0, vocab), each sequence's key length in [1, len] (a right-padded batch)
// and its labels past it ignore_index. The CNNs': images in [-1, 1), labels in [0, classes).
class FeedBank {
 public:
  explicit FeedBank(const Workload& w) : w_(w), runner_(w.at, ShapeStrategyOptions{}) {}
  const Feeds& at(int64_t len) {
    auto it = feeds_.find(len);
    if (it != feeds_.end()) return it->second;
    Feeds f;
    uint64_t salt = 0;
    const uint64_t seed = 7000 + static_cast<uint64_t>(len) * 131;
    if (w_.is_cnn()) return feeds_[len] = bench::model_feeds(w_.at(len), seed, w_.classes);
    for (const auto& [name, s] : runner_.input_shapes(len)) {
      std::vector<float> v(static_cast<size_t>(s.numel()));
      if (w_.is_gpt2() && name == "lengths") {
        random_labels(v, seed + salt++, len);
        for (float& x : v) x += 1.0f;
      } else if (w_.is_gpt2()) {
        random_labels(v, seed + salt++, w_.gpt2.vocab);  // ids and labels
      } else {
        random_fill(v, seed + salt++);
      }
      f[name] = std::move(v);
    }
    if (w_.is_gpt2()) {
      const std::vector<float>& lengths = f.at("lengths");
      std::vector<float>& labels = f.at("labels");
      for (size_t b = 0; b < lengths.size(); ++b)
        for (int64_t t = static_cast<int64_t>(lengths[b]); t < len; ++t)
          labels[b * static_cast<size_t>(len) + static_cast<size_t>(t)] = static_cast<float>(w_.gpt2.ignore_index);
    }
    return feeds_[len] = std::move(f);
  }

 private:
  const Workload& w_;
  ShapeStrategyRunner runner_;  // used only for input_shapes (records, never compiles)
  std::map<int64_t, Feeds> feeds_;
};

const std::vector<ShapeStrategy> kStrategies = {ShapeStrategy::recapture, ShapeStrategy::cache, ShapeStrategy::bucket,
                                                ShapeStrategy::update};

// --passes and --pass-options: the static plans' graph passes (static/passes), every
// strategy alike.
PassSet g_passes = PassSet::none();
PassOptions g_pass_options;

ShapeStrategyOptions strategy_options(const Workload& w, ShapeStrategy s, const std::shared_ptr<Backend>& be,
                                     size_t cache_capacity) {
  ShapeStrategyOptions o;
  o.strategy = s;
  o.compile.training = w.training;
  o.compile.backend = be;
  o.compile.passes = g_passes;
  o.compile.pass_options = g_pass_options;
  o.cache_capacity = cache_capacity;
  o.buckets = w.buckets;
  return o;
}

// How a strategy's results are compared with dynamic's: bit for bit, or within
// atol + rtol |dynamic|, both powers of ten (given by their exponents, so they print as 1e-5).
struct Tolerance {
  bool exact = true;
  int atol_exp = -5, rtol_exp = -4;
  float atol() const { return std::pow(10.0f, static_cast<float>(atol_exp)); }
  float rtol() const { return std::pow(10.0f, static_cast<float>(rtol_exp)); }
  std::string str() const { return exact ? "bitwise" : fmt::format("atol 1e{} + rtol 1e{}", atol_exp, rtol_exp); }
};

std::string first_mismatch(const std::vector<float>& a, const std::vector<float>& b, const Tolerance& tol) {
  if (tol.exact) return bench::bitwise_diff(a, b);
  if (a.size() != b.size()) return fmt::format("sizes differ: {} vs {}", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol.atol() + tol.rtol() * std::fabs(b[i])))
      return fmt::format("[{}] {:.9g} vs {:.9g} ({})", i, a[i], b[i], tol.str());
  return "";
}

// The dynamic executor at a length that changes: the model function reads the
// current length when it runs, which is all define-by-run needs (parameters are
// found by name, so they carry over between shapes). An inference workload's step is a
// forward, untaped.
struct DynamicAtLength {
  std::shared_ptr<int64_t> len;
  DynamicTrainer trainer;
  DynamicAtLength(const Workload& w, Backend& be)
      : len(std::make_shared<int64_t>(w.min_len)),
        trainer([len = len, at = w.at](Builder& b) { return at(*len)(b); }, be, "caching", options(w)) {}
  float step(int64_t l, const Feeds& f) {
    *len = l;
    return trainer.step(f);
  }
  std::vector<float> infer(int64_t l, const Feeds& f) {
    *len = l;
    return trainer.run_inference(f);
  }
  static DynamicOptions options(const Workload& w) {
    DynamicOptions o;
    o.inference = !w.training;
    return o;
  }
};

// The strategies a workload runs: all four, less bucket where it cannot pad (a note says why).
std::vector<ShapeStrategy> strategies(const Workload& w) {
  std::vector<ShapeStrategy> out;
  for (ShapeStrategy s : kStrategies)
    if (s != ShapeStrategy::bucket || w.no_bucket.empty()) out.push_back(s);
  return out;
}

// Every strategy against dynamic over a short sequence with repeats, both from the same
// initial parameters: per-step loss (a serving workload: per-step prediction) and, at the
// end, every parameter and velocity, bit for bit. The MLP's bucket twice: with the
// batch-invariant matmul (kernels/gemm/gemm_mode.h, both executors) it must be exact too;
// with the vendor BLAS, which may round a row differently for another row count, to f32
// rounding. GPT-2's bucket to f32 rounding (its padding is interleaved with the real rows).
// The CNNs' bucket to a looser tolerance: a convolution's algorithm (cuDNN's, the GEMMs
// under the CPU's) may change with the batch and round otherwise, and the rounding goes
// through every layer of a deep network and, in training, through the updates.
void check_results(th::Experiment& e, const std::shared_ptr<Backend>& be, const Workload& w, FeedBank& bank) {
  TG_NVTX_RANGE("check_results");
  // Over the extent's range: its ends, repeats, and extents in between.
  std::vector<int64_t> lens = w.check_extents;
  if (lens.empty())
    for (int64_t l : {24, 100, 8, 100, 57, 24, 128, 8, 57})
      lens.push_back(w.min_len + (l - 8) * (w.max_len - w.min_len) / 120);
  std::vector<std::pair<ShapeStrategy, bool>> runs;
  for (ShapeStrategy s : strategies(w)) runs.emplace_back(s, false);
  if (w.model == "mlp") runs.emplace_back(ShapeStrategy::bucket, true);
  for (const auto& [s, invariant] : runs) {
    // With passes, a CUDA GEMM's epilogue rounds otherwise than the unfused ops, except
    // in the batch-invariant mode (which runs the fused ops unfused); on the CPU the fused
    // kernels give the unfused bits.
    const bool fused_rounding = !g_passes.empty() && be->kind() == DeviceKind::cuda && !invariant;
    Tolerance tol;
    tol.exact = (s != ShapeStrategy::bucket || (invariant && w.model == "mlp")) && !fused_rounding;
    if (w.is_cnn() && s == ShapeStrategy::bucket) {
      tol.atol_exp = -4;
      tol.rtol_exp = -3;
    }
    const kernels::BatchInvariantMatmul mode(invariant);
    const char* matmul = invariant ? "batch_invariant" : "vendor";
    ShapeStrategyRunner runner(w.at, strategy_options(w, s, be, 3));
    DynamicAtLength dyn(w, *be);
    trace::LoopWindow window;
    int checked = 0;
    for (size_t i = 0; i < lens.size(); ++i) {
      th::throw_if_interrupted();
      window.before_sample(static_cast<int>(i));
      const Feeds& f = bank.at(lens[i]);
      const std::string what = w.training ? "loss" : "prediction";
      std::string d;
      if (w.training) {
        const float ls = runner.step(lens[i], f).loss;
        const float ld = dyn.step(lens[i], f);
        d = first_mismatch({ls}, {ld}, tol);
      } else {
        runner.step(lens[i], f);
        const std::vector<float> ps = runner.prediction();
        d = first_mismatch(ps, dyn.infer(lens[i], f), tol);
        ++checked;
      }
      if (!d.empty())
        throw std::runtime_error(fmt::format("tg-shapes: {}{} ({} matmul) {} differs from dynamic at step {} ({} {}): "
                                             "{}", shape_strategy_name(s), w.is_cnn() ? " on " + w.model : "", matmul,
                                             what, i, w.dimension, lens[i], d));
    }
    if (w.training) {
      // The parameters with what training keeps beside them (batch norm's running statistics),
      // then the optimizer's state.
      std::vector<std::string> names = dyn.trainer.parameter_names();
      for (const std::string& n : dyn.trainer.state_names()) names.push_back(n);
      for (const std::string& n : names) {
        const std::string d = first_mismatch(runner.parameter(n), dyn.trainer.parameter(n), tol);
        if (!d.empty())
          throw std::runtime_error(fmt::format("tg-shapes: {} ({} matmul) parameter '{}' differs from dynamic after "
                                               "{} steps: {}", shape_strategy_name(s), matmul, n, lens.size(), d));
        ++checked;
      }
    }
    th::Params p = bench::with_passes({{"strategy", shape_strategy_name(s)}, {"exact", tol.exact}, {"matmul", matmul}},
                                      g_passes);
    for (const th::Params& more : {w.params(), w.fixed})
      for (auto& [k, v] : more) p.insert_or_assign(k, v);
    if (w.is_cnn()) p.insert_or_assign("compared", th::Param(tol.str()));
    e.report().add_value(w.row("check_vs_dynamic"), p, static_cast<double>(checked), "tensors", "higher");
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

RunStats run_dynamic(const std::shared_ptr<Backend>& be, const Workload& w, FeedBank& bank,
                     const std::vector<int64_t>& lens) {
  RunStats r;
  DynamicAtLength dyn(w, *be);
  trace::LoopWindow window;
  for (int64_t l : lens) {
    th::throw_if_interrupted();  // the steps are this experiment's own loop, not run_loop's
    window.before_sample(static_cast<int>(r.iter_s.size()));
    const Feeds& f = bank.at(l);
    const auto t0 = std::chrono::steady_clock::now();
    if (w.training)
      dyn.step(l, f);  // reads the loss back: synchronized
    else
      dyn.infer(l, f);  // reads the prediction back
    r.iter_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return r;
}

RunStats run_strategy(ShapeStrategy s, const std::shared_ptr<Backend>& be, const Workload& w, FeedBank& bank,
                      const std::vector<int64_t>& lens, size_t cache_capacity) {
  RunStats r;
  ShapeStrategyRunner runner(w.at, strategy_options(w, s, be, cache_capacity));
  trace::LoopWindow window;
  for (int64_t l : lens) {
    th::throw_if_interrupted();
    window.before_sample(static_cast<int>(r.iter_s.size()));
    const auto t0 = std::chrono::steady_clock::now();
    const ShapeStepReport rep = runner.step(l, bank.at(l));
    if (w.training) {
      r.iter_s.push_back(rep.iteration_ms * 1e-3);
    } else {  // the prediction back on the host, as dynamic's forward returns it
      (void)runner.prediction();
      r.iter_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
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

// The checks, then the skewed distribution (the CNNs: their own draw) and the sweep over
// distinct lengths (not the CNNs'), for one workload.
void run_workload(th::Experiment& e, const std::shared_ptr<Backend>& be, const Workload& w, int n,
                  size_t cache_capacity, th::Progress& bar) {
  const bool gpu = e.on_gpu();
  if (!w.no_bucket.empty())
    e.report().skip(fmt::format("{} {} strategy=bucket", w.row("iteration"), th::params_str(w.params())), w.no_bucket);
  FeedBank bank(w);
  check_results(e, be, w, bank);
  bar.tick("checked");
  auto params = [&](th::Params p) {
    for (const th::Params& more : {w.params(), w.fixed})
      for (auto& [k, v] : more) p.insert_or_assign(k, v);
    return bench::with_passes(std::move(p), g_passes);
  };
  // 1) The skewed length distribution, every length in [min_len, max_len] possible.
  {
    const std::vector<int64_t> lens = make_lengths(w, n, 0, 42);
    int64_t tokens = 0;
    for (int64_t l : lens) tokens += l;
    const std::string distribution =
        w.draw ? w.distribution : fmt::format("skewed_min_of_2_uniform_{}_{}", w.min_len, w.max_len);
    const th::Params base = params({{"distribution", distribution}, {"iterations", n}});
    auto with = [&](std::string strat) { th::Params p = base; p.insert_or_assign("strategy", th::Param(std::move(strat))); return p; };
    auto& d = record(e, w.row("iteration"), with("dynamic"), run_dynamic(be, w, bank, lens));
    d.extra[w.dimension == "length" ? "mean_len" : "mean_" + w.dimension] = static_cast<double>(tokens) / n;
    for (ShapeStrategy s : strategies(w)) {
      const RunStats r = run_strategy(s, be, w, bank, lens, cache_capacity);
      auto& meas = record(e, w.row("iteration"), with(shape_strategy_name(s)), r);
      if (w.is_cnn()) meas.extra["mean_vs_dynamic"] = meas.stats.mean / d.stats.mean;
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
  if (w.sweep) {
    const int all = static_cast<int>(w.max_len - w.min_len + 1);
    std::vector<int> ds = e.quick() ? std::vector<int>{1, 4, 16, 64} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, all};
    const int sweep_n = e.quick() ? n / 2 : n;
    for (int dcount : ds) {
      const std::vector<int64_t> lens = make_lengths(w, sweep_n, dcount == all ? 0 : dcount, 1000 + dcount);
      auto p = [&](std::string strat) {
        return params(
            {{"distinct_shapes", int64_t{dcount}}, {"iterations", int64_t{sweep_n}}, {"strategy", std::move(strat)}});
      };
      const double dyn = record(e, w.row("sweep_iteration"), p("dynamic"), run_dynamic(be, w, bank, lens)).stats.mean;
      for (ShapeStrategy s : kStrategies) {
        auto& meas = record(e, w.row("sweep_iteration"), p(shape_strategy_name(s)),
                            run_strategy(s, be, w, bank, lens, cache_capacity));
        meas.extra["mean_vs_dynamic"] = meas.stats.mean / dyn;  // < 1: static wins over the whole run
      }
    }
    bar.tick("sweep");
  }
}

// The --models list: mlp, gpt2 and tg-train's CNNs; bad usage (exit 2) names the ones there are.
std::vector<std::string> parse_workloads(const std::string& text) {
  std::vector<std::string> known{"mlp", "gpt2"};
  for (const std::string& c : shapes::cnn_names()) known.push_back(c);
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string m = text.substr(at, comma - at);
    if (std::find(known.begin(), known.end(), m) == known.end())
      throw th::UsageError(fmt::format("--models: {} is not a workload of tg-shapes; give a comma-separated list of "
                                       "{}", quote_name(m), list));
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    at = comma + 1;
  }
  return out;
}

// The workloads of the --models names, in their order. The ImageNet networks are skipped
// with --quick on the CPU, as tg-train skips them: seconds per step of their reference
// convolutions even at 32 x 32, times every strategy.
std::vector<Workload> make_workloads(const std::vector<std::string>& names, bool gpu, bool quick, th::Report& rep) {
  std::vector<Workload> out;
  for (const std::string& name : names) {
    if (name == "mlp") {
      out.push_back(mlp_workload());
    } else if (name == "gpt2") {
      out.push_back(gpt2_workload(gpu));
    } else if (quick && !gpu && name != "resnet") {
      rep.skip(fmt::format("cnn_iteration model={}", name),
               "--quick on the CPU: an ImageNet network's training step takes seconds with the reference "
               "convolutions, times every strategy and shape; run on a GPU, or without --quick (at 32 x 32)");
    } else {
      for (Workload& w : shapes::cnn_workloads(name, gpu, rep)) out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-shapes", "What do static graphs pay for variable shapes? (sequence length, batch or image size per iteration)",
                    "tg-shapes --device auto --quick --json docs/results/shapes.json");
  int iterations = 0;
  int64_t cache_capacity = 16;
  ex.add_option("--iterations", iterations,
                "Steps per strategy (0: 400, with --quick 120 on a GPU and 60 on the CPU; the CNNs: 100, with --quick "
                "40 on a GPU and 20 on the CPU)", 0, 1000000);
  ex.add_option("--cache-capacity", cache_capacity, "cache strategy: plans kept at most", 1, 4096);
  std::string passes = "none";
  ex.add_option("--passes", passes, "Graph passes of every static plan: none, all, or a comma list (static/passes)");
  std::string pass_options;
  bench::add_pass_options_flag(ex, pass_options);
  std::string models = "mlp";
  ex.add_option("--models", models,
                "The workloads, comma-separated: mlp (an MLP per token), gpt2 (a GPT-2 language model: GPT-2 small on a "
                "GPU, a two-layer one on the CPU; bucket pads each sequence and masks the padding), and tg-train's "
                "CNNs resnet (the CIFAR ResNet), resnet18, resnet50, vgg16 (the batch of training and of serving, "
                "and the ResNets' image size; at 224 x 224 on a GPU, 32 x 32 on the CPU, skipped there with --quick)");
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const std::vector<std::string> names = parse_workloads(models);
    const bool gpu = e.on_gpu();
    const std::vector<Workload> workloads = make_workloads(names, gpu, e.quick(), e.report());
    const int n = iterations > 0 ? iterations : (e.quick() ? (gpu ? 120 : 60) : 400);
    const int n_cnn = iterations > 0 ? iterations : (e.quick() ? (gpu ? 40 : 20) : 100);
    g_passes = bench::parse_passes_flag(passes);
    g_pass_options = bench::resolve_pass_options(e, pass_options);
    const std::shared_ptr<Backend> be = make_backend(e.device(), e.cuda_options());
    int ticks = 0;
    for (const Workload& w : workloads) ticks += w.sweep ? 3 : 2;
    th::Progress bar(ticks, "tg-shapes");
    if (!gpu) {
      e.report().skip("update: cudaGraphExecUpdate vs re-instantiation",
                      "no GPU: the CPU backend has no CUDA graph instance to update, so `update` runs as recapture");
      e.report().skip("CUDA graph capture/replay cost", "no GPU: on the CPU a static plan runs its schedule directly; "
                                                      "compile = record + autodiff + plan + schedule, no capture");
    }
    for (const Workload& w : workloads)
      run_workload(e, be, w, w.is_cnn() ? n_cnn : n, static_cast<size_t>(cache_capacity), bar);
  });
}
