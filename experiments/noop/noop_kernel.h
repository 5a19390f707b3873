#pragma once
// The CUDA half of tg-noop; CPU-only builds compile the stubs in noop_kernel_stub.cpp.
#include <vector>

#include "experiments/harness/measure.h"

namespace tg::noop {
bool have_cuda_build();
void launch_empty_kernel(void* stream);  // checked launch of a <<<1,1>>> kernel that does nothing
void synchronize();                      // cudaDeviceSynchronize, checked
std::vector<double> time_empty_kernel_gpu(const harness::LoopOptions& opt);  // CUDA events
// --fault sticky: a kernel stores through an invalid pointer; throws the error the
// synchronize after it returns (cudaErrorIllegalAddress), which stays: the context is lost.
[[noreturn]] void fault_sticky();
// --fault oom: asks the device for its total memory plus 1 GiB; throws tg::OutOfMemoryError.
[[noreturn]] void fault_oom(int device);
}  // namespace tg::noop
