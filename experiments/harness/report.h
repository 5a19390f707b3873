#pragma once
// The report every experiment writes: metadata, measurements, notes.
// docs/report-format.md describes the JSON and CSV field by field;
// docs/report.schema.json is the machine-checkable schema.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiments/harness/stats.h"

namespace tg::harness {

inline constexpr int kSchemaVersion = 1;

// One parameter value: a string, an integer, a real or a boolean, written to JSON
// with its natural type (so plots can read size_bytes as a number).
class Param {
 public:
  enum class Kind { string, integer, real, boolean };
  Param(const char* v) : kind_(Kind::string), s_(v) {}
  Param(std::string v) : kind_(Kind::string), s_(std::move(v)) {}
  Param(int v) : kind_(Kind::integer), i_(v) {}
  Param(long v) : kind_(Kind::integer), i_(v) {}
  Param(long long v) : kind_(Kind::integer), i_(v) {}
  Param(unsigned v) : kind_(Kind::integer), i_(static_cast<int64_t>(v)) {}
  Param(unsigned long v) : kind_(Kind::integer), i_(static_cast<int64_t>(v)) {}
  Param(unsigned long long v) : kind_(Kind::integer), i_(static_cast<int64_t>(v)) {}
  Param(double v) : kind_(Kind::real), d_(v) {}
  Param(bool v) : kind_(Kind::boolean), b_(v) {}

  Kind kind() const { return kind_; }
  const std::string& as_string() const { return s_; }
  int64_t as_int() const { return i_; }
  double as_real() const { return kind_ == Kind::integer ? static_cast<double>(i_) : d_; }
  bool as_bool() const { return b_; }
  // Text form for tables, CSV and matching: 1024, 0.5, true, h2d.
  std::string str() const;
  bool operator==(const Param& o) const { return kind_ == o.kind_ && str() == o.str(); }
  bool operator!=(const Param& o) const { return !(*this == o); }

 private:
  Kind kind_;
  std::string s_;
  int64_t i_ = 0;
  double d_ = 0;
  bool b_ = false;
};

using Params = std::map<std::string, Param>;
std::string params_str(const Params& p);  // "direction=h2d size_bytes=1024" (sorted by key)
// Name and params as one string, for hashing: two keys are equal exactly when the names
// are and the params are (Param's ==: same kind and text), whatever the texts hold.
std::string measurement_key(const std::string& name, const Params& p);

struct Measurement {
  std::string name;                    // what was measured: "h2d_copy", "static_replay_per_node"
  Params params;                       // the point in the sweep: {"size_bytes": 1024, ...}
  std::string unit = "s";              // unit of samples and of every statistic; times are seconds
  std::string better = "lower";        // "lower" (times, bytes) or "higher" (GB/s, iter/s)
  std::string timer = "host";          // "host" (steady_clock), "gpu" (CUDA events), "derived", "value"
  std::vector<double> samples;         // raw samples in `unit`
  Summary stats;                       // filled by Report::add from samples
  std::map<std::string, double> extra; // derived numbers: {"GB/s": 54.8, "TFLOP/s": 41.2}
  bool traced = false;                 // measured while a trace recorded (--trace): slower on the host
};

struct Note {
  std::string part;    // what was not measured: "cuda_empty_kernel"
  std::string reason;  // why: "no GPU: --device cpu"
};

// Why a run stopped early (the report then holds the measurements taken before).
struct RunError {
  std::string kind;     // one of kRunErrorKinds
  std::string message;  // the error as printed on stderr
};
// sticky_cuda_error: the CUDA context is lost (cudaErrorIllegalAddress, ...);
// out_of_memory: a device allocation failed; failure: anything else.
inline constexpr const char* kRunErrorKinds[] = {"sticky_cuda_error", "out_of_memory", "failure"};

struct Metadata {
  int schema_version = kSchemaVersion;
  std::string tool, tool_version, git_rev, build_type;
  bool cuda_build = false;
  std::string command_line, utc_time, host_name, cpu_model;
  int cpu_threads = 0;           // std::thread::hardware_concurrency
  std::string device_spec = "cpu";  // what --device said
  int device_id = -1;            // -1 = CPU backend
  std::string device_name;       // "cpu (<model>)" or the GPU's name
  bool quick = false;
  int warmup = 0, min_reps = 1, max_reps = 1;  // the schema wants >= 1: valid even when not set
  double min_time_s = 0;
  // From tg::list_gpus() / tg::software_info(), copied so this header needs no kernels/ include.
  struct Gpu {
    int id = -1;
    std::string name, pci_bus_id;
    int sm_count = 0, cc_major = 0, cc_minor = 0;
    uint64_t total_bytes = 0, free_bytes = 0;
    int sm_clock_khz = 0, mem_clock_khz = 0, mem_bus_width_bits = 0, pcie_gen = 0, pcie_width = 0;
    uint64_t l2_bytes = 0;
  };
  std::vector<Gpu> gpus;
  int cuda_runtime_version = 0, cuda_driver_version = 0, cublas_version = 0, cudnn_version = 0, blas_threads = 0;
  std::string openblas_config;
  // The resolved options of the run by group, each key with its value: "cuda", the CUDA
  // backend's kernel choices (kernels/cuda_options.h; every experiment records them), and
  // "passes", the graph passes' (static/passes/pass.h; the experiments that compile with
  // passes). Written as run.options; empty in a report of a build that did not record them.
  std::map<std::string, Params> options;
};

class Report {
 public:
  Metadata meta;
  // A deque, not a vector: add() returns a reference that callers keep while they add more
  // rows (a step row and its replay row, then extras on both); appending to a deque never
  // moves the elements already there.
  std::deque<Measurement> measurements;
  std::vector<Note> notes;
  std::optional<RunError> error;  // set when the run failed: written as the top-level "error"
  // Set while a trace records (--trace): every measurement added is flagged traced.
  bool trace_rows = false;

  // Computes m.stats from m.samples (throws std::invalid_argument if none) and appends it.
  Measurement& add(Measurement m);
  // Shorthand for a time measurement in seconds.
  Measurement& add_time(std::string name, Params params, std::vector<double> samples_s,
                        std::string timer = "host");
  // A single value (bytes, a count): one sample, timer "value".
  Measurement& add_value(std::string name, Params params, double value, std::string unit,
                         std::string better = "lower");
  void skip(std::string part, std::string reason);

  // The first measurement with this name and exactly these params, or nullptr.
  const Measurement* find(const std::string& name, const Params& params) const;
};

// Fills tool name/version/git revision/build type, time, host, CPU model, GPUs and
// software versions (through kernels/device_info.h).
Metadata collect_metadata(const std::string& tool, const std::string& command_line);
std::string utc_now_iso8601();  // "2026-12-02T13:20:00Z"

}  // namespace tg::harness
