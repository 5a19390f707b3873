#pragma once
// One process per GPU for data parallelism (tg-train --gpus N), as torchrun starts them on one
// machine: the launcher (the process the user started) checks that the machine has N GPUs,
// starts N copies of its own program with torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE),
// NCCL_NVLS_ENABLE=0 and (unless set) NCCL_RUNTIME_CONNECT=0, waits for them and exits with their status. Rank 0 makes the NCCL
// ids and hands them to the others through files in a folder the launcher made (no network
// service of our own; NCCL's bootstrap then connects the ranks itself).
//
// More than one machine is not implemented: there, torchrun's MASTER_ADDR and MASTER_PORT
// would name where rank 0 publishes the ids, and each machine's launcher would start its
// LOCAL_RANKs with RANK = node * per_node + LOCAL_RANK (docs/data-parallel.md).
#include <functional>
#include <optional>
#include <string>

namespace tg::harness {

// The variables a launcher gives each rank; launched is false in a process no launcher started.
struct RankEnv {
  bool launched = false;
  int rank = 0, world = 1, local_rank = 0;
};

// Reads RANK, WORLD_SIZE and LOCAL_RANK; throws UsageError when one is malformed or missing.
RankEnv rank_env();

// In a process no launcher started whose arguments ask for `--gpus N` with N > 1: starts the N
// ranks and returns the status to exit with (rank 0's, or the first failing rank's; 2 with a
// message when the machine has fewer than N GPUs or N is malformed). Rank i runs with
// --device i in place of the given one; ranks > 0 write their reports (--json, --csv,
// --trace FILE) beside rank 0's as FILE.rank<i>. Otherwise nullopt: the
// caller runs as usual (one process, or one rank of a launch).
std::optional<int> launch_gpu_ranks(int argc, char** argv);

// The same bytes in every rank: rank 0 calls make() and publishes its result under `name` in
// the launch's folder (written whole, then renamed); the other ranks wait for it, at most
// timeout_s seconds. Throws std::runtime_error outside a launch or on timeout.
std::string share_from_rank0(const RankEnv& env, const std::string& name, const std::function<std::string()>& make,
                             double timeout_s = 300.0);

}  // namespace tg::harness
