// Report paths checked before a run, and stdout checked on every write
// (experiments/harness/output.h).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "experiments/harness/output.h"
#include "tests/run_tool.h"

using namespace tg::harness;
using tg::testing::file_exists;
using tg::testing::TempDir;

namespace {
// "" when accepted (then `write` is where the report goes), else the complaint.
std::string problem(const std::string& path, std::string* write = nullptr) {
  std::string w;
  const std::string why = output_path_problem("--json", path, &w);
  if (write) *write = w;
  return why;
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("report paths: a new file or a regular one is accepted, and the check leaves nothing behind") {
  TempDir dir;
  std::string w;
  CHECK(problem(dir / "new.json", &w).empty());
  CHECK(w == dir / "new.json");
  CHECK_FALSE(file_exists(dir / "new.json"));
  CHECK_FALSE(file_exists(dir / "new.json.tmp"));
  { std::ofstream(dir / "old.json") << "x"; }
  CHECK(problem(dir / "old.json").empty());
  CHECK(tg::testing::read_text(dir / "old.json") == "x");
  // A link to a regular file is followed: the report replaces the target, the link stays.
  REQUIRE(::symlink((dir / "old.json").c_str(), (dir / "link.json").c_str()) == 0);
  CHECK(problem(dir / "link.json", &w).empty());
  CHECK(w.size() > 9);
  CHECK(w.compare(w.size() - 9, 9, "/old.json") == 0);
}

TEST_CASE("report paths: what is not a regular file, or cannot be created, is refused with the reason") {
  TempDir dir;
  CHECK(has(problem(""), "--json '': the file name is empty"));
  CHECK(has(problem(dir.path()), "is a folder; give a file name"));
  CHECK(has(problem(dir / "sub/"), "ends with '/'"));
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(has(problem(dir / "fifo"), "is a named pipe (FIFO), not a regular file: the report would replace it"));
  REQUIRE(::symlink((dir / "fifo").c_str(), (dir / "to_fifo").c_str()) == 0);
  CHECK(has(problem(dir / "to_fifo"), "is a named pipe (FIFO)"));
  REQUIRE(::symlink((dir / "nowhere").c_str(), (dir / "dangling").c_str()) == 0);
  CHECK(has(problem(dir / "dangling"), "is a symbolic link that leads nowhere"));
  { std::ofstream(dir / "file") << "x"; }
  CHECK(has(problem(dir / "file/r.json"), "'" + dir / "file" + "' is a file, not a folder"));
  CHECK(has(problem(dir / "file/deeper/r.json"), "'" + dir / "file" + "' is a file, not a folder"));
  CHECK(has(problem(dir / "missing/r.json"), "the folder '" + dir / "missing" + "' does not exist"));
  CHECK(has(problem(dir / (std::string(300, 'a') + ".json")), "the name is too long"));
  CHECK(has(problem(dir / (std::string(250, 'b') + ".json")), "(the name with '.tmp' added is too long)"));
  REQUIRE(::mkdir((dir / "t.json.tmp").c_str(), 0700) == 0);
  CHECK(has(problem(dir / "t.json"), "where the report is written first, exists and is a folder"));
  CHECK(has(problem("/proc/tg-test.json"), "cannot create files in '/proc'"));
  if (::geteuid() == 0) {  // a device node of our own, never a real one
    REQUIRE(::mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    CHECK(has(problem(dir / "null"), "is a character device, not a regular file"));
    struct stat st {};
    REQUIRE(::stat((dir / "null").c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  } else {  // root may write anywhere; others meet the permission check
    REQUIRE(::mkdir((dir / "ro").c_str(), 0500) == 0);
    CHECK(has(problem(dir / "ro/r.json"), "cannot create files in"));
  }
  // Nothing the checks made stays.
  CHECK_FALSE(file_exists(dir / "fifo.tmp"));
  CHECK_FALSE(file_exists(dir / "missing"));
}

TEST_CASE("two report paths: the same file (however spelled), or one the other's temporary file, clash") {
  TempDir dir;
  CHECK(output_paths_clash("--json", dir / "a", "--csv", dir / "b").empty());
  CHECK(has(output_paths_clash("--json", dir / "a", "--csv", dir / "a"), "are the same file"));
  CHECK(has(output_paths_clash("--json", dir / "a", "--csv", dir / "./a"), "are the same file"));
  { std::ofstream(dir / "x") << "x"; }
  REQUIRE(::link((dir / "x").c_str(), (dir / "hard").c_str()) == 0);
  CHECK(has(output_paths_clash("--json", dir / "x", "--csv", dir / "hard"), "are the same file"));
  CHECK(has(output_paths_clash("--json", dir / "r.json", "--csv", dir / "r.json.tmp"),
            "--csv " + dir / "r.json.tmp" + " is where --json"));
  CHECK(has(output_paths_clash("--json", dir / "r.csv.tmp", "--csv", dir / "r.csv"), "is where --csv"));
}

TEST_CASE("an output over an input: the same file through a link, a hard link or another spelling, or its temporary") {
  TempDir dir;
  { std::ofstream(dir / "in.json") << "x"; }
  { std::ofstream(dir / "in.json.tmp") << "x"; }
  REQUIRE(::symlink("in.json", (dir / "link.json").c_str()) == 0);
  REQUIRE(::link((dir / "in.json").c_str(), (dir / "hard.json").c_str()) == 0);
  CHECK(output_overwrites_input("--json", dir / "out.json", "FILE", dir / "in.json").empty());
  CHECK(output_overwrites_input("--json", dir / "in.json", "FILE", dir / "missing.json").empty());
  CHECK(has(output_overwrites_input("--json", dir / "in.json", "FILE", dir / "in.json"),
            "--json " + dir / "in.json" + ": is FILE " + dir / "in.json" + ", which this run reads"));
  CHECK(has(output_overwrites_input("--json", dir / "in.json", "FILE", dir / "link.json"), "which this run reads"));
  CHECK(has(output_overwrites_input("--csv", dir / "hard.json", "--weights", dir / "in.json"), "is --weights"));
  CHECK(has(output_overwrites_input("--json", dir / "./in.json", "FILE", dir / "in.json"), "which this run reads"));
  CHECK(has(output_overwrites_input("--json", dir / "in.json", "FILE", dir / "in.json.tmp"),
            "would be written first at " + dir / "in.json.tmp"));
}

TEST_CASE("messages show paths escaped, on one line, and cut after 4096 bytes") {
  CHECK(shown_path("/a/b.json") == "/a/b.json");
  CHECK(shown_path("/a/x\nFORGED\x1b[2J") == "/a/x\\nFORGED\\x1b[2J");
  const std::string long_path = "/" + std::string(10000, 'p');
  CHECK(shown_path(long_path).size() < 4200);
  CHECK(has(shown_path(long_path), "more bytes left out"));
  CHECK(shown_path(long_path).find('\n') == std::string::npos);
}

namespace {
// print_stdout in a child whose stdout is `fd`; returns "<returned>|<closed>|<failure>".
std::string print_into(int fd) {
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    ::dup2(fd, 1);
    ignore_sigpipe();
    std::string r;
    try {
      r = print_stdout(std::string(1 << 16, 'x')) ? "true" : "false";
    } catch (const OutputError& e) {
      r = "threw";
    }
    r += std::string("|") + (stdout_closed() ? "closed" : "open") + "|" + stdout_failure();
    (void)!::write(pipefd[1], r.data(), r.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));  // not killed by SIGPIPE
  return out;
}
}  // namespace

TEST_CASE("stdout: a closed pipe turns printing off quietly, a full device is an error with errno's text") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  ::close(p[0]);  // nobody will ever read
  CHECK(print_into(p[1]) == "false|closed|");
  ::close(p[1]);
  const int full = ::open("/dev/full", O_WRONLY);
  if (full >= 0) {  // writing to /dev/full only fails; it never changes the device
    CHECK(print_into(full) == "threw|open|cannot write to stdout: No space left on device");
    ::close(full);
  }
}
