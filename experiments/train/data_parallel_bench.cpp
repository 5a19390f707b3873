#include "experiments/train/data_parallel_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "experiments/harness/exec_common.h"
#include "experiments/harness/ranks.h"
#include "kernels/thread_group.h"
#include "static/compiler.h"
#if TWOGRAPH_HAVE_CUDA
#include "kernels/cuda/collective.h"
#include "kernels/cuda/cuda_backend.h"
#endif

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
  const Feeds feeds = bench::model_feeds(c.fn, data_seed(c, 900 + static_cast<uint64_t>(rank) * 13), c.classes);
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
  co.seed = c.seed;
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

// --gpus N: each executor reduces over a group of its own, so rank 0 makes two NCCL ids.
DataParallelRun gpu_ranks(th::Experiment& e, int gpus, bool tf32) {
#if TWOGRAPH_HAVE_CUDA
  const th::RankEnv env = th::rank_env();
  if (!env.launched || env.world != gpus)
    throw th::UsageError(fmt::format("--gpus {}: this process is not one of {} ranks a launcher started (RANK, "
                                     "WORLD_SIZE); start tg-train itself with --gpus {}", gpus, gpus, gpus));
  auto make = [&e, tf32, device = env.local_rank] { return make_backend(device, e.cuda_options(), tf32); };
  const std::string ids = th::share_from_rank0(env, "nccl-ids", [] {
    std::string bytes;
    for (int group = 0; group < 2; ++group) {
      const NcclUniqueId id = nccl_unique_id();
      bytes.append(id.begin(), id.end());
    }
    return bytes;
  });
  if (ids.size() != 2 * sizeof(NcclUniqueId))
    throw std::runtime_error(fmt::format("rank {}: the NCCL ids rank 0 published are {} bytes, not {}", env.rank,
                                         ids.size(), 2 * sizeof(NcclUniqueId)));
  auto join = [&](const std::shared_ptr<Backend>& be, int group) {
    NcclUniqueId id;
    std::copy_n(ids.begin() + group * static_cast<std::ptrdiff_t>(id.size()), id.size(), id.begin());
    be->set_communicator(make_nccl_communicator(dynamic_cast<CudaBackend&>(*be), env.rank, env.world, id));
  };
  // One communicator per group for the whole run: an id makes one communicator.
  RankBackends be{make(), make()};
  join(be.for_static, 0);
  join(be.for_dynamic, 1);
  DataParallelRun run;
  run.world = env.world;
  run.transport = "nccl";
  run.rank = env.rank;
  run.run_ranks = [be, rank = env.rank](int, const std::function<void(int, const RankBackends&)>& body) {
    body(rank, be);
  };
  if (env.rank == 0) run.baseline_backend = make;
  return run;
#else
  (void)e;
  (void)tf32;
  throw th::UsageError(fmt::format("--gpus {}: this tg-train was built without CUDA", gpus));
#endif
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

void add_data_parallel_flags(th::Experiment& e, DataParallelFlags& f) {
  e.add_option("--ranks", f.ranks,
               "Data parallelism over N thread ranks of the CPU backend (with --device cpu): measures only the "
               "data_parallel_step rows, each rank training the configuration's batch, against one rank", 1, 64);
  e.add_option("--gpus", f.gpus,
               "Data parallelism over GPUs 0..N-1, one process each, through NCCL (NCCL_NVLS_ENABLE=0 in each): "
               "measures only the data_parallel_step rows, each rank training the configuration's batch; ranks "
               "other than 0 write their reports as FILE.rank<i>. Exits 2 when the machine has fewer GPUs", 1, 1024);
  e.add_option("--bucket-mb", f.bucket_mb, "Data parallelism's gradient bucket size in MiB (DDP's bucket_cap_mb)",
               1.0 / (1 << 20), 1e6);
}

std::optional<DataParallelRun> data_parallel_run(th::Experiment& e, const DataParallelFlags& f, bool on_gpu, bool tf32) {
  if (f.ranks <= 1 && f.gpus <= 1) return std::nullopt;
  if (f.ranks > 1 && f.gpus > 1)
    throw th::UsageError("--ranks (CPU thread ranks) and --gpus (one process per GPU) exclude each other");
  if (f.ranks > 1 && on_gpu)
    throw th::UsageError(fmt::format("--ranks {} runs thread ranks of the CPU backend: add --device cpu, or use "
                                     "--gpus {} for GPUs", f.ranks, f.ranks));
  DataParallelRun run;
  if (f.gpus > 1) {
    run = gpu_ranks(e, f.gpus, tf32);
  } else {
    run.world = f.ranks;
    run.run_ranks = thread_rank_runner();
    run.baseline_backend = [] { return std::shared_ptr<Backend>(make_cpu_backend()); };
  }
  run.bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(f.bucket_mb * (1 << 20)));
  return run;
}

}  // namespace tg::train
