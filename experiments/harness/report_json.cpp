// JSON form of a report (schema version 1, docs/report-format.md): writing, and reading a
// text that the checks of report_check.h accept.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "experiments/harness/report_check.h"
#include "experiments/harness/report_io.h"

namespace tg::harness {

using nlohmann::json;

namespace {

json param_json(const Param& p) {
  switch (p.kind()) {
    case Param::Kind::string: return p.as_string();
    case Param::Kind::integer: return p.as_int();
    case Param::Kind::real: return p.as_real();
    case Param::Kind::boolean: return p.as_bool();
  }
  return nullptr;
}

// JSON has no NaN/Inf; a derived number that is not finite is written as null.
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json gpu_json(const Metadata::Gpu& g) {
  return json{{"id", g.id},
              {"name", g.name},
              {"pci_bus_id", g.pci_bus_id},
              {"sm_count", g.sm_count},
              {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
              {"total_bytes", g.total_bytes},
              {"free_bytes", g.free_bytes},
              {"sm_clock_khz", g.sm_clock_khz},
              {"mem_clock_khz", g.mem_clock_khz},
              {"mem_bus_width_bits", g.mem_bus_width_bits},
              {"pcie_gen", g.pcie_gen},
              {"pcie_width", g.pcie_width},
              {"l2_bytes", g.l2_bytes}};
}

}  // namespace


std::string to_json(const Report& r, int indent) {
  const Metadata& m = r.meta;
  json gpus = json::array();
  for (const auto& g : m.gpus) gpus.push_back(gpu_json(g));
  json j;
  j["schema_version"] = m.schema_version;
  j["tool"] = {{"name", m.tool}, {"version", m.tool_version}, {"git_rev", m.git_rev},
               {"build_type", m.build_type}, {"cuda_build", m.cuda_build}};
  json options = json::object();
  for (const auto& [group, values] : m.options) {
    json g = json::object();
    for (const auto& [k, v] : values) g[k] = param_json(v);
    options[group] = g;
  }
  j["run"] = {{"command_line", m.command_line}, {"utc_time", m.utc_time}, {"quick", m.quick},
              {"loop", {{"warmup", m.warmup}, {"min_reps", m.min_reps}, {"min_time_s", m.min_time_s},
                        {"max_reps", m.max_reps}}},
              {"options", options}};
  j["host"] = {{"name", m.host_name}, {"cpu_model", m.cpu_model}, {"cpu_threads", m.cpu_threads}};
  j["device"] = {{"spec", m.device_spec}, {"kind", m.device_id >= 0 ? "cuda" : "cpu"}, {"id", m.device_id},
                 {"name", m.device_name}};
  j["gpus"] = gpus;
  j["software"] = {{"cuda_runtime_version", m.cuda_runtime_version}, {"cuda_driver_version", m.cuda_driver_version},
                   {"cublas_version", m.cublas_version},
                   {"cudnn_version", m.cudnn_version}, {"openblas_config", m.openblas_config},
                   {"blas_threads", m.blas_threads}};
  json ms = json::array();
  for (const auto& x : r.measurements) {
    json params = json::object();
    for (const auto& [k, v] : x.params) params[k] = param_json(v);
    json extra = json::object();
    for (const auto& [k, v] : x.extra) extra[k] = number_or_null(v);
    const Summary& s = x.stats;
    ms.push_back({{"name", x.name}, {"params", params}, {"unit", x.unit}, {"better", x.better},
                  {"timer", x.timer}, {"count", s.count}, {"min", s.min}, {"p10", s.p10},
                  {"median", s.median}, {"p90", s.p90}, {"max", s.max}, {"mean", s.mean},
                  {"noise", s.noise}, {"noisy", s.noisy}, {"extra", extra}, {"samples", x.samples}});
    if (x.traced) ms.back()["traced"] = true;  // absent: untraced (reports before tracing existed too)
  }
  j["measurements"] = ms;
  json notes = json::array();
  for (const auto& n : r.notes) notes.push_back({{"part", n.part}, {"reason", n.reason}});
  j["notes"] = notes;
  if (r.error) j["error"] = {{"kind", r.error->kind}, {"message", r.error->message}};
  // The command line, a path or a --params value may be any bytes, and JSON holds UTF-8
  // only: what is not UTF-8 becomes U+FFFD rather than failing the write after the run.
  return j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace detail {
Param param_from_json(const json& j) {
  if (j.is_string()) return Param(j.get<std::string>());
  if (j.is_boolean()) return Param(j.get<bool>());
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return Param(j.get<double>());
  if (j.is_number_integer()) return Param(j.get<long long>());
  return Param(j.get<double>());
}
}  // namespace detail

std::vector<std::string> validate_report_json(const std::string& text) {
  json j;
  if (const std::string why = detail::parse_strict(text, j); !why.empty()) return {"not valid JSON: " + why};
  return detail::validate_report(j);
}

Report report_from_json(const std::string& text, const std::string& where) {
  json j;
  std::vector<std::string> errors;
  if (const std::string why = detail::parse_strict(text, j); !why.empty()) errors = {"not valid JSON: " + why};
  else errors = detail::validate_report(j);
  if (!errors.empty()) {
    std::string msg = fmt::format("{}: not a valid twograph report (schema version {}): {}", where, kSchemaVersion,
                                  errors.front());
    if (errors.size() > 1) msg += fmt::format(" (and {} more problems)", errors.size() - 1);
    throw ReportError(msg);
  }
  Report r;
  Metadata& m = r.meta;
  m.tool = j["tool"]["name"];
  m.tool_version = j["tool"]["version"];
  m.git_rev = j["tool"]["git_rev"];
  m.build_type = j["tool"]["build_type"];
  m.cuda_build = j["tool"]["cuda_build"];
  m.command_line = j["run"]["command_line"];
  m.utc_time = j["run"]["utc_time"];
  m.quick = j["run"]["quick"];
  if (const auto it = j["run"].find("options"); it != j["run"].end())
    for (auto g = it->begin(); g != it->end(); ++g)
      for (auto k = g->begin(); k != g->end(); ++k) m.options[g.key()].emplace(k.key(), detail::param_from_json(*k));
  m.host_name = j["host"]["name"];
  m.cpu_model = j["host"]["cpu_model"];
  m.device_spec = j["device"].value("spec", "");
  m.device_id = j["device"]["id"];
  m.device_name = j["device"]["name"];
  for (const auto& g : j["gpus"]) {
    Metadata::Gpu o;
    o.id = g["id"];
    o.name = g["name"];
    m.gpus.push_back(o);
  }
  for (const auto& x : j["measurements"]) {
    Measurement o;
    o.name = x["name"];
    for (auto it = x["params"].begin(); it != x["params"].end(); ++it) o.params.emplace(it.key(), detail::param_from_json(*it));
    o.unit = x["unit"];
    o.better = x["better"];
    o.timer = x["timer"];
    o.samples = x["samples"].get<std::vector<double>>();
    // Keep the statistics as written, so a report is compared on what it says.
    Summary& s = o.stats;
    s.count = x["count"];
    s.min = x["min"];
    s.p10 = x["p10"];
    s.median = x["median"];
    s.p90 = x["p90"];
    s.max = x["max"];
    s.mean = x["mean"];
    s.noise = x["noise"];
    s.noisy = x["noisy"];
    for (auto it = x["extra"].begin(); it != x["extra"].end(); ++it)
      o.extra[it.key()] = it->is_null() ? NAN : it->get<double>();
    o.traced = x.value("traced", false);
    r.measurements.push_back(std::move(o));
  }
  for (const auto& n : j["notes"]) r.notes.push_back({n["part"], n["reason"]});
  if (j.contains("error")) r.error = RunError{j["error"]["kind"], j["error"]["message"]};
  return r;
}

}  // namespace tg::harness
