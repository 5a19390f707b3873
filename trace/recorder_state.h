#pragma once
// The recorder's shared state, for recorder.cpp and the JSON writer (json_writer.cpp).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "trace/recorder.h"

namespace tg::trace::detail {

inline constexpr uint8_t kRecorded = 1, kNvtxPushed = 2;

struct ThreadBuffer {
  std::mutex m;
  int64_t lane = 0;  // the tid of the thread's host lane: 1 for the first thread that recorded
  uint64_t os_tid = 0, pthread_id = 0;
  std::string name;
  std::vector<Event> events;
};

struct State {
  std::mutex m;  // what follows, but the thread list
  bool active = false;
  Options opt;
  int64_t t0_ns = 0;
  std::function<void(bool)> hook;
  std::vector<Event> device_events;
  std::map<int, std::pair<std::string, int>> process_names;  // pid -> name, sort index
  std::map<std::pair<int, int64_t>, std::string> lane_names;
  std::atomic<size_t> recorded{0}, dropped{0};

  std::mutex registry;  // the thread list
  std::vector<std::unique_ptr<ThreadBuffer>> threads;
};

State& state();
ThreadBuffer& this_thread_buffer();
void record(Event e) noexcept;  // onto the calling thread's host lane
void set_recording(bool on);

}  // namespace tg::trace::detail
