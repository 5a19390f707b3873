// Reading a report file: only a regular file, and only up to a size, so that a FIFO
// cannot block the reader and /dev/zero cannot fill its memory.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"

namespace tg::harness {

namespace {
std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

[[noreturn]] void too_big(const std::string& path, const std::string& size, uint64_t max_bytes) {
  throw ReportError(fmt::format("{}: is {}, more than the {} a report may have here (tg-report --max-mib raises the "
                                "limit)", path, size, mib(max_bytes)));
}
}  // namespace

Report read_report(const std::string& path, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ReportError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    throw ReportError(fmt::format("{}: is a directory; give the report's .json file (written by --json)", path));
  if (!S_ISREG(st.st_mode))
    throw ReportError(fmt::format("{}: is {}, not a regular file: a report is read from a file (a pipe or a device "
                                  "may block or never end); save it to a file first",
                                  path, non_regular_kind(path, true)));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) too_big(path, mib(static_cast<uint64_t>(st.st_size)), max_bytes);
  // O_NONBLOCK: should a FIFO replace the file after the check, open must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw ReportError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string text;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
      throw ReportError(fmt::format("{}: is no longer a regular file", path));
    text.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ReportError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
      if (n == 0) break;
      // A file that grows while it is read (or reports size 0, like those in /proc).
      if (text.size() + static_cast<size_t>(n) > max_bytes) too_big(path, "over " + mib(max_bytes), max_bytes);
      text.append(buf, static_cast<size_t>(n));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw ReportError(fmt::format("{}: is empty, so it is not a report (those are written whole or not at all); "
                                  "rerun the experiment with --json", path));
  return report_from_json(text, path);
}

}  // namespace tg::harness
