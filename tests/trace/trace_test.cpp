// The recorder on the host: spans, steps, counters, the window, lanes, the cap and the JSON.
#include <doctest/doctest.h>

#include <set>
#include <stdexcept>
#include <thread>

#include "experiments/harness/measure.h"
#include "tests/trace/trace_checks.h"
#include "trace/recorder.h"
#include "trace/trace.h"

namespace tg {
namespace {

using testing::events_of;
using testing::json;
using testing::stop_and_read;

std::multiset<std::string> names_of(const json& t, char ph) {
  std::multiset<std::string> out;
  for (const json& e : events_of(t, ph)) out.insert(e["name"].get<std::string>());
  return out;
}

TEST_CASE("without a trace started the sites record nothing") {
  REQUIRE_FALSE(trace::active());
  CHECK_FALSE(trace::recording());
  {
    TG_TRACE_SCOPE("before");
    trace::Steps s("op", "build");
    s.next("launch");
    trace::counter("memory", "allocated", 1);
  }
  trace::start({});
  const json t = stop_and_read();
  CHECK(events_of(t, 'X').empty());
  CHECK(events_of(t, 'C').empty());
  CHECK(t["otherData"]["events"] == "0");
}

TEST_CASE("spans and steps nest on their thread, under their names") {
  trace::start({});
  {
    TG_TRACE_SCOPE("outer");
    { TG_TRACE_SCOPE("inner"); }
    trace::Steps s("matmul", "build");
    s.next("allocate");
    s.next("launch");
    TG_TRACE_SCOPE_COPY(std::string("pass ") + "heads");
  }
  const json t = stop_and_read();
  CHECK(names_of(t, 'X') == std::multiset<std::string>{"outer", "inner", "matmul", "build", "allocate", "launch",
                                                        "pass heads"});
  CHECK(testing::nesting_problem(t) == "");
  const json outer = events_of(t, 'X', "outer").at(0), op = events_of(t, 'X', "matmul").at(0);
  const json build = events_of(t, 'X', "build").at(0), launch = events_of(t, 'X', "launch").at(0);
  CHECK(testing::trace_ns(op["ts"]) >= testing::trace_ns(outer["ts"]));
  CHECK(testing::trace_ns(build["ts"]) >= testing::trace_ns(op["ts"]));
  CHECK(testing::trace_ns(launch["ts"]) + testing::trace_ns(launch["dur"]) <=
        testing::trace_ns(op["ts"]) + testing::trace_ns(op["dur"]));
  for (const json& e : events_of(t, 'X')) CHECK(e["tid"] == outer["tid"]);
}

TEST_CASE("a span ended early is recorded once") {
  trace::start({});
  {
    trace::Span s("plan");
    s.end();
    s.end();
  }
  const json t = stop_and_read();
  CHECK(events_of(t, 'X', "plan").size() == 1);
}

TEST_CASE("a loop's window records the first samples, not the warm-up nor the rest") {
  trace::Options o;
  o.iterations = 2;
  trace::start(o);
  {
    trace::LoopWindow w;
    { TG_TRACE_SCOPE("warm-up"); }
    for (int i = 0; i < 5; ++i) {
      w.before_sample(i);
      TG_TRACE_SCOPE("step");
    }
  }
  { TG_TRACE_SCOPE("after the loop"); }
  const json t = stop_and_read();
  CHECK(events_of(t, 'X', "warm-up").empty());
  CHECK(events_of(t, 'X', "step").size() == 2);
  const std::vector<json> samples = events_of(t, 'X', "sample");
  REQUIRE(samples.size() == 2);
  CHECK(samples[0]["args"]["index"] == 0);
  CHECK(samples[1]["args"]["index"] == 1);
  CHECK(testing::nesting_problem(t) == "");
  CHECK(events_of(t, 'X', "after the loop").size() == 1);
  CHECK(t["otherData"]["trace_iterations"] == "2");
}

TEST_CASE("run_loop traces the first --trace-iterations samples of each loop") {
  trace::Options o;
  o.iterations = 3;
  trace::start(o);
  harness::LoopOptions lo;
  lo.warmup = 2;
  lo.min_reps = 7;
  lo.max_reps = 7;
  lo.min_time_s = 0;
  for (int loop = 0; loop < 2; ++loop) harness::time_host(lo, [] { TG_TRACE_SCOPE("body"); });
  const json t = stop_and_read();
  CHECK(events_of(t, 'X', "sample").size() == 6);
  CHECK(events_of(t, 'X', "body").size() == 6);
  CHECK(testing::nesting_problem(t) == "");
}

TEST_CASE("the recording hook hears each pause and resume") {
  std::vector<bool> heard;
  trace::set_recording_hook([&](bool on) { heard.push_back(on); });
  trace::Options o;
  o.iterations = 1;
  trace::start(o);
  {
    trace::LoopWindow w;
    for (int i = 0; i < 3; ++i) w.before_sample(i);
  }
  trace::stop();
  trace::set_recording_hook({});
  CHECK(heard == std::vector<bool>{true, false, true, false, true, false});
}

TEST_CASE("counters, lane names and text that needs escaping") {
  trace::start({});
  trace::name_thread("main");
  trace::counter("memory: dynamic allocator", "allocated", 256, "reserved", 2097152);
  { TG_TRACE_SCOPE(trace::intern("a \"quoted\" \\ name\nover two lines")); }
  const json t = stop_and_read({{"tool", "tg-\"x\""}, {"backend", "cpu"}});
  const json c = events_of(t, 'C').at(0);
  CHECK(c["name"] == "memory: dynamic allocator");
  CHECK(c["args"]["allocated"] == 256);
  CHECK(c["args"]["reserved"] == 2097152);
  CHECK(names_of(t, 'X') == std::multiset<std::string>{"a \"quoted\" \\ name\nover two lines"});
  bool named = false;
  for (const json& m : events_of(t, 'M', "thread_name")) named = named || m["args"]["name"] == "main";
  CHECK(named);
  CHECK(t["otherData"]["tool"] == "tg-\"x\"");
  CHECK(t["displayTimeUnit"] == "ns");
}

TEST_CASE("each thread records on a lane of its own") {
  trace::start({});
  { TG_TRACE_SCOPE("on main"); }
  std::thread worker([] {
    trace::name_thread("worker");
    TG_TRACE_SCOPE("on worker");
  });
  worker.join();
  const json t = stop_and_read();
  const json a = events_of(t, 'X', "on main").at(0), b = events_of(t, 'X', "on worker").at(0);
  CHECK(a["tid"] != b["tid"]);
  CHECK(a["pid"] == b["pid"]);
}

TEST_CASE("a full trace drops what comes after and says how much") {
  trace::Options o;
  o.max_events = 10;
  trace::start(o);
  for (int i = 0; i < 25; ++i) TG_TRACE_SCOPE("span");
  const json t = stop_and_read();
  CHECK(events_of(t, 'X').size() == 10);
  CHECK(t["otherData"]["events"] == "10");
  CHECK(t["otherData"]["dropped_events"] == "15");
}

TEST_CASE("a trace is started once, with a window of at least one iteration") {
  trace::Options bad;
  bad.iterations = 0;
  CHECK_THROWS_AS(trace::start(bad), std::invalid_argument);
  trace::start({});
  CHECK_THROWS_AS(trace::start({}), std::logic_error);
  trace::stop();
  CHECK_FALSE(trace::active());
}

}  // namespace
}  // namespace tg
