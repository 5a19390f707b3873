// CPU-only build of tg-launch: no CUDA floors. main.cpp checks have_cuda() first
// and records a skip note instead of calling these.
#include <stdexcept>

#include "experiments/launch/raw_floors.h"

namespace tg::launch {
namespace {
[[noreturn]] void no_cuda() { throw std::logic_error("tg-launch: built without CUDA (TWOGRAPH_CUDA=OFF)"); }
}  // namespace
bool have_cuda() { return false; }
const char* raw_kernel_name(RawKernel k) { return k == RawKernel::empty ? "empty" : "touch"; }
RawCuda::RawCuda() { no_cuda(); }
RawCuda::~RawCuda() = default;
void RawCuda::launch(int64_t, RawKernel, bool) { no_cuda(); }
void RawCuda::sync() { no_cuda(); }
RawGraph::RawGraph(RawCuda& rc, int64_t, RawKernel, bool) : rc_(rc) { no_cuda(); }
RawGraph::~RawGraph() = default;
void RawGraph::launch() { no_cuda(); }
}  // namespace tg::launch
