#include "experiments/harness/experiment.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>

#include "experiments/harness/failure.h"
#include "experiments/harness/interrupt.h"
#include "experiments/harness/cli_validators.h"
#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"
#include "experiments/harness/table.h"
#include "graph/quote.h"
#include "kernels/device_info.h"
#include "trace/recorder.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "experiments/harness/gpu_timing.h"
#include "trace/cupti.h"
#endif

namespace tg::harness {

namespace {
// The switches the options replaced (docs/architecture.md, Configuration), each with what to
// give instead, or why nothing replaces it. Still set, one would be ignored and a run would
// measure the defaults while its command says otherwise, so it is refused.
constexpr struct {
  const char* variable;
  const char* flag;  // null: no option replaces it, for the reason in `gone`
  const char* key;
  const char* gone;
} kRetiredVariables[] = {
    {"TG_SMALL_GEMM", "--cuda-options", "small_gemm", nullptr},
    {"TG_SKINNY_GEMM", "--cuda-options", "skinny_gemm", nullptr},
    {"TG_GEMM_UPDATE_STREAMK", "--cuda-options", "gemm_update_streamk", nullptr},
    {"TG_GEMM_AUTOTUNE", "--cuda-options", "gemm_autotune", nullptr},
    {"TG_PDL", "--cuda-options", "pdl", nullptr},
    {"TG_GEMM_UPDATE", "--pass-options", "gemm_updates", nullptr},
    {"TG_LANES_EARLY", "--pass-options", "lanes_early_updates", nullptr},
    {"TG_LANES_GEMM_UPDATES", "--pass-options", "lanes_side_gemm_updates", nullptr},
    {"TG_COLREDUCE", nullptr, nullptr,
     "the library has one column-reduction loop; the variants it chose are timed by "
     "dev/cuda/colreduce_variants.cu"},
};

std::string retired_variable_problem() {
  for (const auto& r : kRetiredVariables) {
    if (!std::getenv(r.variable)) continue;
    if (!r.flag) return fmt::format("{} is set, but nothing reads it any more: {}; unset it", r.variable, r.gone);
    return fmt::format("{} is set, but nothing reads it any more: give {} {}=VALUE instead{}, and unset it", r.variable,
                       r.flag, r.key,
                       std::string(r.flag) == "--cuda-options" ? fmt::format(" (or {})", kCudaOptionsVariable) : "");
  }
  return "";
}

// Output that cannot be printed at all (--help > /dev/full): exit 1, said on stderr.
int print_or_fail(const std::string& tool, const std::string& text) {
  try {
    print_stdout(text);
    return kExitOk;
  } catch (const OutputError& e) {
    say_line(tool, std::string("failed: ") + e.what());
    return kExitFailure;
  }
}
}  // namespace

std::string join_command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_=./:,+@%") == std::string::npos;
    if (!plain) {
      std::string q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    out += (i ? " " : "") + a;
  }
  return out;
}

std::string devices_text() {
  std::string out = fmt::format("cpu   CPU backend: {} ({} threads)\n", tg::cpu_model_name(),
                                tg::software_info().cpu_threads);
  const auto gpus = tg::list_gpus();
  for (const auto& g : gpus)
    out += fmt::format("{:<5} {}  sm_{}{}  {} SMs  {:.1f} GiB ({:.1f} GiB free)  PCIe gen{} x{}  {}\n", g.id, g.name,
                       g.cc_major, g.cc_minor, g.sm_count, g.total_bytes / 1073741824.0,
                       g.free_bytes / 1073741824.0, g.pcie_gen, g.pcie_width, g.pci_bus_id);
  if (gpus.empty()) {
#ifdef TWOGRAPH_HAVE_CUDA
    out += "no CUDA device visible: --device auto runs on the CPU backend\n";
#else
    out += "built without CUDA (TWOGRAPH_CUDA=OFF): only the CPU backend exists\n";
#endif
  }
  return out;
}

Experiment::Experiment(std::string tool, std::string description, std::string example)
    : tool_(std::move(tool)), example_(std::move(example)), app_(std::make_unique<CLI::App>(std::move(description), tool_)) {
  CLI::App& app = *app_;
  app.footer(fmt::format("Example:\n  {}\n\nExit status: 0 ok, 1 failure, 2 bad usage, 130 interrupted.", example_));
  app.add_option("--device", device_spec_, "N (a CUDA ordinal), auto (the GPU with most free memory, else the CPU), or cpu")
      ->capture_default_str();
  app.add_flag("--list-devices", list_devices_, "List the CPU and the visible GPUs, then exit");
  app.add_flag("--quick", quick_, "Few repetitions and short sweeps (the main job's mode)");
  app.add_option("--repetitions", repetitions_, "Minimum number of timed repetitions per measurement (>= 1)")
      ->transform(decimal_integer(1, 100000000));
  app.add_option("--warmup", warmup_, "Untimed calls before timing (>= 0)")->transform(decimal_integer(0, 100000000));
  app.add_option("--min-time", min_time_, "Minimum timed seconds per measurement (>= 0)")
      ->transform(decimal_real(0.0, 86400.0));
  app.add_option("--json", json_path_, "Write the JSON report to FILE (atomically; a regular file or a new one)");
  app.add_option("--csv", csv_path_, "Write the CSV report to FILE (atomically; a regular file or a new one)");
  app.add_option("--trace", trace_path_,
                 "Write a timeline of the run to FILE: Chrome trace-event JSON for Perfetto or chrome://tracing "
                 "(host spans; GPU kernels and copies on a CUDA device). The report's rows are then flagged traced "
                 "(docs/timelines.md)");
  app.add_option("--trace-iterations", trace_iterations_,
                 "With --trace: samples recorded per measurement loop (warm-up calls are not recorded)")
      ->transform(decimal_integer(1, 1000000))
      ->capture_default_str();
  app.add_option("--cuda-options", cuda_options_flag_,
                 fmt::format("The CUDA backend's kernel choices, key=value items joined by ',', over {} and these "
                             "defaults (recorded in the report as run.options.cuda):\n{}",
                             kCudaOptionsVariable, CudaBackendOptions::help()));
}

Experiment::~Experiment() = default;

void Experiment::record_options(const std::string& group, const std::vector<OptionValue>& values) {
  Params& p = report_.meta.options[group];
  p.clear();
  for (const OptionValue& v : values)
    p.emplace(v.key, v.is_switch ? Param(v.value != 0) : Param(static_cast<long long>(v.value)));
}

void Experiment::add_flag(const std::string& name, bool& value, const std::string& help) {
  app_->add_flag(name, value, help);
}
void Experiment::add_option(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help)->capture_default_str();
}
void Experiment::add_option(const std::string& name, int& value, const std::string& help, int lo, int hi) {
  app_->add_option(name, value, help)->capture_default_str()->transform(decimal_integer(lo, hi));
}
void Experiment::add_option(const std::string& name, int64_t& value, const std::string& help, int64_t lo,
                            int64_t hi) {
  app_->add_option(name, value, help)->capture_default_str()->transform(decimal_integer(lo, hi));
}
void Experiment::add_option(const std::string& name, double& value, const std::string& help, double lo, double hi) {
  app_->add_option(name, value, help)->capture_default_str()->transform(decimal_real(lo, hi));
}
void Experiment::add_option(const std::string& name, std::vector<int>& values, const std::string& help, int lo,
                            int hi) {
  app_->add_option(name, values, help)->transform(decimal_integer(lo, hi));
}
void Experiment::add_input(const std::string& name, std::string& path, const std::string& help) {
  app_->add_option(name, path, help);
  inputs_.push_back({name, &path});
}

int Experiment::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return print_or_fail(tool_, app_->help());
  } catch (const CLI::ParseError& e) {
    // CLI11's messages quote the arguments raw.
    say_line(tool_, std::string("error: ") + e.what());
    std::fputs(("Run '" + tool_ + " --help' for the options and an example.\n").c_str(), stderr);
    return kExitUsage;
  }
  if (list_devices_) return print_or_fail(tool_, devices_text());
  if (check_flags_) {
    try {
      check_flags_();
    } catch (const UsageError& e) {
      say(tool_, std::string("error: ") + e.what());
      return kExitUsage;
    }
  }
  // Every report path is checked before the run, not found unwritable after it.
  const struct {
    const char* flag;
    const std::string& path;
    std::string& write_path;
  } outputs[] = {{"--json", json_path_, json_write_}, {"--csv", csv_path_, csv_write_},
                 {"--trace", trace_path_, trace_write_}};
  if (app_->count("--trace") && !trace::kSitesCompiled) {
    say_line(tool_, "error: --trace: this build compiles the trace sites out (TWOGRAPH_TRACE_SITES=OFF, the "
                    "baseline of their cost); configure with -DTWOGRAPH_TRACE_SITES=ON to take a trace");
    return kExitUsage;
  }
  if (app_->count("--trace-iterations") && !app_->count("--trace")) {
    say_line(tool_, "error: --trace-iterations sets the window of a trace: give --trace FILE too");
    return kExitUsage;
  }
  for (const auto& o : outputs) {
    if (app_->count(o.flag) == 0) continue;
    if (const std::string why = output_path_problem(o.flag, o.path, &o.write_path); !why.empty()) {
      say_line(tool_, "error: " + why);
      return kExitUsage;
    }
  }
  for (size_t i = 0; i < std::size(outputs); ++i)
    for (size_t j = i + 1; j < std::size(outputs); ++j)
      if (!outputs[i].write_path.empty() && !outputs[j].write_path.empty())
        if (const std::string why = output_paths_clash(outputs[i].flag, outputs[i].write_path, outputs[j].flag,
                                                       outputs[j].write_path);
            !why.empty()) {
          say_line(tool_, "error: " + why);
          return kExitUsage;
        }
  // A report written over the file the run reads would lose it for good.
  for (const auto& o : outputs)
    for (const Input& in : inputs_)
      if (!o.write_path.empty())
        if (const std::string why = output_overwrites_input(o.flag, o.write_path, in.flag, *in.path); !why.empty()) {
          say_line(tool_, "error: " + why);
          return kExitUsage;
        }
  if (const std::string why = retired_variable_problem(); !why.empty()) {
    say_line(tool_, "error: " + why);
    return kExitUsage;
  }
  // The one read of the variable; a bad item is bad usage on every machine, GPU or not.
  const char* env = std::getenv(kCudaOptionsVariable);
  const struct {
    std::string where, text;
  } sources[] = {{kCudaOptionsVariable, env ? env : ""}, {"--cuda-options", cuda_options_flag_}};
  for (const auto& src : sources) {
    try {
      cuda_options_ = CudaBackendOptions::from_string(src.text, cuda_options_);
    } catch (const std::invalid_argument& e) {
      say_line(tool_, fmt::format("error: {}={}: {}", src.where, quote_name(src.text), e.what()));
      return kExitUsage;
    }
  }
  try {
    device_id_ = tg::resolve_device(device_spec_);
  } catch (const std::invalid_argument& e) {
    // resolve_device's message names the flag, the value and the valid choices (the value raw).
    say_line(tool_, std::string("error: ") + e.what());
    return kExitUsage;
  }
  loop_ = quick_ ? quick_loop_options() : default_loop_options();
  if (repetitions_ >= 0) {
    loop_.min_reps = repetitions_;
    loop_.max_reps = std::max(loop_.max_reps, repetitions_);
  }
  if (warmup_ >= 0) loop_.warmup = warmup_;
  if (min_time_ >= 0) loop_.min_time_s = min_time_;
  return -1;
}

int Experiment::run(int argc, char** argv, const std::function<void(Experiment&)>& body) {
  if (int rc = parse(argc, argv); rc >= 0) return rc;
  // A closed descriptor 1 goes to the next file opened (a report's temporary file), and
  // the table would be written into it: refused before the run, not found after it.
  if (::fcntl(STDOUT_FILENO, F_GETFL) == -1) {
    say(tool_, fmt::format("failed: stdout is not open ({}); run with stdout open, redirected to a file or to "
                           "/dev/null", std::strerror(errno)));
    return kExitFailure;
  }
  install_signal_handlers(tool_);
  try {
    Metadata& m = report_.meta;
    m = collect_metadata(tool_, join_command_line(argc, argv));
    m.device_spec = device_spec_;
    m.device_id = device_id_;
    m.quick = quick_;
    m.warmup = loop_.warmup;
    m.min_reps = loop_.min_reps;
    m.max_reps = loop_.max_reps;
    m.min_time_s = loop_.min_time_s;
    for (const auto& g : m.gpus)
      if (g.id == device_id_) m.device_name = g.name;
    record_options("cuda", cuda_options_.values());
    if (!trace_write_.empty()) start_trace();
#ifdef TWOGRAPH_HAVE_CUDA
    if (device_id_ >= 0) set_cuda_device(device_id_);
#endif
    say_line(tool_, "device " + m.device_name);
    body(*this);
    throw_if_interrupted();
  } catch (const Interrupted& e) {
    say(tool_, e.what());
    return interrupt_exit_status();
  } catch (const UsageError& e) {
    say(tool_, std::string("error: ") + e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    return fail(e);
  }
  return write_reports();
}

int Experiment::write_reports() {
  try {
    print_stdout(report_table(report_));
  } catch (const OutputError&) {
    // Said once below: the report files matter more than the table, so they come first.
  }
  try {
    // Both texts are built before either file is touched; each file appears whole or not at all.
    std::vector<std::pair<std::string, std::string>> files;
    if (!json_write_.empty()) files.emplace_back(json_write_, to_json(report_));
    if (!csv_write_.empty()) files.emplace_back(csv_write_, to_csv(report_));
    if (!trace_write_.empty()) files.emplace_back(trace_write_, finish_trace());
    write_files_atomic(files);
  } catch (const Interrupted& e) {
    say(tool_, e.what());
    return interrupt_exit_status();
  } catch (const std::exception& e) {  // a report file that cannot be written
    say_line(tool_, std::string("failed: ") + e.what());
    return kExitFailure;
  }
  const bool files = !json_write_.empty() || !csv_write_.empty() || !trace_write_.empty();
  if (files)
    say_line(tool_, "wrote" + (json_write_.empty() ? "" : " " + shown_path(json_path_)) +
                        (csv_write_.empty() ? "" : " " + shown_path(csv_path_)) +
                        (trace_write_.empty() ? "" : " " + shown_path(trace_path_)));
  if (!trace_write_.empty()) {
    const trace::Counts n = trace::counts();
    say_line(tool_, fmt::format("trace: {} events{}, GPU spans: {}; the report's rows are flagged traced", n.events,
                                n.dropped ? fmt::format(" ({} dropped: the trace was full)", n.dropped) : "",
                                gpu_spans_));
  }
  if (stdout_closed())
    say(tool_, std::string("stdout was closed (broken pipe), so the table is cut short") +
                   (files ? "; the report files are complete" : ""));
  if (!stdout_failure().empty()) {
    // Said already when the body's own printing failed (fail() printed it as the error).
    if (!report_.error || report_.error->message != stdout_failure())
      say(tool_, "failed: " + stdout_failure() + (files ? " (the report files are complete)" : ""));
    return kExitFailure;
  }
  return kExitOk;
}

void Experiment::start_trace() {
  trace::Options o;
  o.iterations = trace_iterations_;
  trace::start(o);
  trace::name_thread("main");
  report_.trace_rows = true;
  if (device_id_ < 0) {
    gpu_spans_ = "none: the CPU backend runs every kernel on the host; the trace holds host spans only";
    return;
  }
#ifdef TWOGRAPH_HAVE_CUDA
  const std::string why = trace::start_gpu_activity(device_id_, report_.meta.device_name);
  gpu_spans_ = why.empty() ? "CUPTI activity records (kernels, copies, memsets, CUDA runtime calls)"
                           : "none: CUPTI could not start (" + why + "); the trace holds host spans only";
  if (!why.empty()) say_line(tool_, "warning: trace without GPU spans: " + why);
#endif
}

std::string Experiment::finish_trace() {
  std::string dropped_gpu = "0";
#ifdef TWOGRAPH_HAVE_CUDA
  dropped_gpu = std::to_string(trace::stop_gpu_activity());
#endif
  trace::stop();
  const Metadata& m = report_.meta;
  return trace::to_json({{"tool", m.tool},
                         {"tool_version", m.tool_version},
                         {"git_rev", m.git_rev},
                         {"command_line", m.command_line},
                         {"utc_time", m.utc_time},
                         {"backend", device_id_ >= 0 ? "cuda" : "cpu"},
                         {"device", m.device_name},
                         {"gpu_spans", gpu_spans_},
                         {"gpu_records_dropped", dropped_gpu}});
}

int Experiment::fail(const std::exception& e) {
  // Classified first: nothing else may touch CUDA before the probe sees the context.
  const Failure f = classify_failure(e, on_gpu(), report_.meta.command_line);
  say(tool_, std::string("failed: ") + e.what());
  if (!f.advice.empty()) say(tool_, f.advice);
  report_.error = f.error;
  if (!json_write_.empty() || !csv_write_.empty())
    say(tool_, fmt::format("the report keeps the {} measurements taken before the failure and records it ({})",
                           report_.measurements.size(), f.error.kind));
  const int rc = write_reports();  // 0, 1, or the signal's status when one stopped the write
  return rc == kExitOk ? kExitFailure : rc;
}

}  // namespace tg::harness
