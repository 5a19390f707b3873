#include "experiments/harness/interrupt.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace tg::harness {

namespace {

// Everything the handlers touch is a lock-free atomic or a fixed buffer: a handler
// may run on any thread, and may only make async-signal-safe calls (write, unlink,
// setitimer, raise, _exit).
std::atomic<int> g_signal{0};      // the first signal
std::atomic<int> g_count{0};       // signals received
std::atomic<bool> g_committing{false};
std::atomic<bool> g_test_flag{false};
char g_tool[128] = "tg";
char g_nothing_written[128] = "no report was written";

constexpr int kSlots = 8;
constexpr size_t kSlotPath = 4096;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a path
  char path[kSlotPath];
};
Slot g_slots[kSlots];

const char* name_of(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

void say(const char* const* parts, int n) {
  for (int i = 0; i < n; ++i) {
    const char* p = parts[i];
    size_t left = std::strlen(p);
    while (left > 0) {
      const ssize_t w = ::write(2, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;  // stderr is gone: nothing else to do
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
}

void remove_temps_now() {
  for (Slot& s : g_slots)
    if (s.state.load() == 2) ::unlink(s.path);
}

void arm_watchdog(double seconds) {
  itimerval t{};
  t.it_value.tv_sec = static_cast<time_t>(seconds);
  t.it_value.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(t.it_value.tv_sec)) * 1e6);
  ::setitimer(ITIMER_REAL, &t, nullptr);
}

extern "C" void on_stop_signal(int sig) {
  const int saved_errno = errno;
  if (g_count.fetch_add(1) == 0) {
    g_signal.store(sig);
    if (!g_committing.load()) arm_watchdog(kForceExitAfterS);
    errno = saved_errno;
    return;
  }
  remove_temps_now();
  const char* msg[] = {g_tool, ": second signal (", name_of(sig), "): stopping at once; ", g_nothing_written, "\n"};
  say(msg, 6);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // blocked while this handler runs, delivered (fatally) when it returns
  errno = saved_errno;
}

extern "C" void on_watchdog(int) {
  if (g_committing.load()) {  // the reports are being renamed: let that finish
    arm_watchdog(0.05);
    return;
  }
  remove_temps_now();
  const int sig = g_signal.load();
  const char* msg[] = {g_tool, ": interrupted (", name_of(sig), "): ", g_nothing_written,
                       " (stopped by force: the run did not stop within a second)\n"};
  say(msg, 6);
  ::_exit(128 + sig);
}

void handle(int sig, void (*fn)(int), bool restart) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  ::sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_signal_handlers(const std::string& tool, const std::string& nothing_written) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::strncpy(g_tool, tool.c_str(), sizeof g_tool - 1);
    std::strncpy(g_nothing_written, nothing_written.c_str(), sizeof g_nothing_written - 1);
    handle(SIGALRM, on_watchdog, false);
    // SIGINT is taken over even when inherited as ignored: a shell script starts its
    // background jobs with SIGINT ignored, and `kill -INT` to them must still stop the
    // run cleanly. An ignored SIGHUP is left alone: that is nohup asking to survive
    // the terminal.
    handle(SIGINT, on_stop_signal, true);
    handle(SIGTERM, on_stop_signal, true);
    struct sigaction old {};
    if (::sigaction(SIGHUP, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) handle(SIGHUP, on_stop_signal, true);
    ::signal(SIGPIPE, SIG_IGN);
  });
}

bool interrupted() { return g_count.load() > 0 || g_test_flag.load(); }
int interrupt_signal() { return g_signal.load(); }
int interrupt_exit_status() { return g_signal.load() ? 128 + g_signal.load() : 128 + SIGINT; }
std::string interrupt_signal_name() { return name_of(g_signal.load() ? g_signal.load() : SIGINT); }

Interrupted::Interrupted()
    : std::runtime_error("interrupted (" + interrupt_signal_name() + "): " + g_nothing_written) {}

void throw_if_interrupted() {
  if (interrupted()) throw Interrupted();
}

void set_interrupted_for_testing(bool value) {
  g_test_flag.store(value);
  if (!value) {
    g_count.store(0);
    g_signal.store(0);
    arm_watchdog(0);  // disarms
  }
}

int register_temp_file(const std::string& path) {
  if (path.size() >= kSlotPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temp_file(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(0);
}

void begin_commit() { g_committing.store(true); }
void end_commit() { g_committing.store(false); }

}  // namespace tg::harness
