#pragma once
// tg-launch's executor measurements for one chain length: the dynamic executor
// (per-iteration host time and its build/alloc/launch/other split) and the static
// one (compile phases, replay, plain launches). Results go into the report; the
// medians come back for the break-even.
#include <cstdint>
#include <memory>
#include <string>

#include "experiments/harness/harness.h"
#include "kernels/backend.h"
#include "static/passes/pass.h"

namespace tg::launch {

struct ChainPoint {
  int n_ops = 0;
  int64_t size = 64;  // elements per tensor: tiny, so that each op is pure overhead
  PassSet passes = PassSet::none();  // the static executor's graph passes (--passes)
  PassOptions pass_options;          // and their choices (--pass-options)
};

// Dynamic executor, inference (forward only, no tape), one allocator. Reports
// dynamic_iteration[_<alloc>] and dynamic_{build,alloc,launch,other}[_<alloc>].
// Returns the median seconds per iteration. `out` receives the chain's output.
// The per-op breakdown's own cost: the same chain with Timing::off and Timing::sampled,
// interleaved; records both and timing_overhead in percent of the untimed iteration.
void measure_timing_overhead(harness::Experiment& e, Backend& be, const ChainPoint& p);
double measure_dynamic(harness::Experiment& e, Backend& be, const ChainPoint& p, const std::string& allocator,
                       std::vector<float>* out);

// Static executor: compiles (repeatedly, for the phase statistics) with
// use_cuda_graph = graph (always false on the CPU), checks the output bitwise
// against `expected` (throws on a difference), then times the iteration.
// Returns {median seconds per iteration, median compile seconds}.
struct StaticResult {
  double iteration_s = 0, compile_s = 0;
};
StaticResult measure_static(harness::Experiment& e, const std::shared_ptr<Backend>& be, const ChainPoint& p,
                            bool graph, const std::vector<float>& expected);

// Compile phases of the training graph (autodiff included); reported only.
void measure_training_compile(harness::Experiment& e, const std::shared_ptr<Backend>& be, const ChainPoint& p,
                              bool graph);

}  // namespace tg::launch
