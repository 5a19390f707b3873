// The signal handlers (experiments/harness/interrupt.h), each case in a forked child:
// the handlers are process-wide and the cases end the process on purpose.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "experiments/harness/interrupt.h"
#include "experiments/harness/report_io.h"
#include "tests/run_tool.h"

using namespace tg::harness;
using tg::testing::file_exists;
using tg::testing::TempDir;

namespace {
struct Ended {
  bool exited = false;  // else killed by a signal
  int code = -1;        // exit status or signal number
  double seconds = 0;
};
// Runs `child` in a fork; its return value is the exit status (_exit, no atexit work).
Ended in_child(const std::function<int()>& child) {
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(child());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  Ended e;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  e.exited = WIFEXITED(status);
  e.code = e.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return e;
}
bool make_file(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "w");
  return f && std::fputs("partial", f) >= 0 && std::fclose(f) == 0;
}
}  // namespace

TEST_CASE("the first signal sets the flag and names the signal, the second removes the temp files and kills") {
  TempDir dir;
  const std::string tmp = dir / "r.json.tmp";
  const Ended e = in_child([&] {
    install_signal_handlers("tg-test");
    if (!make_file(tmp) || register_temp_file(tmp) < 0) return 10;
    if (interrupted()) return 11;
    std::raise(SIGINT);
    if (!interrupted() || interrupt_signal() != SIGINT || interrupt_exit_status() != 130) return 12;
    if (std::string(Interrupted().what()) != "interrupted (SIGINT): no report was written") return 13;
    std::raise(SIGINT);  // fatal
    return 14;
  });
  CHECK_FALSE(e.exited);
  CHECK(e.code == SIGINT);
  CHECK_FALSE(file_exists(tmp));
}

TEST_CASE("a tool that writes other files than reports says what it did not write") {
  const Ended e = in_child([] {
    install_signal_handlers("tg-test", "nothing was written");
    std::raise(SIGINT);
    if (std::string(Interrupted().what()) != "interrupted (SIGINT): nothing was written") return 10;
    return 0;
  });
  CHECK(e.exited);
  CHECK(e.code == 0);
}

TEST_CASE("SIGTERM: exit status 143, and the watchdog ends a body that never polls within a second") {
  TempDir dir;
  const std::string tmp = dir / "r.json.tmp";
  const Ended e = in_child([&] {
    install_signal_handlers("tg-test");
    if (!make_file(tmp) || register_temp_file(tmp) < 0) return 10;
    std::raise(SIGTERM);
    std::this_thread::sleep_for(std::chrono::seconds(20));  // a long computation that never polls
    return 11;
  });
  CHECK(e.exited);
  CHECK(e.code == 143);
  CHECK(e.seconds >= kForceExitAfterS * 0.9);
  CHECK(e.seconds < 10);  // 0.9 s by design; generous for a loaded machine
  CHECK_FALSE(file_exists(tmp));
}

TEST_CASE("a signal while the reports are renamed into place comes too late to stop the run") {
  const Ended e = in_child([&] {
    install_signal_handlers("tg-test");
    begin_commit();
    std::raise(SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the watchdog's delay
    end_commit();
    return interrupted() ? 0 : 10;  // seen, but it did not end the process
  });
  CHECK(e.exited);
  CHECK(e.code == 0);
}

TEST_CASE("write_files_atomic after a signal writes nothing and throws Interrupted") {
  TempDir dir;
  const std::string a = dir / "r.json", b = dir / "r.csv";
  const Ended e = in_child([&] {
    install_signal_handlers("tg-test");
    std::raise(SIGINT);
    try {
      write_files_atomic({{a, std::string(3 << 20, 'x')}, {b, "csv"}});
      return 10;
    } catch (const Interrupted&) {
      return 0;
    } catch (...) {
      return 11;
    }
  });
  CHECK(e.exited);
  CHECK(e.code == 0);
  for (const std::string& p : {a, b, a + ".tmp", b + ".tmp"}) CHECK_MESSAGE(!file_exists(p), p);
}

TEST_CASE("write_files_atomic writes every file whole, and leaves them untouched when one fails") {
  TempDir dir;
  const std::string a = dir / "r.json", b = dir / "r.csv";
  write_files_atomic({{a, "json"}, {b, "csv"}});
  CHECK(tg::testing::read_text(a) == "json");
  CHECK(tg::testing::read_text(b) == "csv");
  // The second target's folder is gone: nothing is renamed, the first keeps its content.
  CHECK_THROWS_AS(write_files_atomic({{a, "new json"}, {dir / "gone/r.csv", "new csv"}}), std::runtime_error);
  CHECK(tg::testing::read_text(a) == "json");
  CHECK_FALSE(file_exists(a + ".tmp"));
}
