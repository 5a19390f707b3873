#pragma once
// Timelines: host spans, counters and (CUDA) GPU activity, written as a Chrome trace
// (trace-event JSON that Perfetto's UI and chrome://tracing open). docs/timelines.md
// shows how to take and read one.
//
// The sites in the libraries:
//   { TG_TRACE_SCOPE("plan"); ... }           a span named by a string that outlives the
//                                            trace (a literal, op_name(), pass_name())
//   TG_TRACE_SCOPE_COPY(expr)                 a span whose name is built (std::string);
//                                            expr is evaluated only while tracing
//   trace::Steps s(op_name(op), "build"); s.next("allocate"); ...
//                                            an op with consecutive child spans
//   trace::counter("memory", "allocated", a, "reserved", r)
// With no trace recording and no NVTX tool attached, each site is one load of a flag
// and a branch (the constructor inlines to that), so the tracing costs nothing when off.
// Every span is also an NVTX range of the same name in CUDA builds, so Nsight Systems
// shows them; that part is on whenever a tool injects NVTX (NVTX_INJECTION64_PATH),
// with or without a trace.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace tg::trace {

namespace detail {
// recording() || an NVTX tool is attached: what every site checks first.
extern std::atomic<bool> g_sites;
extern std::atomic<bool> g_recording;

// The slow paths, out of line. begin returns the flags end needs (0: nothing began).
uint8_t begin_span(const char* name, int64_t& t0_ns) noexcept;
void end_span(const char* name, int64_t t0_ns, uint8_t flags, const char* arg_key = nullptr,
              int64_t arg = 0) noexcept;
}  // namespace detail

// Whether this build has the sites at all: CMake's TWOGRAPH_TRACE_SITES=OFF compiles them
// out (on() is then a constant false and every site folds away), the baseline that shows
// what the sites cost when no trace records (scripts/device/trace-cost.sh).
#ifdef TWOGRAPH_NO_TRACE_SITES
inline constexpr bool kSitesCompiled = false;
constexpr bool on() { return false; }
#else
inline constexpr bool kSitesCompiled = true;
inline bool on() { return detail::g_sites.load(std::memory_order_relaxed); }
#endif
// A trace is being recorded now (started, and not paused by a LoopWindow).
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }

// Nanoseconds of the one clock of the trace (steady_clock); GPU timestamps are mapped
// onto it (trace/cupti.cpp).
int64_t now_ns();

// A stable copy of `name` for the rest of the process (names of spans that are built).
const char* intern(std::string_view name);

// The name of the calling thread's lane ("main", "copy 2"); `name` must outlive the trace.
void name_thread(const char* name);

// A counter sample ("C" event): up to two series under one name, e.g. allocated and
// reserved bytes. Recorded only while recording().
void counter(const char* name, const char* key1, int64_t value1, const char* key2 = nullptr, int64_t value2 = 0);

class Span {
 public:
  explicit Span(const char* name) {
    if (on() && name) begin(name);
  }
  // With one integer argument shown in the viewer (a sample's index, a node id).
  Span(const char* name, const char* arg_key, int64_t arg) : arg_key_(arg_key), arg_(arg) {
    if (on() && name) begin(name);
  }
  ~Span() { end(); }
  // Ends the span before its scope does (a phase whose variables the rest of the scope uses).
  void end() {
    if (flags_) detail::end_span(name_, t0_, flags_, arg_key_, arg_);
    flags_ = 0;
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void begin(const char* name) {
    name_ = name;
    flags_ = detail::begin_span(name, t0_);
  }
  const char* name_ = nullptr;
  const char* arg_key_ = nullptr;
  int64_t arg_ = 0;
  int64_t t0_ = 0;
  uint8_t flags_ = 0;
};

// An outer span (an op) made of consecutive inner spans (its phases): the outer one
// from construction to destruction, each inner one until the next next() or the end.
class Steps {
 public:
  Steps(const char* outer, const char* first) {
    if (on() && outer) {
      outer_ = outer;
      outer_flags_ = detail::begin_span(outer, outer_t0_);
      inner_ = first;
      inner_flags_ = detail::begin_span(first, inner_t0_);
    }
  }
  void next(const char* step) {
    if (!outer_flags_) return;
    if (inner_flags_) detail::end_span(inner_, inner_t0_, inner_flags_);
    inner_ = step;
    inner_flags_ = detail::begin_span(step, inner_t0_);
  }
  ~Steps() {
    if (!outer_flags_) return;
    if (inner_flags_) detail::end_span(inner_, inner_t0_, inner_flags_);
    detail::end_span(outer_, outer_t0_, outer_flags_);
  }
  Steps(const Steps&) = delete;
  Steps& operator=(const Steps&) = delete;

 private:
  const char *outer_ = nullptr, *inner_ = nullptr;
  int64_t outer_t0_ = 0, inner_t0_ = 0;
  uint8_t outer_flags_ = 0, inner_flags_ = 0;
};

}  // namespace tg::trace

#define TG_TRACE_CAT2(a, b) a##b
#define TG_TRACE_CAT(a, b) TG_TRACE_CAT2(a, b)
#define TG_TRACE_SCOPE(name) ::tg::trace::Span TG_TRACE_CAT(tg_trace_span_, __LINE__)(name)
#define TG_TRACE_SCOPE_COPY(expr) \
  ::tg::trace::Span TG_TRACE_CAT(tg_trace_span_, __LINE__)(::tg::trace::on() ? ::tg::trace::intern(expr) : nullptr)
