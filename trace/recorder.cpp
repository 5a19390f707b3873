// The recorder: per-thread event buffers (a thread appends to its own under an
// uncontended lock), the trace's start, stop and window, NVTX ranges beside the spans.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "trace/recorder_state.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace tg::trace {

namespace {
// A tool injects NVTX through this variable (Nsight Systems sets it) or links a static
// injection (tests/trace/nvtx_test.cpp): only then are ranges worth pushing.
bool nvtx_attached() {
#ifdef TWOGRAPH_HAVE_CUDA
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return (path && *path) || InitializeInjectionNvtx2_fnptr != nullptr;
#else
  return false;
#endif
}
const bool g_nvtx = nvtx_attached();
thread_local detail::ThreadBuffer* tl_buffer = nullptr;
}  // namespace

namespace detail {
std::atomic<bool> g_sites{g_nvtx};
std::atomic<bool> g_recording{false};

State& state() {
  static State* s = new State;  // never destroyed: threads may record while the process exits
  return *s;
}

ThreadBuffer& this_thread_buffer() {
  if (tl_buffer) return *tl_buffer;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.registry);
  auto b = std::make_unique<ThreadBuffer>();
  b->lane = static_cast<int64_t>(s.threads.size()) + 1;
  b->os_tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  b->pthread_id = static_cast<uint64_t>(::pthread_self());
  tl_buffer = b.get();
  s.threads.push_back(std::move(b));
  return *tl_buffer;
}

void record(Event e) noexcept {
  State& s = state();
  if (s.recorded.fetch_add(1, std::memory_order_relaxed) >= s.opt.max_events) {
    s.recorded.fetch_sub(1, std::memory_order_relaxed);
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    ThreadBuffer& b = this_thread_buffer();
    e.pid = kHostPid;
    e.tid = b.lane;
    std::lock_guard<std::mutex> lock(b.m);
    b.events.push_back(e);
  } catch (...) {  // out of memory: the trace loses an event, the run goes on
    s.recorded.fetch_sub(1, std::memory_order_relaxed);
    s.dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

uint8_t begin_span(const char* name, int64_t& t0_ns) noexcept {
  uint8_t flags = 0;
#ifdef TWOGRAPH_HAVE_CUDA
  if (g_nvtx) {
    nvtxRangePushA(name);
    flags |= kNvtxPushed;
  }
#else
  (void)name;
#endif
  if (g_recording.load(std::memory_order_relaxed)) {
    t0_ns = now_ns();
    flags |= kRecorded;
  }
  return flags;
}

void end_span(const char* name, int64_t t0_ns, uint8_t flags, const char* arg_key, int64_t arg) noexcept {
  if (flags & kRecorded) {
    Event e;
    e.ph = 'X';
    e.name = name;
    e.ts_ns = t0_ns;
    e.dur_ns = now_ns() - t0_ns;
    e.key1 = arg_key;
    e.value1 = arg;
    record(e);
  }
#ifdef TWOGRAPH_HAVE_CUDA
  if (flags & kNvtxPushed) nvtxRangePop();
#endif
}

void set_recording(bool on) {
  State& s = state();
  std::function<void(bool)> hook;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(s.m);
    changed = g_recording.load() != on;
    g_recording.store(on);
    g_sites.store(on || g_nvtx);
    hook = s.hook;
  }
  if (changed && hook) hook(on);
}
}  // namespace detail

using detail::state;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* intern(std::string_view name) {
  static std::mutex m;
  static auto* names = new std::unordered_set<std::string>;  // never destroyed, as the state
  std::lock_guard<std::mutex> lock(m);
  return names->emplace(name).first->c_str();
}

void name_thread(const char* name) {
  detail::ThreadBuffer& b = detail::this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.m);
  b.name = name;
}

void counter(const char* name, const char* key1, int64_t value1, const char* key2, int64_t value2) {
  if (!recording()) return;
  Event e;
  e.ph = 'C';
  e.name = name;
  e.cat = "memory";
  e.ts_ns = now_ns();
  e.key1 = key1;
  e.value1 = value1;
  e.key2 = key2;
  e.value2 = value2;
  detail::record(e);
}

void start(const Options& opt) {
  if (opt.iterations < 1)
    throw std::invalid_argument("trace: the window must hold at least one iteration (--trace-iterations >= 1)");
  detail::State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.m);
    if (s.active) throw std::logic_error("trace::start: a trace is already recording");
    s.active = true;
    s.opt = opt;
    s.t0_ns = now_ns();
    s.recorded = 0;
    s.dropped = 0;
    s.device_events.clear();
    s.process_names.clear();
    s.lane_names.clear();
  }
  {
    std::lock_guard<std::mutex> lock(s.registry);
    for (auto& b : s.threads) {
      std::lock_guard<std::mutex> bl(b->m);
      b->events.clear();
    }
  }
  detail::set_recording(true);
}

bool active() {
  std::lock_guard<std::mutex> lock(state().m);
  return state().active;
}

void stop() {
  detail::set_recording(false);
  std::lock_guard<std::mutex> lock(state().m);
  state().active = false;
}

const Options& options() { return state().opt; }

void set_recording_hook(std::function<void(bool)> hook) {
  std::lock_guard<std::mutex> lock(state().m);
  state().hook = std::move(hook);
}

LoopWindow::LoopWindow() {
  if (!active()) return;
  owns_ = true;
  was_recording_ = recording();
  detail::set_recording(false);
}

void LoopWindow::end_sample() {
  if (flags_) detail::end_span("sample", t0_, flags_, "index", index_);
  flags_ = 0;
}

void LoopWindow::before_sample(int index) {
  end_sample();
  if (!owns_ || !was_recording_) return;
  detail::set_recording(index < options().iterations);
  if (on()) {
    index_ = index;
    flags_ = detail::begin_span("sample", t0_);
  }
}

LoopWindow::~LoopWindow() {
  end_sample();
  if (owns_) detail::set_recording(was_recording_ && active());
}

void add_device_events(std::vector<Event> events) {
  detail::State& s = state();
  std::lock_guard<std::mutex> lock(s.m);
  for (Event& e : events) {
    if (s.recorded.load() >= s.opt.max_events) {
      s.dropped.fetch_add(1);
      continue;
    }
    s.recorded.fetch_add(1);
    s.device_events.push_back(e);
  }
}

void name_process(int pid, const std::string& name, int sort_index) {
  std::lock_guard<std::mutex> lock(state().m);
  state().process_names[pid] = {name, sort_index};
}

void name_lane(int pid, int64_t tid, const std::string& name) {
  std::lock_guard<std::mutex> lock(state().m);
  state().lane_names[{pid, tid}] = name;
}

int64_t host_lane_of(uint64_t os_id) {
  detail::State& s = state();
  std::lock_guard<std::mutex> lock(s.registry);
  for (const auto& b : s.threads)
    if (b->os_tid == os_id || b->pthread_id == os_id || static_cast<uint32_t>(b->pthread_id) == os_id) return b->lane;
  return -1;
}

Counts counts() { return {state().recorded.load(), state().dropped.load()}; }

}  // namespace tg::trace
