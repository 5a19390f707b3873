#pragma once
// The process-wide trace: start and stop, the bounded window, device lanes, and the
// Chrome trace-event JSON (docs/trace.schema.json, docs/timelines.md).
//
//   trace::start({.iterations = 3});
//   ... the run: sites record host spans; the CUDA collector (cupti.h) adds GPU spans
//   trace::stop();
//   write(trace::to_json(info));
//
// The window: a measurement loop makes a LoopWindow; its warm-up calls are not
// recorded, its first `iterations` samples are (each in a span named "sample" with its
// index), the rest are not. What runs outside the loops (graph build, compile, capture)
// is always recorded.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace tg::trace {

struct Options {
  int iterations = 3;                // samples recorded per measurement loop
  size_t max_events = 2'000'000;     // then the trace stops growing and says how many it dropped
};

// One event as the JSON writes it. Host lanes are pid kHostPid with the thread's index
// as tid; device lanes are pid kDevicePidBase + device with the stream as tid.
struct Event {
  char ph = 'X';              // X complete, C counter, s/f flow start/finish, i instant
  const char* name = "";      // static or interned
  const char* cat = "host";
  int64_t ts_ns = 0;          // on now_ns()'s clock
  int64_t dur_ns = 0;
  int pid = 0;
  int64_t tid = 0;
  int64_t id = 0;             // flow id
  const char* key1 = nullptr;  // up to two integer arguments
  int64_t value1 = 0;
  const char* key2 = nullptr;
  int64_t value2 = 0;
  const char* skey = nullptr;  // and one text argument (a copy kind, a kernel's full name)
  const char* svalue = nullptr;
};

inline constexpr int kHostPid = 1;
inline constexpr int kDevicePidBase = 100;

// Starts recording a trace (clears what the previous one recorded). Throws std::invalid_argument
// for iterations < 1 and std::logic_error when one is active.
void start(const Options& opt);
bool active();
// Stops recording; the events stay until the next start().
void stop();
const Options& options();

// Calls `hook(true)` when recording resumes and `hook(false)` when it pauses (the GPU
// collector enables and disables its activity records with it). One hook; {} removes it.
void set_recording_hook(std::function<void(bool)> hook);

class LoopWindow {
 public:
  LoopWindow();   // pauses recording until the first sample
  // Before sample `index` (0 first): ends the previous sample's span; records the first
  // options().iterations samples, each in a "sample" span until the next call or the end.
  void before_sample(int index);
  ~LoopWindow();  // ends the last sample's span; restores the state before the loop
  LoopWindow(const LoopWindow&) = delete;
  LoopWindow& operator=(const LoopWindow&) = delete;

 private:
  void end_sample();
  bool owns_ = false, was_recording_ = false;
  int64_t index_ = 0, t0_ = 0;
  uint8_t flags_ = 0;
};

// For the GPU collector: events of device lanes, recorded from any thread.
void add_device_events(std::vector<Event> events);
// Lane names: a process (pid) with its place in the viewer, a thread (pid, tid).
void name_process(int pid, const std::string& name, int sort_index);
void name_lane(int pid, int64_t tid, const std::string& name);
// The lane of the host thread whose OS thread id (gettid) or pthread id is `os_id`, or -1.
int64_t host_lane_of(uint64_t os_id);

struct Counts {
  size_t events = 0, dropped = 0;
};
Counts counts();

// What the trace says about itself (written under "otherData"): the tool, the
// device, whether GPU spans are in it and why not. Values are text.
using Metadata = std::vector<std::pair<std::string, std::string>>;
// The whole trace: metadata events for the lanes, the events sorted by lane and time,
// and "otherData" holding `meta` plus the window, the clock and the counts.
std::string to_json(const Metadata& meta);

}  // namespace tg::trace
