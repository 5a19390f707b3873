#pragma once
// Cold-start costs: what the first CUDA calls of a process pay (driver and runtime
// initialization, creating the primary context, the first allocation, the first copy,
// loading a kernel's module at its first launch) against the same call made again.
//
// A first call happens once per process, and by the time an experiment's body runs the
// harness has already created the context (it reads free memory for the report). So the
// binary runs itself K times as a child (`<self> --cold-start-child DEVICE`): each child
// touches nothing before its steps, times each step once and prints one line per step.
// Each fresh process is one sample, so the `cold_start` rows have K samples and real
// p10/median/p90/noise across processes (docs/report-format.md, "Cold-start rows").
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::harness {

inline constexpr const char* kColdStartChildFlag = "--cold-start-child";

// One step of a child: `call` (context_creation, cudaMalloc, ...) made for the `first`
// or `second` time in the process; size_bytes 0 when the call has no size.
struct ColdStep {
  std::string call, occurrence;
  int64_t size_bytes = 0;
  std::function<void()> run;
};
using ColdSteps = std::function<std::vector<ColdStep>(int device)>;

// Call first thing in main(). When argv is `<self> --cold-start-child DEVICE`, runs the
// steps for DEVICE in order, each timed once with steady_clock, prints one protocol line
// per step on stdout and returns the exit status (0, 1 when a step threw, 2 for a bad
// DEVICE); otherwise returns nullopt and the binary goes on as usual.
std::optional<int> cold_start_child(int argc, char** argv, const ColdSteps& steps);

// The protocol line of one timed step, and its parser (throws std::runtime_error naming
// the line for anything else).
struct ColdSample {
  std::string call, occurrence;
  int64_t size_bytes = 0;
  double seconds = 0;
};
std::string cold_start_line(const ColdSample& s);
std::vector<ColdSample> parse_cold_start(const std::string& text);

// Runs argv[0] with argv (no shell), its stdout captured, stderr shared with ours.
// Returns the captured stdout; throws std::runtime_error when it cannot start or exits
// other than 0 (naming the command and the status), Interrupted after a Ctrl-C.
std::string run_child(const std::vector<std::string>& argv);

// Runs `child_argv` `processes` times and adds one `cold_start` measurement per step
// (params call, occurrence and size_bytes when non-zero; unit s, timer host), each with
// one sample per process; extra "processes". Every child must print the same steps.
void measure_cold_start(Report& r, const std::vector<std::string>& child_argv, int processes);
// The child command line of this binary for a device: {/proc/self/exe, flag, device}.
std::vector<std::string> self_child_argv(const char* flag, int device);
inline std::vector<std::string> self_cold_start_argv(int device) {
  return self_child_argv(kColdStartChildFlag, device);
}

// A hidden child mode of a binary, `<self> FLAG DEVICE`: nullopt when argv is not that mode,
// else the device ordinal, or -1 when DEVICE is not one (after saying so on stderr; the
// child then exits 2). Shared by every child mode (this one, tg-memory's context memory).
std::optional<int> child_mode_device(int argc, char** argv, const char* flag);

#ifdef TWOGRAPH_HAVE_CUDA
// The steps every binary's child starts with (cold_start_cuda.cpp): runtime_init
// (cudaGetDeviceCount: loads the driver, creates no context), context_creation
// (cudaSetDevice + cudaFree(0)), then each again as `second`.
std::vector<ColdStep> cuda_context_steps(int device);
#endif

}  // namespace tg::harness
