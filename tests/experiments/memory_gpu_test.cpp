// tg-memory on the CUDA backend: the same per-role checks as memory_test.cpp,
// through the recording CudaBackend (real cudaMalloc'd buffers), and the precision
// rows' checks in the precisions the CUDA kernels run (fp32 so far: bf16 and fp16
// join the list once the kernels implement them).
#include <doctest/doctest.h>

#include "tests/experiments/memory_checks.h"
#include "tests/gpu_skip.h"

namespace tg {
using namespace tg::testing;

TEST_CASE("tg-memory: per-role measured bytes equal the formulas on the CUDA backend (mlp, transformer, 3 modes)") {
  TG_REQUIRE_GPU();
  check_roles_on(0);
}

TEST_CASE("tg-memory per precision: bytes by role and dtype equal the formulas on the CUDA backend") {
  TG_REQUIRE_GPU();
  check_precision_roles_on(0, {Precision::fp32});
}

}  // namespace tg
