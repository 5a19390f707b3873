// tg-memory on the CUDA backend: the same per-role checks as memory_test.cpp,
// through the recording CudaBackend (real cudaMalloc'd buffers), and the precision
// rows' checks in the precisions the CUDA kernels run (fp32 so far: bf16 and fp16
// join the list once the kernels implement them). And the context-memory child on device 0.
#include <doctest/doctest.h>

#include "experiments/memory/context_memory.h"
#include "experiments/memory/nvml.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/experiments/memory_checks.h"
#include "tests/gpu_skip.h"

namespace tg {
using namespace tg::testing;

TEST_CASE("tg-memory: per-role measured bytes equal the formulas on the CUDA backend (mlp, transformer, 3 modes)") {
  TG_REQUIRE_GPU();
  check_roles_on(0);
}

TEST_CASE("tg-memory: VGG-16 at 32 x 32 on the CUDA backend, nothing freed early: per role and in total as predicted") {
  TG_REQUIRE_GPU();
  check_vgg16_dynamic_on(0);
}

TEST_CASE("tg-memory per precision: bytes by role and dtype equal the formulas on the CUDA backend") {
  TG_REQUIRE_GPU();
  check_precision_roles_on(0, {Precision::fp32});
}

TEST_CASE("tg-memory context memory: the context and the cuBLAS workspace hold device memory, per NVML") {
  TG_REQUIRE_GPU();
  harness::Report r;
  memory::measure_context_memory(r, {TG_MEMORY_BIN, memory::kContextMemoryChildFlag, "0"});
  for (const harness::Note& n : r.notes) {
    if (n.part != "context_memory") continue;
    // A skip is right only where this process cannot load NVML either; an NVML that loads but
    // cannot read the device fails here, with the child's reason.
    INFO("the child skipped: " << n.reason);
    CHECK_THROWS_AS(memory::Nvml(), memory::Nvml::Unavailable);
    return;
  }
  auto row = [&](const char* step) -> const harness::Measurement* {
    for (const harness::Measurement& m : r.measurements)
      if (m.name == "context_memory" && m.params.at("step").str() == step) return &m;
    return nullptr;
  };
  const harness::Measurement* context = row("context");
  REQUIRE(context != nullptr);
  CHECK(context->unit == "B");
  CHECK(context->stats.median > 0);
  const std::string mode = context->params.at("module_loading").str();
  CHECK((mode == "lazy" || mode == "eager"));
  for (const char* step : {"first_kernel", "cublas_handle", "cublaslt_handle"}) {
    CAPTURE(step);
    CHECK(row(step) != nullptr);
  }
#ifdef TWOGRAPH_HAVE_CUDNN
  // The backend's convolutions make a cuDNN handle: a build with cuDNN measures it.
  CHECK(row("cudnn_handle") != nullptr);
#else
  CHECK(row("cudnn_handle") == nullptr);
#endif
  const harness::Measurement* workspace = row("cublas_workspace");
  REQUIRE(workspace != nullptr);
  // Per process, nothing but this cudaMalloc moves the figure: at least the 32 MiB asked for.
  // Device-wide, another process may free memory meanwhile, so no bound is checked.
  const bool per_process = workspace->params.at("source").str() == "nvml_process";
  if (per_process) CHECK(workspace->stats.median >= static_cast<double>(CudaBackend::kCublasWorkspaceBytes));
  const harness::Measurement* total = nullptr;
  for (const harness::Measurement& m : r.measurements)
    if (m.name == "context_memory_total") total = &m;
  REQUIRE(total != nullptr);
  if (per_process) CHECK(total->stats.median >= context->stats.median + workspace->stats.median);
}

}  // namespace tg
