#pragma once
// The group an all_reduce op reduces over: data parallelism's one collective.
//
// A backend joined to a communicator (Backend::set_communicator) runs every all_reduce
// call through it; a backend that joined none, and the CPU interpreter, are a group of
// one, where the mean over the ranks is the value itself. Two implementations:
//   - ThreadGroup (kernels/thread_group.h): N ranks as threads of one process on the CPU
//     backend, so that the graph logic, the bucketing and the equality of the executors
//     are tested without a GPU;
//   - NCCL (kernels/cuda/collective.h): one process per GPU.
// Every rank must issue the same collectives, with the same element counts, in the same
// order; both executors do, because both build the buckets through graph/data_parallel.h.
#include <cstdint>
#include <string>

#include "kernels/op_call.h"

namespace tg {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // "threads", "nccl": for reports and messages.
  virtual std::string kind() const = 0;
  // Whether the buffers it reduces live in host memory (the CPU backend's) rather than on a GPU.
  virtual bool on_host() const = 0;
  // out = (sum over the ranks of in) / world_size, n f32 elements; out may be in. `stream`: the
  // CUDA stream the call is ordered on (nullptr on the CPU, where the call blocks until every
  // rank has contributed). Throws when the ranks disagree on n or the group was aborted.
  virtual void all_reduce_mean(const float* in, float* out, int64_t n, void* stream) = 0;
};

namespace kernels {
// Runs one all_reduce call (checked as every call is, kernels/op_call_check.h) through `comm`.
void run_all_reduce(const OpCall& call, Communicator& comm, void* stream);
}  // namespace kernels

}  // namespace tg
