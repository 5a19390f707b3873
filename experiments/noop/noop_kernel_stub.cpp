// CPU-only build of tg-noop: the kernel half does not exist; noop.cpp checks
// have_cuda_build() first and records a skip note instead.
#include <stdexcept>

#include "experiments/noop/noop_kernel.h"

namespace tg::noop {
bool have_cuda_build() { return false; }
void launch_empty_kernel(void*) { throw std::logic_error("tg-noop: built without CUDA"); }
void synchronize() {}
std::vector<double> time_empty_kernel_gpu(const harness::LoopOptions&) {
  throw std::logic_error("tg-noop: built without CUDA");
}
void fault_sticky() { throw std::logic_error("tg-noop: --fault sticky needs a build with CUDA"); }
void fault_oom(int) { throw std::logic_error("tg-noop: --fault oom needs a build with CUDA"); }
}  // namespace tg::noop
