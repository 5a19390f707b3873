#include "experiments/harness/cold_start.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "experiments/harness/interrupt.h"
#include "experiments/harness/measure.h"
#include "experiments/harness/output.h"

extern char** environ;

namespace tg::harness {

namespace {

// Closes a file descriptor when it leaves scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

std::optional<int> child_mode_device(int argc, char** argv, const char* flag) {
  if (argc < 2 || std::strcmp(argv[1], flag) != 0) return std::nullopt;
  char* end = nullptr;
  const long device = argc == 3 ? std::strtol(argv[2], &end, 10) : -1;
  if (argc != 3 || end == argv[2] || *end != '\0' || device < 0 || device > INT_MAX) {
    std::fprintf(stderr, "%s %s: expected one device ordinal >= 0 (this mode is for the binary's own use)\n",
                 argv[0], flag);
    return -1;
  }
  return static_cast<int>(device);
}

std::optional<int> cold_start_child(int argc, char** argv, const ColdSteps& steps) {
  const std::optional<int> mode = child_mode_device(argc, argv, kColdStartChildFlag);
  if (!mode) return std::nullopt;
  if (*mode < 0) return 2;
  const int device = *mode;
  try {
    std::string out;
    for (const ColdStep& s : steps(device)) {
      const auto t0 = std::chrono::steady_clock::now();
      s.run();
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      out += cold_start_line({s.call, s.occurrence, s.size_bytes, secs});
    }
    // Printed at the end, so that the output of a child that failed halfway is not half read.
    // The parent reads the lines from a pipe: a write that failed must not pass as a run that measured nothing.
    if (std::fputs(out.c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "%s %s %d: cannot write the timings to stdout: %s\n", argv[0], kColdStartChildFlag,
                   device, std::strerror(errno));
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    say(std::string(argv[0]) + " " + kColdStartChildFlag + " " + std::to_string(device), e.what());
    return 1;
  }
}

std::string cold_start_line(const ColdSample& s) {
  return fmt::format("cold_start\t{}\t{}\t{}\t{:.9e}\n", s.call, s.occurrence, s.size_bytes, s.seconds);
}

std::vector<ColdSample> parse_cold_start(const std::string& text) {
  std::vector<ColdSample> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream f(line);
    std::string tag, call, occurrence, size, secs, rest;
    const bool five = std::getline(f, tag, '\t') && std::getline(f, call, '\t') && std::getline(f, occurrence, '\t') &&
                      std::getline(f, size, '\t') && std::getline(f, secs, '\t') && !std::getline(f, rest);
    ColdSample s;
    char* e1 = nullptr;
    char* e2 = nullptr;
    if (five) {
      s.call = call;
      s.occurrence = occurrence;
      s.size_bytes = std::strtoll(size.c_str(), &e1, 10);
      s.seconds = std::strtod(secs.c_str(), &e2);
    }
    if (!five || tag != "cold_start" || call.empty() || (occurrence != "first" && occurrence != "second") ||
        size.empty() || *e1 != '\0' || s.size_bytes < 0 || secs.empty() || *e2 != '\0' || !(s.seconds >= 0)) {
      throw std::runtime_error(fmt::format(
          "cold-start child output, line {}: '{}' is not 'cold_start<TAB>call<TAB>first|second<TAB>bytes<TAB>seconds'",
          n, line));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string run_child(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("run_child: empty command");
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  Fd rd{fds[0]}, wr{fds[1]};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, wr.fd, STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, rd.fd);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", command_text(argv), std::strerror(rc)));
  ::close(wr.fd);
  wr.fd = -1;
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t k = ::read(rd.fd, buf, sizeof buf);
    if (k > 0) out.append(buf, static_cast<size_t>(k));
    else if (k == 0 || errno != EINTR) break;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  throw_if_interrupted();  // Ctrl-C reached the child too: report the interrupt, not its death
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                            : fmt::format("signal {}", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  throw std::runtime_error(fmt::format("{} failed ({}); its error is on stderr above", command_text(argv), how));
}

void measure_cold_start(Report& r, const std::vector<std::string>& child_argv, int processes) {
  if (processes < 1) throw std::invalid_argument("measure_cold_start: processes must be >= 1");
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::vector<Key> order;
  std::map<Key, std::vector<double>> samples;
  for (int p = 0; p < processes; ++p) {
    std::vector<Key> keys;
    for (const ColdSample& s : parse_cold_start(run_child(child_argv))) {
      keys.emplace_back(s.call, s.occurrence, s.size_bytes);
      samples[keys.back()].push_back(s.seconds);
    }
    if (p == 0) order = keys;
    if (keys != order || keys.empty())
      throw std::runtime_error(fmt::format("cold-start child {} of {} printed {} steps, the first printed {}: every "
                                           "child must time the same steps", p + 1, processes, keys.size(),
                                           order.size()));
  }
  for (const Key& k : order) {
    Params params{{"call", std::get<0>(k)}, {"occurrence", std::get<1>(k)}};
    if (std::get<2>(k) > 0) params.emplace("size_bytes", std::get<2>(k));
    auto& m = r.add_time("cold_start", params, std::move(samples[k]));
    m.extra["processes"] = processes;
  }
}

std::vector<std::string> self_child_argv(const char* flag, int device) {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error(fmt::format("readlink /proc/self/exe: {}", std::strerror(errno)));
  path[n] = '\0';
  return {path, flag, std::to_string(device)};
}

}  // namespace tg::harness
