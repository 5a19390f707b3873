#include "experiments/train/data_parallel_bench.h"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "experiments/harness/exec_common.h"
#include "kernels/thread_group.h"
#include "static/compiler.h"

namespace th = tg::harness;

namespace tg::train {

namespace {

using Clock = std::chrono::steady_clock;

// Rank 0's samples of one executor, and what its plan all-reduces.
struct RankTimes {
  std::vector<double> static_s, dynamic_s;
  int64_t bytes_all_reduced = 0;
  int all_reduces = 0;
};

TrainOptions with_data_parallel(const Config& c, bool on, int64_t bucket_bytes) {
  TrainOptions t = c.train_opt;
  t.loss_scale = c.loss_scale;
  t.data_parallel.enabled = on;
  t.data_parallel.bucket_bytes = bucket_bytes;
  return t;
}

// Every rank runs the same fixed number of steps (the collectives must match), each timed on
// the host after a synchronize: the loop's warmup, then its min_reps.
RankTimes time_rank(th::Experiment& e, const Config& c, const RankBackends& be, const TrainOptions& t, int rank) {
  const th::LoopOptions loop = e.loop();
  const Feeds feeds = bench::model_feeds(c.fn, 900 + static_cast<uint64_t>(rank) * 13, c.classes);
  auto timed = [&](Backend& b, const std::function<void()>& step) {
    for (int i = 0; i < loop.warmup; ++i) step();
    b.synchronize();
    std::vector<double> s;
    for (int i = 0; i < loop.min_reps; ++i) {
      const Clock::time_point t0 = Clock::now();
      step();
      b.synchronize();
      s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return s;
  };
  RankTimes out;
  CompileOptions co;
  co.backend = be.for_static;
  co.precision = c.precision;
  co.train = t;
  CompiledPlan plan = compile(c.fn, co);
  for (const Node& n : plan.graph->nodes)
    if (n.op == OpKind::all_reduce) {
      ++out.all_reduces;
      out.bytes_all_reduced +=
          plan.graph->values[static_cast<size_t>(n.inputs[0])].shape.numel() * static_cast<int64_t>(sizeof(float));
    }
  out.static_s = timed(*be.for_static, [&] { plan.step(feeds); });
  DynamicOptions d = dynamic_options(c);
  d.data_parallel = t.data_parallel;
  DynamicTrainer dyn(c.fn, *be.for_dynamic, "caching", d);
  out.dynamic_s = timed(*be.for_dynamic, [&] { dyn.step(feeds); });
  return out;
}

}  // namespace

RankRunner thread_rank_runner() {
  return [](int world, const std::function<void(int, const RankBackends&)>& body) {
    ThreadGroup for_static(world), for_dynamic(world);
    run_thread_ranks(for_static, [&](int rank) {
      RankBackends be{std::shared_ptr<Backend>(make_cpu_backend()), std::shared_ptr<Backend>(make_cpu_backend())};
      be.for_static->set_communicator(for_static.communicator(rank));
      be.for_dynamic->set_communicator(for_dynamic.communicator(rank));
      try {
        body(rank, be);
      } catch (...) {
        for_dynamic.abort(fmt::format("rank {} failed", rank));  // run_thread_ranks aborts the static group
        throw;
      }
    });
  };
}

void measure_data_parallel(th::Experiment& e, const Config& c, const DataParallelRun& run) {
  RankTimes base, dp;
  run.run_ranks(run.world, [&](int rank, const RankBackends& be) {
    RankTimes t = time_rank(e, c, be, with_data_parallel(c, true, run.bucket_bytes), rank);
    if (rank == run.rank) dp = std::move(t);
  });
  // After the ranks: on GPUs the other ranks go on to the next configuration meanwhile and
  // wait in its first collective, where waiting has no time limit (NCCL's first join may).
  if (run.baseline_backend) {
    const RankBackends one{run.baseline_backend(), run.baseline_backend()};
    base = time_rank(e, c, one, with_data_parallel(c, false, run.bucket_bytes), 0);
  }
  th::Params common = c.params;
  common.emplace("mode", "train");
  common.emplace("bucket_mb", static_cast<double>(run.bucket_bytes) / double(1 << 20));
  for (const char* executor : {"static", "dynamic"}) {
    const bool is_static = std::string(executor) == "static";
    const std::vector<double>& base_s = is_static ? base.static_s : base.dynamic_s;
    double base_median = 0;
    if (!base_s.empty()) {
      th::Params p = common;
      p.emplace("executor", executor);
      p.emplace("ranks", int64_t{1});
      p.emplace("transport", "none");
      auto& m = e.report().add_time("data_parallel_step", p, base_s);
      m.extra["samples/s"] = static_cast<double>(c.batch) / m.stats.median;
      m.extra["bytes_all_reduced"] = 0;
      m.extra["all_reduces"] = 0;
      base_median = m.stats.median;
    }
    th::Params p = common;
    p.emplace("executor", executor);
    p.emplace("ranks", static_cast<int64_t>(run.world));
    p.emplace("transport", run.transport);
    auto& m = e.report().add_time("data_parallel_step", p, is_static ? dp.static_s : dp.dynamic_s);
    m.extra["samples/s"] = static_cast<double>(c.batch * run.world) / m.stats.median;
    m.extra["bytes_all_reduced"] = static_cast<double>(dp.bytes_all_reduced);
    m.extra["all_reduces"] = static_cast<double>(dp.all_reduces);
    if (base_median > 0) m.extra["scaling_efficiency"] = base_median / m.stats.median;
  }
}

}  // namespace tg::train
