// The report validator: a hand-written mirror of docs/report.schema.json, plus the
// rules a JSON Schema cannot state (docs/report-format.md, "Validation"). Each problem
// is "<JSON path>: <problem>", in document order.
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <unordered_map>

#include "experiments/harness/report.h"
#include "experiments/harness/report_check.h"

namespace tg::harness::detail {

namespace {

using nlohmann::json;

// A wrong value as the message shows it. Containers by size only (dump() recurses),
// strings cut short.
std::string shown(const json& v) {
  if (v.is_array()) return fmt::format("an array of {} items", v.size());
  if (v.is_object()) return fmt::format("an object with {} keys", v.size());
  const std::string d = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return d.size() <= 60 ? d : d.substr(0, 57) + "...";
}

bool is_int(const json& v) { return v.is_number_integer(); }
// An integer's value for a range check; an unsigned above INT64_MAX saturates, which
// every range below is under.
int64_t int_of(const json& v) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return INT64_MAX;
  return v.get<int64_t>();
}

// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ (the schema's pattern), and
// a real time: month 1-12, day 1-31, hour 0-23, minute 0-59, second 0-60.
bool is_utc_time(const std::string& s) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != sizeof shape - 1) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) return false;
  auto at = [&](size_t i) { return (s[i] - '0') * 10 + (s[i + 1] - '0'); };
  return at(5) >= 1 && at(5) <= 12 && at(8) >= 1 && at(8) <= 31 && at(11) <= 23 && at(14) <= 59 && at(17) <= 60;
}

// ^[0-9]+\.[0-9]+$
bool is_compute_capability(const std::string& s) {
  const auto dot = s.find('.');
  auto digits = [](const std::string& t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
  };
  return dot != std::string::npos && digits(s.substr(0, dot)) && digits(s.substr(dot + 1));
}

struct Checker {
  std::vector<std::string> errors;

  void add(std::string e) { errors.push_back(std::move(e)); }

  const json* field(const json& obj, const std::string& w, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      add(fmt::format("{}{}: missing", w, key));
      return nullptr;
    }
    return &*it;
  }
  const json* typed(const json& obj, const std::string& w, const char* key, bool (*ok)(const json&), const char* what) {
    const json* v = field(obj, w, key);
    if (v && !ok(*v)) {
      add(fmt::format("{}{}: must be {}, got {}", w, key, what, shown(*v)));
      return nullptr;
    }
    return v;
  }
  const json* str(const json& o, const std::string& w, const char* k, size_t min_len = 0) {
    const json* v = typed(o, w, k, [](const json& x) { return x.is_string(); }, "a string");
    if (v && v->get_ref<const std::string&>().size() < min_len) {
      add(fmt::format("{}{}: must not be empty", w, k));
      return nullptr;
    }
    return v;
  }
  void one_of(const json& o, const std::string& w, const char* k, const std::vector<const char*>& allowed) {
    const json* v = typed(o, w, k, [](const json& x) { return x.is_string(); }, "a string");
    if (!v) return;
    std::string names;
    for (const char* a : allowed) {
      if (*v == a) return;
      names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", a);
    }
    add(fmt::format("{}{}: must be one of {}, got {}", w, k, names, shown(*v)));
  }
  // hi: what the C++ side reads it into (int unless said otherwise).
  const json* integer(const json& o, const std::string& w, const char* k, int64_t lo, int64_t hi = INT_MAX) {
    const json* v = typed(o, w, k, is_int, "an integer");
    if (v && (int_of(*v) < lo || int_of(*v) > hi)) {
      if (hi == INT64_MAX) add(fmt::format("{}{}: must be an integer >= {}, got {}", w, k, lo, shown(*v)));
      else add(fmt::format("{}{}: must be an integer in [{}, {}], got {}", w, k, lo, hi, shown(*v)));
      return nullptr;
    }
    return v;
  }
  const json* number(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& x) { return x.is_number(); }, "a number");
  }
  void non_negative(const json& o, const std::string& w, const char* k) {
    const json* v = number(o, w, k);
    if (v && v->get<double>() < 0) add(fmt::format("{}{}: must be >= 0, got {}", w, k, shown(*v)));
  }
  void boolean(const json& o, const std::string& w, const char* k) {
    typed(o, w, k, [](const json& x) { return x.is_boolean(); }, "true or false");
  }
  const json* object(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& x) { return x.is_object(); }, "an object");
  }
  const json* array(const json& o, const std::string& w, const char* k) {
    return typed(o, w, k, [](const json& x) { return x.is_array(); }, "an array");
  }
  // Each element of an array of objects, with its path.
  void each_object(const json& arr, const std::string& name, const std::function<void(const json&, const std::string&)>& f) {
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string w = fmt::format("{}[{}]", name, i);
      if (!arr[i].is_object()) add(fmt::format("{}: must be an object, got {}", w, shown(arr[i])));
      else f(arr[i], w);
    }
  }
};

void check_gpu(Checker& c, const json& g, const std::string& at) {
  const std::string w = at + ".";
  c.integer(g, w, "id", 0);
  c.str(g, w, "name");
  c.str(g, w, "pci_bus_id");
  if (const json* cc = c.str(g, w, "compute_capability"); cc && !is_compute_capability(*cc))
    c.add(fmt::format("{}compute_capability: must look like \"9.0\", got {}", w, shown(*cc)));
  for (const char* k : {"sm_count", "sm_clock_khz", "mem_clock_khz", "mem_bus_width_bits", "pcie_gen", "pcie_width"})
    c.integer(g, w, k, 0);
  for (const char* k : {"total_bytes", "free_bytes", "l2_bytes"}) c.integer(g, w, k, 0, INT64_MAX);
}

void check_measurement(Checker& c, const json& m, const std::string& at) {
  const std::string w = at + ".";
  c.str(m, w, "name", 1);
  if (const json* p = c.object(m, w, "params"))
    for (auto it = p->begin(); it != p->end(); ++it)
      if (!(it->is_string() || it->is_number() || it->is_boolean()))
        c.add(fmt::format("{}params.{}: must be a string, number or boolean, got {}", w, it.key(), shown(*it)));
  c.str(m, w, "unit");
  c.one_of(m, w, "better", {"lower", "higher"});
  c.one_of(m, w, "timer", {"host", "gpu", "derived", "value"});
  const json* samples = c.array(m, w, "samples");
  if (samples) {
    if (samples->empty()) c.add(w + "samples: must hold at least one sample");
    for (size_t i = 0; i < samples->size(); ++i)
      if (!(*samples)[i].is_number())
        c.add(fmt::format("{}samples[{}]: must be a number, got {}", w, i, shown((*samples)[i])));
  }
  const json* count = c.integer(m, w, "count", 1, INT64_MAX);
  if (count && samples && static_cast<size_t>(int_of(*count)) != samples->size())
    c.add(fmt::format("{}count: is {} but samples holds {}", w, int_of(*count), samples->size()));
  const char* order[] = {"min", "p10", "median", "p90", "max"};
  bool all = true;
  for (const char* k : order) all = c.number(m, w, k) && all;
  c.number(m, w, "mean");
  c.non_negative(m, w, "noise");
  c.boolean(m, w, "noisy");
  if (m.contains("traced")) c.boolean(m, w, "traced");  // optional: absent means untraced
  if (const json* e = c.object(m, w, "extra"))
    for (auto it = e->begin(); it != e->end(); ++it)
      if (!(it->is_number() || it->is_null()))
        c.add(fmt::format("{}extra.{}: must be a number (or null when not finite), got {}", w, it.key(), shown(*it)));
  if (all) {
    double v[5];
    for (int i = 0; i < 5; ++i) v[i] = m[order[i]].get<double>();
    if (!(v[0] <= v[1] && v[1] <= v[2] && v[2] <= v[3] && v[3] <= v[4]))
      c.add(fmt::format("{}: min <= p10 <= median <= p90 <= max does not hold (min {}, p10 {}, median {}, p90 {}, "
                        "max {})", at, v[0], v[1], v[2], v[3], v[4]));
  }
}

void check_duplicates(Checker& c, const json& ms) {
  std::unordered_map<std::string, size_t> first;
  first.reserve(ms.size());
  for (size_t i = 0; i < ms.size(); ++i) {
    const json& m = ms[i];
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("params") ||
        !m["params"].is_object())
      continue;  // already reported
    Params params;
    for (auto it = m["params"].begin(); it != m["params"].end(); ++it)
      if (it->is_string() || it->is_number() || it->is_boolean()) params.emplace(it.key(), param_from_json(*it));
    const std::string& name = m["name"].get_ref<const std::string&>();
    const auto [it, fresh] = first.emplace(measurement_key(name, params), i);
    if (!fresh)
      c.add(fmt::format("measurements[{}]: has the same name and params as measurements[{}] ({} [{}]); a report "
                        "holds each pair once, and tg-report compare matches on it",
                        i, it->second, name.substr(0, 40), params_str(params).substr(0, 80)));
  }
}

}  // namespace

std::vector<std::string> validate_report(const json& j) {
  Checker c;
  if (!j.is_object()) return {fmt::format("the top level must be an object, got {}", shown(j))};
  if (auto* v = c.typed(j, "", "schema_version", is_int, "an integer"))
    if (int_of(*v) != kSchemaVersion)
      return {fmt::format("schema_version {} is not supported (this build reads version {})", v->dump(), kSchemaVersion)};
  if (auto* t = c.object(j, "", "tool")) {
    c.str(*t, "tool.", "name", 1);
    for (const char* k : {"version", "git_rev", "build_type"}) c.str(*t, "tool.", k);
    c.boolean(*t, "tool.", "cuda_build");
  }
  if (auto* r = c.object(j, "", "run")) {
    c.str(*r, "run.", "command_line");
    if (auto* u = c.str(*r, "run.", "utc_time"); u && !is_utc_time(*u))
      c.add(fmt::format("run.utc_time: must be a UTC time like \"2026-12-02T13:20:00Z\", got {}", shown(*u)));
    c.boolean(*r, "run.", "quick");
    if (auto* l = c.object(*r, "run.", "loop")) {
      c.integer(*l, "run.loop.", "warmup", 0);
      c.integer(*l, "run.loop.", "min_reps", 1);
      c.non_negative(*l, "run.loop.", "min_time_s");
      c.integer(*l, "run.loop.", "max_reps", 1);
    }
    // Optional: reports written before the options were recorded have none.
    if (auto it = r->find("options"); it != r->end()) {
      if (!it->is_object()) {
        c.add(fmt::format("run.options: must be an object, got {}", shown(*it)));
      } else {
        for (auto g = it->begin(); g != it->end(); ++g) {
          if (!g->is_object()) {
            c.add(fmt::format("run.options.{}: must be an object, got {}", g.key(), shown(*g)));
            continue;
          }
          for (auto k = g->begin(); k != g->end(); ++k)
            if (!(k->is_boolean() || k->is_number_integer()))
              c.add(fmt::format("run.options.{}.{}: must be true, false or an integer, got {}", g.key(), k.key(),
                                shown(*k)));
        }
      }
    }
  }
  if (auto* h = c.object(j, "", "host")) {
    c.str(*h, "host.", "name");
    c.str(*h, "host.", "cpu_model");
    c.integer(*h, "host.", "cpu_threads", 0);
  }
  if (auto* d = c.object(j, "", "device")) {
    c.str(*d, "device.", "spec");
    c.one_of(*d, "device.", "kind", {"cpu", "cuda"});
    const json* id = c.integer(*d, "device.", "id", -1);
    c.str(*d, "device.", "name");
    const json* kind = d->contains("kind") ? &(*d)["kind"] : nullptr;
    if (id && kind && (*kind == "cpu" || *kind == "cuda") && (*kind == "cpu") != (int_of(*id) == -1))
      c.add(fmt::format("device: kind {} with id {} (the CPU is id -1, a CUDA device 0 or more)",
                        shown((*d)["kind"]), int_of(*id)));
  }
  if (auto* g = c.array(j, "", "gpus")) c.each_object(*g, "gpus", [&](const json& x, const std::string& w) { check_gpu(c, x, w); });
  if (auto* s = c.object(j, "", "software")) {
    for (const char* k : {"cuda_runtime_version", "cuda_driver_version", "cublas_version", "blas_threads"})
      c.integer(*s, "software.", k, 0);
    if (s->contains("cudnn_version")) c.integer(*s, "software.", "cudnn_version", 0);  // optional: older reports lack it
    c.str(*s, "software.", "openblas_config");
  }
  if (auto* ms = c.array(j, "", "measurements")) {
    c.each_object(*ms, "measurements", [&](const json& x, const std::string& w) { check_measurement(c, x, w); });
    check_duplicates(c, *ms);
  }
  if (auto* ns = c.array(j, "", "notes"))
    c.each_object(*ns, "notes", [&](const json& x, const std::string& w) {
      c.str(x, w + ".", "part", 1);
      c.str(x, w + ".", "reason", 1);
    });
  if (auto it = j.find("error"); it != j.end()) {
    if (!it->is_object()) {
      c.add(fmt::format("error: must be an object, got {}", shown(*it)));
    } else {
      c.one_of(*it, "error.", "kind", {std::begin(kRunErrorKinds), std::end(kRunErrorKinds)});
      c.str(*it, "error.", "message");
    }
  }
  return c.errors;
}

}  // namespace tg::harness::detail
