#pragma once
// Reading a trace back in the tests: the JSON of trace::to_json, its spans by name, and the
// rules a reader of the format relies on (tests/trace/check_trace.py checks the same on
// the files the binaries write).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "trace/recorder.h"

namespace tg::testing {

using nlohmann::json;

inline int64_t trace_ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

// The trace stopped, its JSON parsed.
inline json stop_and_read(const trace::Metadata& meta = {{"tool", "test"}, {"backend", "cpu"}, {"device", "cpu"},
                                                         {"gpu_spans", "none: a test"}}) {
  trace::stop();
  return json::parse(trace::to_json(meta));
}

inline std::vector<json> events_of(const json& t, char ph, const std::string& name = "") {
  std::vector<json> out;
  for (const json& e : t["traceEvents"])
    if (e["ph"] == std::string(1, ph) && (name.empty() || e["name"] == name)) out.push_back(e);
  return out;
}

// "" when the complete events of every host lane nest; else the first pair that overlaps. A
// GPU stream's kernels overlap under programmatic dependent launch (the next grid starts
// before the previous one ends), so the device lanes (pid >= kDevicePidBase) are left out.
inline std::string nesting_problem(const json& t) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::tuple<int64_t, int64_t, std::string>>> lanes;
  for (const json& e : events_of(t, 'X'))
    if (e["pid"].get<int64_t>() < trace::kDevicePidBase)
      lanes[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].emplace_back(trace_ns(e["ts"]), trace_ns(e["dur"]),
                                                                           e["name"].get<std::string>());
  for (auto& [lane, spans] : lanes) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) > std::get<1>(b);
    });
    std::vector<std::tuple<int64_t, int64_t, std::string>> stack;
    for (const auto& s : spans) {
      while (!stack.empty() && std::get<0>(s) >= std::get<0>(stack.back()) + std::get<1>(stack.back())) stack.pop_back();
      if (!stack.empty() && std::get<0>(s) + std::get<1>(s) > std::get<0>(stack.back()) + std::get<1>(stack.back()))
        return fmt::format("lane {}/{}: {} overlaps {} without nesting", lane.first, lane.second, std::get<2>(s),
                           std::get<2>(stack.back()));
      stack.push_back(s);
    }
  }
  return "";
}

// "" when every kernel span has a launch flow that starts no later than the kernel.
inline std::string kernel_launch_problem(const json& t) {
  std::map<int64_t, int64_t> start_of;  // flow id -> ts of its start
  for (const json& s : events_of(t, 's')) start_of[s["id"].get<int64_t>()] = trace_ns(s["ts"]);
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> launch_of;  // (pid, tid, ts) of a finish -> its start
  for (const json& f : events_of(t, 'f')) {
    const auto it = start_of.find(f["id"].get<int64_t>());
    if (it != start_of.end())
      launch_of[{f["pid"].get<int64_t>(), f["tid"].get<int64_t>(), trace_ns(f["ts"])}] = it->second;
  }
  for (const json& k : events_of(t, 'X')) {
    if (k["cat"] != "kernel") continue;
    const auto it = launch_of.find({k["pid"].get<int64_t>(), k["tid"].get<int64_t>(), trace_ns(k["ts"])});
    if (it == launch_of.end()) return fmt::format("kernel {} has no launch flow", k["name"].get<std::string>());
    if (it->second > trace_ns(k["ts"]))
      return fmt::format("kernel {} starts {} ns before its launch", k["name"].get<std::string>(),
                         it->second - trace_ns(k["ts"]));
  }
  return "";
}

inline size_t count_cat(const json& t, const std::string& cat) {
  size_t n = 0;
  for (const json& e : events_of(t, 'X')) n += e["cat"] == cat;
  return n;
}

}  // namespace tg::testing
