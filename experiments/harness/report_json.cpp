// JSON form of a report (schema version 1, docs/report-format.md) and its structural check.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

Param param_from(const json& j) {
  if (j.is_string()) return Param(j.get<std::string>());
  if (j.is_boolean()) return Param(j.get<bool>());
  if (j.is_number_integer()) return Param(j.get<long long>());
  return Param(j.get<double>());
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

// --- the validator: a hand-written mirror of docs/report.schema.json ---
// A wrong value as the message shows it. Containers by size only: dump() recurses,
// and a hostile file nested 100k levels deep would overflow the stack.
std::string shown(const json& v) {
  if (v.is_array()) return fmt::format("an array of {} items", v.size());
  if (v.is_object()) return fmt::format("an object with {} keys", v.size());
  return v.dump().substr(0, 60);
}

struct Checker {
  std::vector<std::string> errors;
  const json* field(const json& obj, const std::string& where, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      errors.push_back(fmt::format("{}{}: missing", where, key));
      return nullptr;
    }
    return &*it;
  }
  template <class Pred>
  const json* typed(const json& obj, const std::string& where, const char* key, Pred ok, const char* what) {
    const json* v = field(obj, where, key);
    if (v && !ok(*v)) {
      errors.push_back(fmt::format("{}{}: must be {}, got {}", where, key, what, shown(*v)));
      return nullptr;
    }
    return v;
  }
  void str(const json& o, const std::string& w, const char* k) {
    typed(o, w, k, [](const json& v) { return v.is_string(); }, "a string");
  }
  const json* num(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& v) { return v.is_number(); }, "a number");
  }
  void integer(const json& o, const std::string& w, const char* k) {
    typed(o, w, k, [](const json& v) { return v.is_number_integer(); }, "an integer");
  }
  void boolean(const json& o, const std::string& w, const char* k) {
    typed(o, w, k, [](const json& v) { return v.is_boolean(); }, "true or false");
  }
  const json* object(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& v) { return v.is_object(); }, "an object");
  }
  const json* array(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& v) { return v.is_array(); }, "an array");
  }
};

void check_measurement(Checker& c, const json& m, const std::string& w) {
  if (!m.is_object()) {
    c.errors.push_back(w + ": must be an object");
    return;
  }
  c.str(m, w + ".", "name");
  if (auto* p = c.object(m, w + ".", "params"))
    for (auto it = p->begin(); it != p->end(); ++it)
      if (!(it->is_string() || it->is_number() || it->is_boolean()))
        c.errors.push_back(fmt::format("{}.params.{}: must be a string, number or boolean", w, it.key()));
  c.str(m, w + ".", "unit");
  if (auto* b = c.typed(m, w + ".", "better", [](const json& v) { return v.is_string(); }, "a string"))
    if (*b != "lower" && *b != "higher") c.errors.push_back(w + ".better: must be \"lower\" or \"higher\"");
  if (auto* t = c.typed(m, w + ".", "timer", [](const json& v) { return v.is_string(); }, "a string"))
    if (*t != "host" && *t != "gpu" && *t != "derived" && *t != "value")
      c.errors.push_back(w + ".timer: must be host, gpu, derived or value");
  if (auto* s = c.array(m, w + ".", "samples")) {
    if (s->empty()) c.errors.push_back(w + ".samples: must hold at least one sample");
    for (size_t i = 0; i < s->size(); ++i)
      if (!(*s)[i].is_number()) c.errors.push_back(fmt::format("{}.samples[{}]: must be a number", w, i));
  }
  if (auto* n = c.typed(m, w + ".", "count", [](const json& v) { return v.is_number_integer(); }, "an integer"))
    if (*n < 1) c.errors.push_back(fmt::format("{}.count: must be >= 1, got {}", w, n->dump()));
  for (const char* k : {"min", "p10", "median", "p90", "max", "mean", "noise"}) c.num(m, w + ".", k);
  c.boolean(m, w + ".", "noisy");
  if (auto* e = c.object(m, w + ".", "extra"))
    for (auto it = e->begin(); it != e->end(); ++it)
      if (!(it->is_number() || it->is_null()))
        c.errors.push_back(fmt::format("{}.extra.{}: must be a number (or null when not finite)", w, it.key()));
  auto num_at = [&](const char* k, double& out) {
    auto it = m.find(k);
    if (it == m.end() || !it->is_number()) return false;
    out = it->get<double>();
    return true;
  };
  double lo = 0, md = 0, hi = 0;
  if (num_at("p10", lo) && num_at("median", md) && num_at("p90", hi) && !(lo <= md && md <= hi))
    c.errors.push_back(w + ": p10 <= median <= p90 does not hold");
}

// The optional top-level "error" of a run that failed.
void check_error(Checker& c, const json& e) {
  if (!e.is_object()) {
    c.errors.push_back("error: must be an object");
    return;
  }
  if (auto* k = c.typed(e, "error.", "kind", [](const json& v) { return v.is_string(); }, "a string")) {
    bool known = false;
    for (const char* name : kRunErrorKinds) known = known || *k == name;
    if (!known) c.errors.push_back("error.kind: must be sticky_cuda_error, out_of_memory or failure");
  }
  c.str(e, "error.", "message");
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
  j["run"] = {{"command_line", m.command_line}, {"utc_time", m.utc_time}, {"quick", m.quick},
              {"loop", {{"warmup", m.warmup}, {"min_reps", m.min_reps}, {"min_time_s", m.min_time_s},
                        {"max_reps", m.max_reps}}}};
  j["host"] = {{"name", m.host_name}, {"cpu_model", m.cpu_model}, {"cpu_threads", m.cpu_threads}};
  j["device"] = {{"spec", m.device_spec}, {"kind", m.device_id >= 0 ? "cuda" : "cpu"}, {"id", m.device_id},
                 {"name", m.device_name}};
  j["gpus"] = gpus;
  j["software"] = {{"cuda_runtime_version", m.cuda_runtime_version}, {"cuda_driver_version", m.cuda_driver_version},
                   {"cublas_version", m.cublas_version}, {"openblas_config", m.openblas_config},
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
  }
  j["measurements"] = ms;
  json notes = json::array();
  for (const auto& n : r.notes) notes.push_back({{"part", n.part}, {"reason", n.reason}});
  j["notes"] = notes;
  if (r.error) j["error"] = {{"kind", r.error->kind}, {"message", r.error->message}};
  return j.dump(indent) + "\n";
}

std::vector<std::string> validate_report_json(const std::string& text) {
  Checker c;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return {fmt::format("not valid JSON: {}", e.what())};
  }
  if (!j.is_object()) return {"the top level must be an object"};
  if (auto* v = c.typed(j, "", "schema_version", [](const json& x) { return x.is_number_integer(); }, "an integer"))
    if (v->get<long long>() != kSchemaVersion)
      return {fmt::format("schema_version {} is not supported (this build reads version {})", v->dump(), kSchemaVersion)};
  if (auto* t = c.object(j, "", "tool")) {
    for (const char* k : {"name", "version", "git_rev", "build_type"}) c.str(*t, "tool.", k);
    c.boolean(*t, "tool.", "cuda_build");
  }
  if (auto* r = c.object(j, "", "run")) {
    c.str(*r, "run.", "command_line");
    c.str(*r, "run.", "utc_time");
    c.boolean(*r, "run.", "quick");
    if (auto* l = c.object(*r, "run.", "loop")) {
      for (const char* k : {"warmup", "min_reps", "max_reps"}) c.integer(*l, "run.loop.", k);
      c.num(*l, "run.loop.", "min_time_s");
    }
  }
  if (auto* h = c.object(j, "", "host")) {
    c.str(*h, "host.", "name");
    c.str(*h, "host.", "cpu_model");
  }
  if (auto* d = c.object(j, "", "device")) {
    c.str(*d, "device.", "kind");
    if (d->contains("spec")) c.str(*d, "device.", "spec");  // optional, but read as a string
    c.integer(*d, "device.", "id");
    c.str(*d, "device.", "name");
  }
  if (auto* g = c.array(j, "", "gpus"))
    for (size_t i = 0; i < g->size(); ++i) {
      const std::string w = fmt::format("gpus[{}].", i);
      if (!(*g)[i].is_object()) { c.errors.push_back(fmt::format("gpus[{}]: must be an object", i)); continue; }
      c.integer((*g)[i], w, "id");
      c.str((*g)[i], w, "name");
    }
  c.object(j, "", "software");
  if (auto* ms = c.array(j, "", "measurements"))
    for (size_t i = 0; i < ms->size(); ++i) check_measurement(c, (*ms)[i], fmt::format("measurements[{}]", i));
  if (auto* ns = c.array(j, "", "notes"))
    for (size_t i = 0; i < ns->size(); ++i) {
      const std::string w = fmt::format("notes[{}].", i);
      if (!(*ns)[i].is_object()) { c.errors.push_back(fmt::format("notes[{}]: must be an object", i)); continue; }
      c.str((*ns)[i], w, "part");
      c.str((*ns)[i], w, "reason");
    }
  if (auto it = j.find("error"); it != j.end()) check_error(c, *it);
  return c.errors;
}

Report report_from_json(const std::string& text, const std::string& where) {
  const auto errors = validate_report_json(text);
  if (!errors.empty()) {
    std::string msg = fmt::format("{}: not a valid twograph report (schema version {}): {}", where, kSchemaVersion,
                                  errors.front());
    if (errors.size() > 1) msg += fmt::format(" (and {} more problems)", errors.size() - 1);
    throw ReportError(msg);
  }
  const json j = json::parse(text);
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
    for (auto it = x["params"].begin(); it != x["params"].end(); ++it) o.params.emplace(it.key(), param_from(*it));
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
    r.measurements.push_back(std::move(o));
  }
  for (const auto& n : j["notes"]) r.notes.push_back({n["part"], n["reason"]});
  if (j.contains("error")) r.error = RunError{j["error"]["kind"], j["error"]["message"]};
  return r;
}

Report read_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ReportError(fmt::format("{}: is a directory; give the report's .json file (written by --json)", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().find_first_not_of(" \t\r\n") == std::string::npos)
    throw ReportError(fmt::format("{}: is empty, so it is not a report (those are written whole or not at all); "
                                  "rerun the experiment with --json", path));
  return report_from_json(ss.str(), path);
}

}  // namespace tg::harness
