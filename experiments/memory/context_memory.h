#pragma once
// The device memory a CUDA process holds that no tensor accounts for: the primary context,
// the modules its first kernel launch loads, the cuBLAS and cuBLASLt handles and the CUDA
// backend's cuBLAS workspace. No allocator sees these bytes (PyTorch's memory_allocated()
// reads 0 while nvidia-smi shows hundreds of MiB); NVML does, so each step is measured as the
// bytes NVML's figure grew by.
//
// The context must not exist when the measurement starts, and by the time an experiment's
// body runs the harness has created it. So, as for the cold-start rows (harness/cold_start.h),
// the binary runs itself as a child (`<self> --context-memory-child DEVICE`, checked first
// thing in main): the child reads NVML before any CUDA call that creates a context, takes the
// steps one by one and prints what it read; the parent parses that and records the rows.
// A child rather than a measurement at the top of main because main does not yet know the
// device, and because one code path then serves every run and the tests.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::memory {

inline constexpr const char* kContextMemoryChildFlag = "--context-memory-child";

// What NVML (and, once the context exists, cudaMemGetInfo) said after one step.
struct ContextSnapshot {
  std::string step;                    // "before_context", "context", "first_kernel", ...
  int64_t device_used = 0;             // nvmlDeviceGetMemoryInfo's used bytes: the whole device
  std::optional<int64_t> process_used;  // this process's usedGpuMemory; none when not listed
  std::optional<int64_t> meminfo_used;  // cudaMemGetInfo's total - free; none before the context
};

// Everything the child prints, in one struct; the parent reads it back with parse.
struct ContextChildOutput {
  std::string skip_reason;  // set: nothing measured (NVML missing or failing), the reason why
  std::vector<std::pair<std::string, std::string>> settings;  // module_loading, module_loading_env
  std::vector<std::pair<std::string, std::string>> notes;     // part, reason: a report note each
  std::vector<ContextSnapshot> snapshots;                     // the first is before the context
};
std::string format_context_output(const ContextChildOutput& out);
// Throws std::runtime_error naming the line for anything format_context_output does not write.
ContextChildOutput parse_context_output(const std::string& text);

// The bytes each step added. Per process (NVML's usedGpuMemory for this pid) when NVML lists
// the process after every step: other processes on the GPU do not change it. Otherwise the
// device's used memory, with `fallback_note` saying why: other processes' allocations land
// in those deltas too.
struct ContextStepBytes {
  std::string step;
  int64_t bytes = 0;                      // from `source`
  int64_t device_delta = 0;               // the device-wide delta, whatever the source
  std::optional<int64_t> meminfo_delta;   // cudaMemGetInfo's, when both readings exist
  std::optional<int64_t> process_after;   // the process's figure after the step
};
struct ContextDeltas {
  std::string source;  // "nvml_process" or "nvml_device"
  std::string fallback_note;
  std::vector<ContextStepBytes> steps;
  int64_t total = 0;  // everything the steps added
};
// Throws std::invalid_argument for fewer than two snapshots.
ContextDeltas context_deltas(const std::vector<ContextSnapshot>& snapshots);

// CUDA_MODULE_LOADING as the child found it (the driver reads it; nothing here sets it):
// `text` is the value or "unset", `requested` is "lazy" or "eager" for the two values the
// driver documents (LAZY, EAGER) and empty for anything else, unset included.
struct ModuleLoadingEnv {
  std::string text, requested;
};
ModuleLoadingEnv parse_module_loading_env(const char* value);

// The rows: `context_memory` (params step, source and the settings; unit B; extras
// nvml_device_delta_B, meminfo_delta_B, nvml_process_B) and `context_memory_total`, or the
// skip note; plus the child's notes.
void record_context_memory(harness::Report& r, const ContextChildOutput& out);
// Runs the child (`child_argv`, e.g. harness::self_child_argv(kContextMemoryChildFlag, dev))
// and records what it printed.
void measure_context_memory(harness::Report& r, const std::vector<std::string>& child_argv);

#ifdef TWOGRAPH_HAVE_CUDA
// Call first thing in main(). For `<self> --context-memory-child DEVICE`, measures and prints
// and returns the exit status (0; 1 when a step failed; 2 for a bad DEVICE); otherwise nullopt.
std::optional<int> context_memory_child(int argc, char** argv);
#endif

}  // namespace tg::memory
