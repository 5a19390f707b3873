// make_allocator: picks an allocator by name. Each allocator lives in its own file
// and is reached through its make_* function (dynamic/allocator.h).
#include <fmt/format.h>

#include <stdexcept>

#include "dynamic/allocator.h"
#include "kernels/backend.h"

namespace tg {

std::unique_ptr<Allocator> make_allocator(const std::string& name, Backend& backend) {
  if (name == "raw") return make_raw_allocator(backend);
  if (name == "caching") return make_caching_allocator(backend);
  if (name == "pool") {
    if (backend.kind() != DeviceKind::cuda)
      throw std::invalid_argument(fmt::format(
          "allocator 'pool' (cudaMallocAsync) needs a CUDA device but the backend is {}; use 'raw' or 'caching'",
          backend.name()));
#ifdef TWOGRAPH_HAVE_CUDA
    return make_pool_allocator(backend);
#else
    throw std::invalid_argument("allocator 'pool' needs a build with CUDA (TWOGRAPH_CUDA=ON)");
#endif
  }
  throw std::invalid_argument(
      fmt::format("unknown allocator '{}'; choose one of: raw, caching, pool (pool on CUDA only)", name));
}

}  // namespace tg
