// CPU-only build of tg-launch: no CUDA floors. main.cpp checks have_cuda() first
// and records a skip note instead of calling these.
#include <stdexcept>

#include "experiments/launch/raw_floors.h"

namespace tg::launch {
namespace {
[[noreturn]] void no_cuda() { throw std::logic_error("tg-launch: built without CUDA (TWOGRAPH_CUDA=OFF)"); }
}  // namespace
bool have_cuda() { return false; }
RawCuda::RawCuda() { no_cuda(); }
RawCuda::~RawCuda() = default;
void RawCuda::launch_empty(int64_t) { no_cuda(); }
void RawCuda::sync() { no_cuda(); }
EmptyGraph::EmptyGraph(RawCuda& rc, int64_t) : rc_(rc) { no_cuda(); }
EmptyGraph::~EmptyGraph() = default;
void EmptyGraph::launch() { no_cuda(); }
}  // namespace tg::launch
