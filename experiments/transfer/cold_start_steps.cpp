// The steps of tg-transfer's cold-start child (experiments/harness/cold_start.h): after
// the runtime and the context, the first and second cudaMalloc, host-to-device copy and
// cudaFree of the process, at 1 KiB, the classic table's smallest size.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "experiments/transfer/cuda_bench.h"
#include "kernels/cuda/check.h"

namespace tg::transfer {

std::vector<harness::ColdStep> cold_start_steps(int device) {
  constexpr size_t kBytes = 1024;
  // Shared by the steps, which run in order in one process; the host source is
  // written before any step, so no page fault is timed.
  struct State {
    void* dev[2] = {nullptr, nullptr};
    std::vector<unsigned char> host = std::vector<unsigned char>(kBytes, 0x5A);
  };
  auto st = std::make_shared<State>();
  std::vector<harness::ColdStep> steps = harness::cuda_context_steps(device);
  const char* nth[] = {"first", "second"};
  for (int i = 0; i < 2; ++i)
    steps.push_back({"cudaMalloc", nth[i], kBytes, [st, i] { TG_CUDA_CHECK(cudaMalloc(&st->dev[i], kBytes)); }});
  for (int i = 0; i < 2; ++i)
    steps.push_back({"cudaMemcpy_h2d_pageable", nth[i], kBytes, [st, i] {
                       TG_CUDA_CHECK(cudaMemcpy(st->dev[i], st->host.data(), kBytes, cudaMemcpyHostToDevice));
                     }});
  for (int i = 0; i < 2; ++i)
    steps.push_back({"cudaFree", nth[i], kBytes, [st, i] {
                       TG_CUDA_CHECK(cudaFree(st->dev[i]));
                       st->dev[i] = nullptr;
                     }});
  return steps;
}

}  // namespace tg::transfer
