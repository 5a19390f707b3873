// tg-memory on the CUDA backend: the same per-role checks as memory_test.cpp,
// through the recording CudaBackend (real cudaMalloc'd buffers).
#include <doctest/doctest.h>

#include "tests/experiments/memory_checks.h"
#include "tests/gpu_skip.h"

namespace tg {
using namespace tg::testing;

TEST_CASE("tg-memory: per-role measured bytes equal the formulas on the CUDA backend (mlp, transformer, 3 modes)") {
  TG_REQUIRE_GPU();
  check_roles_on(0);
}

}  // namespace tg
