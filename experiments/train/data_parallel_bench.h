#pragma once
// tg-train's data-parallel rows (--ranks N on the CPU, --gpus N on GPUs): the training step of
// both executors with the gradients all-reduced in buckets (graph/data_parallel.h), against one
// rank without data parallelism. The per-rank batch is the configuration's (weak scaling, as a
// DDP script's per-GPU batch), so the global batch is N times it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "experiments/train/train_bench.h"

namespace tg::train {

// What every rank of one data-parallel run needs: its backend for each executor, joined to one
// group per executor (the static and the dynamic executor reduce in two groups, so that each
// rank may run them one after the other).
struct RankBackends {
  std::shared_ptr<Backend> for_static, for_dynamic;
};

// How the ranks of a run are started: calls body(rank, backends) for every rank of `world`,
// returning when all have ended (thread ranks on the CPU; this process's one rank on a GPU).
using RankRunner = std::function<void(int world, const std::function<void(int rank, const RankBackends&)>& body)>;

struct DataParallelRun {
  int world = 2;
  int64_t bucket_bytes = int64_t{25} << 20;
  const char* transport = "threads";  // the communicator's kind(), a row parameter
  RankRunner run_ranks;
  // The backend of the one-rank baseline (no data parallelism), or null when this process
  // does not measure it (the GPU ranks other than 0).
  std::function<std::shared_ptr<Backend>()> baseline_backend;
  int rank = 0;  // the rank of this process whose rows are recorded (0 for thread ranks)
};

// Rows data_parallel_step (executor static or dynamic; ranks 1 for the baseline, N for the
// run), each with the bytes all-reduced per step, the all-reduces per step and the scaling
// efficiency against the baseline (its step time over the run's, 1.0 for perfect weak scaling).
void measure_data_parallel(harness::Experiment& e, const Config& c, const DataParallelRun& run);

// The thread ranks of the CPU backend (kernels/thread_group.h).
RankRunner thread_rank_runner();

// The flags of a data-parallel run, shared by tg-train and tg-graph bench.
struct DataParallelFlags {
  int ranks = 1, gpus = 1;
  double bucket_mb = 25.0;
};
void add_data_parallel_flags(harness::Experiment& e, DataParallelFlags& f);

// The run the flags ask for, or nullopt when they ask for none (one rank). --gpus N is this
// process's rank of a launch (experiments/harness/ranks.h): its GPU is its LOCAL_RANK, and it
// joins one NCCL group per executor, rank 0 making the ids. `on_gpu`: the experiment's device
// is a GPU (--ranks refuses it); `tf32`: the precision's TF32 switch for the GPU backends.
// Throws harness::UsageError for flags that exclude each other.
std::optional<DataParallelRun> data_parallel_run(harness::Experiment& e, const DataParallelFlags& f, bool on_gpu,
                                                 bool tf32);

}  // namespace tg::train
