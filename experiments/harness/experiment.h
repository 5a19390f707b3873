#pragma once
// The common command line and life cycle of every experiment binary (tg-*).
#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "experiments/harness/measure.h"
#include "experiments/harness/report.h"

namespace tg::harness {

// Throw from an experiment body for a bad experiment-specific value: exit 2 with the message.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Exit statuses of every binary.
inline constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitInterrupted = 130;

class Experiment {
 public:
  // example: a full command line shown at the end of --help.
  Experiment(std::string tool, std::string description, std::string example);

  // Add experiment-specific flags here before run().
  CLI::App& cli() { return app_; }

  // Parses argv (common flags + yours), resolves --device, installs the SIGINT
  // handler, collects metadata, runs body, prints the table, writes --json/--csv
  // atomically. Returns the exit status: 0 ok, 1 body threw, 2 bad usage (flag,
  // value, device, UsageError), 130 interrupted (no report written).
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
  Report& report() { return report_; }
  const std::string& tool() const { return tool_; }

 private:
  int parse(int argc, char** argv);  // -1: continue; else the exit status

  std::string tool_, example_;
  CLI::App app_;
  std::string device_spec_ = "auto", json_path_, csv_path_;
  bool list_devices_ = false, quick_ = false;
  int repetitions_ = -1, warmup_ = -1;
  double min_time_ = -1;
  int device_id_ = -1;
  LoopOptions loop_;
  Report report_;
};

// Shell-quoted argv, as recorded in the report.
std::string join_command_line(int argc, char** argv);
// The --list-devices text.
std::string devices_text();

}  // namespace tg::harness
