#pragma once
// The common command line and life cycle of every experiment binary (tg-*).
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "experiments/harness/measure.h"
#include "experiments/harness/report.h"
#include "graph/options_text.h"
#include "kernels/cuda_options.h"

namespace CLI {
class App;
}

namespace tg::harness {

// Throw from an experiment body for a bad experiment-specific value: exit 2 with the message.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The one environment variable of the CUDA backend's kernel choices (kernels/cuda_options.h),
// as PyTorch has PYTORCH_CUDA_ALLOC_CONF: "key=value,..." over the defaults; --cuda-options
// goes over it. Read by Experiment only (the libraries read no such variable), so a test or
// a program of its own sets the options it wants where it makes its backend.
inline constexpr const char* kCudaOptionsVariable = "TG_CUDA_OPTIONS";

// Exit statuses of every binary.
// kExitInterrupted is SIGINT's; SIGTERM gives 143 (interrupt_exit_status()).
inline constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitInterrupted = 130;

class Experiment {
 public:
  // example: a full command line shown at the end of --help.
  Experiment(std::string tool, std::string description, std::string example);

  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;
  ~Experiment();

  // Experiment-specific flags, added before run(). CLI11 is confined to experiment.cpp
  // (it is the slowest header of the project to compile). --help shows each default; a
  // value outside [lo, hi] is a usage error (exit 2) that names the flag and the range.
  void add_flag(const std::string& name, bool& value, const std::string& help);
  void add_option(const std::string& name, std::string& value, const std::string& help);
  void add_option(const std::string& name, int& value, const std::string& help, int lo, int hi);
  void add_option(const std::string& name, int64_t& value, const std::string& help, int64_t lo, int64_t hi);
  void add_option(const std::string& name, double& value, const std::string& help, double lo, double hi);
  // One or more values after the flag, each in [lo, hi].
  void add_option(const std::string& name, std::vector<int>& values, const std::string& help, int lo, int hi);
  // A file the run reads (a positional NAME or a --flag): --json and --csv may not name
  // it, nor have it as their temporary file, however the path is spelled.
  void add_input(const std::string& name, std::string& path, const std::string& help);
  // Checks of the experiment's own flags as a whole (values given twice, flags that
  // exclude each other), run right after parsing, before the device is chosen or
  // anything measured: a UsageError thrown here exits 2 with its message.
  void check_flags(std::function<void()> check) { check_flags_ = std::move(check); }

  // Parses argv (common flags + yours), checks the --json/--csv paths, resolves
  // --device, installs the signal handlers (interrupt.h), collects metadata, runs
  // body, prints the table, writes --json/--csv atomically. Returns the exit status:
  // 0 ok, 1 body threw or an output could not be written, 2 bad usage (flag, value,
  // output path, device, UsageError), 128 + the signal when interrupted (130 SIGINT,
  // 143 SIGTERM; no report written). When the body throws anything else, the table
  // and the report files still hold what was measured before, and the report's
  // "error" says why the run stopped (failure.h: a sticky CUDA error, out of memory,
  // or another failure). A closed stdout pipe only stops the printing (output.h).
  int run(int argc, char** argv, const std::function<void(Experiment&)>& body);

  // Loop options from defaults, --quick, --repetitions, --warmup, --min-time.
  LoopOptions loop() const { return loop_; }
  LoopOptions loop(int64_t batch) const {
    LoopOptions o = loop_;
    o.batch = batch;
    return o;
  }
  bool quick() const { return quick_; }
  int device() const { return device_id_; }  // CUDA ordinal, or -1 for the CPU backend
  bool on_gpu() const { return device_id_ >= 0; }
  // The CUDA backend's kernel choices of this run: the defaults, then TG_CUDA_OPTIONS, then
  // --cuda-options. Every backend the experiment makes gets them (make_backend(device(),
  // cuda_options())), and the report records them (run.options.cuda).
  const CudaBackendOptions& cuda_options() const { return cuda_options_; }
  // Records a group of resolved options in the report's metadata (run.options.GROUP), as
  // the harness does for "cuda"; call it from the body (the metadata is filled before it).
  void record_options(const std::string& group, const std::vector<OptionValue>& values);
  Report& report() { return report_; }
  const std::string& tool() const { return tool_; }

 private:
  int parse(int argc, char** argv);  // -1: continue; else the exit status
  int write_reports();                // the table on stdout, then --json / --csv / --trace atomically; the exit status
  void start_trace();                 // --trace: recording starts, with GPU activity on a CUDA device
  std::string finish_trace();         // stops recording; the trace's JSON text
  int fail(const std::exception& e);  // reports a body that threw; returns kExitFailure

  std::string tool_, example_;
  std::unique_ptr<CLI::App> app_;
  std::string device_spec_ = "auto", json_path_, csv_path_, trace_path_, cuda_options_flag_;
  int trace_iterations_ = 3;
  std::string gpu_spans_;  // what the trace says about its GPU spans
  CudaBackendOptions cuda_options_;
  std::string json_write_, csv_write_, trace_write_;  // the checked paths to write ("" for none): a link's target
  bool list_devices_ = false, quick_ = false;
  int repetitions_ = -1, warmup_ = -1;
  double min_time_ = -1;
  int device_id_ = -1;
  LoopOptions loop_;
  Report report_;
  struct Input {
    std::string flag;
    const std::string* path;
  };
  std::vector<Input> inputs_;
  std::function<void()> check_flags_;
};

// Shell-quoted argv, as recorded in the report.
std::string join_command_line(int argc, char** argv);
// The --list-devices text.
std::string devices_text();

}  // namespace tg::harness
