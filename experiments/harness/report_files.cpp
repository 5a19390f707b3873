// CSV form of a report and atomic file writes.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>

#include "experiments/harness/report_io.h"

namespace tg::harness {

namespace {
// RFC 4180: quote a field that holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}
std::string num(double v) { return fmt::format("{}", v); }
}  // namespace

std::string to_csv(const Report& r) {
  // One row per measurement; every parameter and extra key seen becomes a column
  // (param.<key>, extra.<key>), empty where a row lacks it, so a spreadsheet can sort by it.
  std::set<std::string> pkeys, ekeys;
  for (const auto& m : r.measurements) {
    for (const auto& kv : m.params) pkeys.insert(kv.first);
    for (const auto& kv : m.extra) ekeys.insert(kv.first);
  }
  std::string out = "tool,name,unit,better,timer,count,min,p10,median,p90,max,mean,noise,noisy";
  for (const auto& k : pkeys) out += "," + csv_field("param." + k);
  for (const auto& k : ekeys) out += "," + csv_field("extra." + k);
  out += '\n';
  for (const auto& m : r.measurements) {
    const Summary& s = m.stats;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(r.meta.tool), csv_field(m.name),
                       csv_field(m.unit), m.better, csv_field(m.timer), s.count, num(s.min), num(s.p10),
                       num(s.median), num(s.p90), num(s.max), num(s.mean), num(s.noise), s.noisy ? "true" : "false");
    for (const auto& k : pkeys) {
      auto it = m.params.find(k);
      out += "," + (it == m.params.end() ? std::string() : csv_field(it->second.str()));
    }
    for (const auto& k : ekeys) {
      auto it = m.extra.find(k);
      out += "," + (it == m.extra.end() ? std::string() : num(it->second));
    }
    out += '\n';
  }
  return out;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  if (path.empty()) throw std::runtime_error("cannot write a report: the file name is empty");
  const std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {} failed: {}", path, what, std::strerror(err)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    // open failed, so there is no tmp of ours to remove (and one of another writer's must stay).
    throw std::runtime_error(fmt::format("cannot write {}: creating {} failed: {}", path, tmp, std::strerror(err)));
  }
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("fsync", err);
  }
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
  // The rename itself is durable only once the folder is synced; failure here is harmless.
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace tg::harness
