// The Chrome trace-event JSON (the "JSON Object Format": traceEvents, displayTimeUnit,
// otherData), as Perfetto's UI and chrome://tracing read it; docs/trace.schema.json is
// the schema the tests hold it to. Times are microseconds since the trace started,
// written with three decimals (nanoseconds).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <mutex>

#include "trace/recorder_state.h"

namespace tg::trace {

namespace {

void put_string(std::string& out, const char* s) {
  out += '"';
  for (const char* p = s ? s : ""; *p; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x80) fmt::format_to(std::back_inserter(out), "\\u{:04x}", c < 0x80 ? c : 0xfffd);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
}

void put_us(std::string& out, int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const int64_t a = ns < 0 ? -ns : ns;
  fmt::format_to(std::back_inserter(out), "{}{}.{:03d}", sign, a / 1000, static_cast<int>(a % 1000));
}

void put_event(std::string& out, const Event& e, int64_t t0) {
  out += "{\"ph\":\"";
  out += e.ph;
  out += "\",\"name\":";
  put_string(out, e.name);
  out += ",\"cat\":";
  put_string(out, e.cat);
  fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", e.pid, e.tid);
  put_us(out, e.ts_ns - t0);
  if (e.ph == 'X') {
    out += ",\"dur\":";
    put_us(out, std::max<int64_t>(0, e.dur_ns));
  }
  if (e.ph == 's' || e.ph == 'f') fmt::format_to(std::back_inserter(out), ",\"id\":{}", e.id);
  if (e.ph == 'f') out += ",\"bp\":\"e\"";
  if (e.ph == 'i') out += ",\"s\":\"t\"";
  if (e.key1 || e.key2 || e.skey) {
    out += ",\"args\":{";
    bool first = true;
    auto arg = [&](const char* k) {
      if (!first) out += ',';
      first = false;
      put_string(out, k);
      out += ':';
    };
    if (e.key1) {
      arg(e.key1);
      fmt::format_to(std::back_inserter(out), "{}", e.value1);
    }
    if (e.key2) {
      arg(e.key2);
      fmt::format_to(std::back_inserter(out), "{}", e.value2);
    }
    if (e.skey) {
      arg(e.skey);
      put_string(out, e.svalue);
    }
    out += '}';
  }
  out += '}';
}

void put_meta(std::string& out, const char* what, int pid, int64_t tid, const char* key, const std::string& value,
              bool number) {
  fmt::format_to(std::back_inserter(out), "{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"args\":{{", what,
                 pid, tid);
  put_string(out, key);
  out += ':';
  if (number) out += value;
  else put_string(out, value.c_str());
  out += "}},\n";
}

}  // namespace

std::string to_json(const Metadata& meta) {
  detail::State& s = detail::state();
  std::vector<Event> events;
  std::vector<std::pair<int64_t, std::string>> threads;
  {
    std::lock_guard<std::mutex> lock(s.registry);
    for (const auto& b : s.threads) {
      std::lock_guard<std::mutex> bl(b->m);
      if (b->events.empty()) continue;
      events.insert(events.end(), b->events.begin(), b->events.end());
      threads.emplace_back(b->lane, b->name.empty() ? fmt::format("thread {}", b->lane) : b->name);
    }
  }
  std::lock_guard<std::mutex> lock(s.m);
  events.insert(events.end(), s.device_events.begin(), s.device_events.end());
  // By lane, then time, the longer span first: a parent before its children.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    return a.dur_ns > b.dur_ns;
  });

  std::string out = "{\"traceEvents\":[\n";
  out.reserve(events.size() * 140 + 4096);
  put_meta(out, "process_name", kHostPid, 0, "name", "host", false);
  put_meta(out, "process_sort_index", kHostPid, 0, "sort_index", "0", true);
  for (const auto& [lane, name] : threads) put_meta(out, "thread_name", kHostPid, lane, "name", name, false);
  for (const auto& [pid, p] : s.process_names) {
    put_meta(out, "process_name", pid, 0, "name", p.first, false);
    put_meta(out, "process_sort_index", pid, 0, "sort_index", std::to_string(p.second), true);
  }
  for (const auto& [lane, name] : s.lane_names) put_meta(out, "thread_name", lane.first, lane.second, "name", name, false);
  for (size_t i = 0; i < events.size(); ++i) {
    put_event(out, events[i], s.t0_ns);
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  if (events.empty()) out.resize(out.size() - 2), out += "\n";  // the last metadata event's comma
  out += "],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{";
  Metadata all = meta;
  all.emplace_back("clock", "steady_clock; ts and dur in microseconds since the trace started");
  all.emplace_back("trace_iterations", std::to_string(s.opt.iterations));
  all.emplace_back("events", std::to_string(s.recorded.load()));
  all.emplace_back("dropped_events", std::to_string(s.dropped.load()));
  for (size_t i = 0; i < all.size(); ++i) {
    put_string(out, all[i].first.c_str());
    out += ':';
    put_string(out, all[i].second.c_str());
    out += i + 1 < all.size() ? "," : "";
  }
  out += "}}\n";
  return out;
}

}  // namespace tg::trace
