#include "experiments/memory/context_memory.h"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "experiments/harness/cold_start.h"

namespace tg::memory {

namespace {

constexpr const char* kSnapshotTag = "context_memory";
constexpr const char* kSkipTag = "context_memory_skip";
constexpr const char* kSettingTag = "context_memory_setting";
constexpr const char* kNoteTag = "context_memory_note";

// A field of the line protocol: tabs and line breaks would split it.
std::string field(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}
std::string optional_bytes(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string f;
  std::istringstream in(line);
  while (std::getline(in, f, '\t')) out.push_back(f);
  if (!line.empty() && line.back() == '\t') out.emplace_back();
  return out;
}

// A byte count >= 0, or "-" (none) where `dash_ok`.
bool parse_bytes(const std::string& s, bool dash_ok, std::optional<int64_t>& out) {
  if (dash_ok && s == "-") {
    out.reset();
    return true;
  }
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  out = v;
  return true;
}

}  // namespace

std::string format_context_output(const ContextChildOutput& out) {
  std::string s;
  if (!out.skip_reason.empty()) s += fmt::format("{}\t{}\n", kSkipTag, field(out.skip_reason));
  for (const auto& [key, value] : out.settings) s += fmt::format("{}\t{}\t{}\n", kSettingTag, field(key), field(value));
  for (const auto& [part, reason] : out.notes) s += fmt::format("{}\t{}\t{}\n", kNoteTag, field(part), field(reason));
  for (const ContextSnapshot& c : out.snapshots)
    s += fmt::format("{}\t{}\t{}\t{}\t{}\n", kSnapshotTag, field(c.step), c.device_used, optional_bytes(c.process_used),
                     optional_bytes(c.meminfo_used));
  return s;
}

ContextChildOutput parse_context_output(const std::string& text) {
  ContextChildOutput out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::vector<std::string> f = split_tabs(line);
    bool ok = false;
    if (f.size() == 2 && f[0] == kSkipTag && !f[1].empty()) {
      out.skip_reason = f[1];
      ok = true;
    } else if (f.size() == 3 && (f[0] == kSettingTag || f[0] == kNoteTag) && !f[1].empty() && !f[2].empty()) {
      (f[0] == kSettingTag ? out.settings : out.notes).emplace_back(f[1], f[2]);
      ok = true;
    } else if (f.size() == 5 && f[0] == kSnapshotTag && !f[1].empty()) {
      ContextSnapshot c;
      c.step = f[1];
      std::optional<int64_t> device;
      ok = parse_bytes(f[2], false, device) && parse_bytes(f[3], true, c.process_used) &&
           parse_bytes(f[4], true, c.meminfo_used);
      if (ok) {
        c.device_used = *device;
        out.snapshots.push_back(std::move(c));
      }
    }
    if (!ok)
      throw std::runtime_error(fmt::format(
          "context-memory child output, line {}: '{}' is not one of '{}<TAB>step<TAB>device_B<TAB>process_B|-<TAB>"
          "meminfo_B|-', '{}<TAB>reason', '{}<TAB>key<TAB>value', '{}<TAB>part<TAB>reason'",
          n, line, kSnapshotTag, kSkipTag, kSettingTag, kNoteTag));
  }
  if (out.skip_reason.empty() && out.snapshots.size() < 2)
    throw std::runtime_error(fmt::format(
        "context-memory child output: {} readings and no skip line; a child measures before and after its steps",
        out.snapshots.size()));
  return out;
}

ContextDeltas context_deltas(const std::vector<ContextSnapshot>& s) {
  if (s.size() < 2)
    throw std::invalid_argument(fmt::format("context_deltas: {} readings; it needs one before the steps and one "
                                            "after each", s.size()));
  ContextDeltas d;
  bool listed_after_every_step = true;
  for (size_t i = 1; i < s.size(); ++i) listed_after_every_step = listed_after_every_step && s[i].process_used;
  const bool listed_before = s[0].process_used.has_value();
  const bool per_process = listed_after_every_step && !listed_before;
  d.source = per_process ? "nvml_process" : "nvml_device";
  if (listed_before)
    d.fallback_note = fmt::format("NVML listed the process with {} B before its first step: something created a "
                                  "context earlier, so the first step's row is too low",
                                  *s[0].process_used);
  else if (!per_process)
    d.fallback_note = "NVML does not list this process's usedGpuMemory after every step (a container with its own "
                      "PID namespace, or no permission): the rows are the device's used-memory deltas, which other "
                      "processes on the GPU change too";
  for (size_t i = 1; i < s.size(); ++i) {
    ContextStepBytes b;
    b.step = s[i].step;
    b.device_delta = s[i].device_used - s[i - 1].device_used;
    if (s[i].meminfo_used && s[i - 1].meminfo_used) b.meminfo_delta = *s[i].meminfo_used - *s[i - 1].meminfo_used;
    b.process_after = s[i].process_used;
    b.bytes = per_process ? *s[i].process_used - s[i - 1].process_used.value_or(0) : b.device_delta;
    d.steps.push_back(std::move(b));
  }
  d.total = per_process ? *s.back().process_used : s.back().device_used - s.front().device_used;
  return d;
}

ModuleLoadingEnv parse_module_loading_env(const char* value) {
  if (!value) return {"unset", ""};
  const std::string v = value;
  if (v == "LAZY") return {v, "lazy"};
  if (v == "EAGER") return {v, "eager"};
  return {v.empty() ? "empty" : v, ""};
}

void record_context_memory(harness::Report& r, const ContextChildOutput& out) {
  for (const auto& [part, reason] : out.notes) r.skip(part, reason);
  if (!out.skip_reason.empty()) {
    r.skip("context_memory", out.skip_reason);
    return;
  }
  const ContextDeltas d = context_deltas(out.snapshots);
  harness::Params common{{"source", d.source}};
  for (const auto& [key, value] : out.settings) common.emplace(key, value);
  for (const ContextStepBytes& b : d.steps) {
    harness::Params p = common;
    p.emplace("step", b.step);
    auto& m = r.add_value("context_memory", p, static_cast<double>(b.bytes), "B");
    m.extra["nvml_device_delta_B"] = static_cast<double>(b.device_delta);
    if (b.meminfo_delta) m.extra["meminfo_delta_B"] = static_cast<double>(*b.meminfo_delta);
    if (b.process_after) m.extra["nvml_process_B"] = static_cast<double>(*b.process_after);
  }
  auto& total = r.add_value("context_memory_total", common, static_cast<double>(d.total), "B");
  total.extra["nvml_device_delta_B"] =
      static_cast<double>(out.snapshots.back().device_used - out.snapshots.front().device_used);
  if (!d.fallback_note.empty()) r.skip("context_memory source=nvml_process", d.fallback_note);
}

void measure_context_memory(harness::Report& r, const std::vector<std::string>& child_argv) {
  record_context_memory(r, parse_context_output(harness::run_child(child_argv)));
}

}  // namespace tg::memory
