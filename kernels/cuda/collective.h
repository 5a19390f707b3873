#pragma once
// Data parallelism over GPUs: the CUDA backend's communicator through NCCL, one process per
// GPU (the launcher: experiments/harness/ranks.h). The all_reduce of each bucket is
// ncclAllReduce with ncclAvg on the communicator's own stream, forked from and joined back to
// the stream the call is ordered on by two events, so the static executor captures it into its
// CUDA graph like any kernel (NCCL 2.9 and later support capture).
//
// The mean is NCCL's: for f32 it scales each rank's contribution by 1 / world before the sum,
// in the ring's order; that equals the CPU thread group's (sum, then divide) up to rounding,
// exactly for a power-of-two world. Both executors make the same NCCL calls, so the static and
// the dynamic executor still agree bit for bit with each other.
//
// libnccl.so.2 is opened (dlopen) when the first communicator or id is made, not linked, so a
// binary starts without it; cmake/Nccl.cmake finds the header and the library's path.
#include <array>
#include <memory>
#include <string>

#include "kernels/communicator.h"

namespace tg {

class CudaBackend;

// ncclUniqueId's bytes: what every rank needs to join one group. Rank 0 makes it.
using NcclUniqueId = std::array<char, 128>;

// Whether NCCL can be used: false, with the reason in *why, when the build has no NCCL or
// libnccl.so.2 does not load.
bool nccl_available(std::string* why = nullptr);

// A new id (ncclGetUniqueId). It names a bootstrap listener inside this process, so the process
// that makes it must live until every rank has joined (rank 0 makes it). Throws tg::CudaError
// when NCCL fails, std::runtime_error when it is not available.
NcclUniqueId nccl_unique_id();

// Rank `rank` of `world` joins the group of `id` on the backend's device (ncclCommInitRank: it
// blocks until every rank has called it). Give the result to backend.set_communicator.
std::shared_ptr<Communicator> make_nccl_communicator(CudaBackend& backend, int rank, int world, const NcclUniqueId& id);

}  // namespace tg
