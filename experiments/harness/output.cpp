#include "experiments/harness/output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio_ext.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "graph/quote.h"

namespace tg::harness {

namespace {
std::atomic<bool> g_stdout_closed{false};
std::string g_stdout_failure;  // written once, by the thread that prints

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string kind_of(mode_t m) {
  if (S_ISREG(m)) return "";
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a named pipe (FIFO)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

// The first existing part of `dir` that is not a folder, as "'d/file' is a file"
// ("" when every existing part is a folder).
std::string file_in_the_way(const std::string& dir) {
  size_t pos = 0;
  while (pos <= dir.size()) {
    const size_t next = dir.find('/', pos);
    const std::string prefix = dir.substr(0, next == std::string::npos ? dir.size() : next);
    struct stat st {};
    if (!prefix.empty() && ::stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      return fmt::format("'{}' is {}", shown_path(prefix), S_ISREG(st.st_mode) ? "a file" : kind_of(st.st_mode));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return "";
}

// realpath of the folder plus the name: two spellings of one new file compare equal.
std::string canonical_file(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(parent_of(path).c_str(), buf) == nullptr) return path;
  const std::string dir = buf;
  return (dir == "/" ? "" : dir) + "/" + base_of(path);
}
}  // namespace

std::string shown_path(const std::string& path) { return printable_line(path, kMaxShownPathBytes); }

void say(const std::string& tool, const std::string& text) {
  std::fputs((printable_line(tool, 256) + ": " + printable_message(text) + "\n").c_str(), stderr);
}

void say_line(const std::string& tool, const std::string& text) {
  std::fputs((printable_line(tool, 256) + ": " + printable_line(text) + "\n").c_str(), stderr);
}

bool print_stdout(const std::string& text) {
  if (g_stdout_closed.load() || !g_stdout_failure.empty()) return false;
  errno = 0;
  const size_t n = text.empty() ? 0 : std::fwrite(text.data(), 1, text.size(), stdout);
  if (n == text.size() && std::fflush(stdout) == 0) return true;
  const int err = errno ? errno : EIO;
  // What is still buffered would only fail again when the process exits.
  __fpurge(stdout);
  clearerr(stdout);
  if (err == EPIPE) {
    g_stdout_closed.store(true);
    return false;
  }
  g_stdout_failure = fmt::format("cannot write to stdout: {}", std::strerror(err));
  throw OutputError(g_stdout_failure);
}

bool stdout_closed() { return g_stdout_closed.load(); }
std::string stdout_failure() { return g_stdout_failure; }

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

std::string non_regular_kind(const std::string& path, bool follow_links) {
  struct stat st {};
  if ((follow_links ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return "";
  return kind_of(st.st_mode);
}

std::string output_path_problem(const std::string& flag, const std::string& path, std::string* write_path) {
  if (path.empty()) return fmt::format("{} '': the file name is empty; give a path, or leave {} out", flag, flag);
  const std::string shown = shown_path(path);
  if (path.back() == '/') return fmt::format("{} {}: ends with '/', so it names a folder; give a file name", flag, shown);
  std::string target = path;
  struct stat st {};
  bool exists = false;
  if (::lstat(path.c_str(), &st) == 0) {
    exists = true;
    if (S_ISLNK(st.st_mode)) {
      char buf[PATH_MAX];
      if (::realpath(path.c_str(), buf) == nullptr || ::stat(buf, &st) != 0)
        return fmt::format("{} {}: is a symbolic link that leads nowhere ({}); give a regular file", flag, shown,
                           std::strerror(errno));
      target = buf;
    }
    if (S_ISDIR(st.st_mode))
      return fmt::format("{} {}: is a folder; give a file name, e.g. {}/report.json", flag, shown, shown);
    if (!S_ISREG(st.st_mode))
      return fmt::format("{} {}: is {}, not a regular file: the report would replace it (a report is written by "
                         "renaming a new file over its path); give a regular file, or leave {} out for no report",
                         flag, shown, kind_of(st.st_mode), flag);
  } else if (errno == ENAMETOOLONG) {
    return fmt::format("{} {}: the name is too long ({})", flag, shown, std::strerror(errno));
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return fmt::format("{} {}: cannot look it up: {}", flag, shown, std::strerror(errno));
  }
  const std::string dir = parent_of(target);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)) {
    const int err = errno;
    if (const std::string file = file_in_the_way(dir); !file.empty())
      return fmt::format("{} {}: {}, not a folder; choose another path", flag, shown, file);
    if (err == ENOENT)
      return fmt::format("{} {}: the folder '{}' does not exist; create it first or choose another path", flag, shown,
                         shown_path(dir));
    return fmt::format("{} {}: cannot use the folder '{}': {}", flag, shown, shown_path(dir),
                       std::strerror(err));
  }
  // Creating the temporary file for real is the only test that sees every reason it
  // would fail after the run: permissions, read-only mounts, /proc and /sys (which
  // refuse new files even to root), a name that is too long once ".tmp" is added.
  const std::string tmp = target + ".tmp";
  struct stat ts {};
  if (::lstat(tmp.c_str(), &ts) == 0) {
    if (!S_ISREG(ts.st_mode))
      return fmt::format("{} {}: '{}', where the report is written first, exists and is {}; remove it or choose "
                         "another path", flag, shown, shown_path(tmp), kind_of(ts.st_mode));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || ::access(dir.c_str(), W_OK) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return fmt::format("{} {}: cannot write '{}' (left by an earlier run): {}", flag, shown, shown_path(tmp),
                         std::strerror(err));
    }
    ::close(fd);
  } else {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      const char* why = err == EROFS ? " (a read-only file system)"
                        : err == ENAMETOOLONG ? " (the name with '.tmp' added is too long)"
                        : (err == ENOENT || err == EACCES || err == EPERM) ? " (no new files may be created there)"
                                                                           : "";
      return fmt::format("{} {}: cannot create files in '{}': {}{}", flag, shown, shown_path(dir), std::strerror(err),
                         why);
    }
    ::close(fd);
    ::unlink(tmp.c_str());
  }
  // In a sticky folder (/tmp) only the owner may replace a file: rename would fail.
  if (exists && (ds.st_mode & S_ISVTX) && ::geteuid() != 0 && st.st_uid != ::geteuid() && ds.st_uid != ::geteuid())
    return fmt::format("{} {}: belongs to another user in a folder with the sticky bit (like /tmp), so it cannot be "
                       "replaced; choose another path", flag, shown);
  if (write_path) *write_path = target;
  return "";
}

std::string output_overwrites_input(const std::string& out_flag, const std::string& out_path,
                                    const std::string& in_what, const std::string& in_path) {
  struct stat in {};
  if (in_path.empty() || ::stat(in_path.c_str(), &in) != 0) return "";
  const std::string out = canonical_file(out_path);
  for (const std::string& written : {out, out + ".tmp"}) {
    struct stat ws {};
    const bool same = ::stat(written.c_str(), &ws) == 0 && ws.st_dev == in.st_dev && ws.st_ino == in.st_ino;
    if (!same && written != canonical_file(in_path)) continue;
    return fmt::format("{} {}: {} {}, which this run reads; write the output elsewhere", out_flag, shown_path(out_path),
                       written == out ? "is" : "would be written first at " + shown_path(written) + ", that is",
                       in_what + " " + shown_path(in_path));
  }
  return "";
}

std::string output_paths_clash(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                               const std::string& path_b) {
  const std::string a = canonical_file(path_a), b = canonical_file(path_b);
  struct stat sa {}, sb {};
  const bool same_inode = ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
                          sa.st_ino == sb.st_ino;
  if (a == b || same_inode)
    return fmt::format("{} {} and {} {} are the same file: give each report its own file", flag_a, shown_path(path_a),
                       flag_b, shown_path(path_b));
  if (a + ".tmp" == b)
    return fmt::format("{} {} is where {} {} is written first ({}.tmp): choose another name", flag_b, shown_path(path_b),
                       flag_a, shown_path(path_a), shown_path(path_a));
  if (b + ".tmp" == a)
    return fmt::format("{} {} is where {} {} is written first ({}.tmp): choose another name", flag_a, shown_path(path_a),
                       flag_b, shown_path(path_b), shown_path(path_b));
  return "";
}

}  // namespace tg::harness
