// The stand-in of kernels/cuda/collective.cpp in a build without NCCL (cmake/Nccl.cmake).
#include <stdexcept>

#include "kernels/cuda/collective.h"

namespace tg {

namespace {
const char* kWhy =
    "this build has no NCCL (cmake/Nccl.cmake did not find nccl.h 2.10 or later); configure with "
    "TWOGRAPH_NCCL_ROOT set to the folder holding NCCL's include/ and lib/";
}

bool nccl_available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}

NcclUniqueId nccl_unique_id() { throw std::runtime_error(kWhy); }

std::shared_ptr<Communicator> make_nccl_communicator(CudaBackend&, int, int, const NcclUniqueId&) {
  throw std::runtime_error(kWhy);
}

}  // namespace tg
