#pragma once
// Data parallelism on the CPU backend: N ranks as threads of one process, each with a
// backend of its own joined to one ThreadGroup. It is the CI's stand-in for NCCL: the same
// graphs, buckets and collectives in the same order, so the executors' equality and the
// bucketing are tested without a GPU; it is not meant to be fast.
//
// The reduction is exact to one definition: element i of the result is
// ((in_0[i] + in_1[i]) + ... + in_{N-1}[i]) / N in f32, ranks in order, whatever the timing,
// so every rank holds the same bits and a run is reproducible.
#include <functional>
#include <memory>
#include <string>

#include "kernels/communicator.h"

namespace tg {

class ThreadGroup {
 public:
  // Throws std::invalid_argument unless world_size >= 1.
  explicit ThreadGroup(int world_size);
  ~ThreadGroup();
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int world_size() const;
  // Rank `rank`'s communicator (one per rank; give it to that rank's backend).
  std::shared_ptr<Communicator> communicator(int rank);
  // Wakes every rank waiting in a collective, and fails every later one, with `why`: a rank
  // that fails outside a collective calls it so that the others do not wait for it forever.
  void abort(const std::string& why);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// Runs body(rank) for every rank of `group`, each on a thread of its own, and returns when all
// have ended. A rank that throws aborts the group (so no other rank hangs in a collective);
// the first error is rethrown here, naming its rank.
void run_thread_ranks(ThreadGroup& group, const std::function<void(int rank)>& body);

}  // namespace tg
