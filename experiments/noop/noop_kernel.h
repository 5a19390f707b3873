#pragma once
// The CUDA half of tg-noop; CPU-only builds compile the stubs in noop_kernel_stub.cpp.
#include <vector>

#include "experiments/harness/measure.h"

namespace tg::noop {
bool have_cuda_build();
void launch_empty_kernel(void* stream);  // checked launch of a <<<1,1>>> kernel that does nothing
void synchronize();                      // cudaDeviceSynchronize, checked
std::vector<double> time_empty_kernel_gpu(const harness::LoopOptions& opt);  // CUDA events
}  // namespace tg::noop
