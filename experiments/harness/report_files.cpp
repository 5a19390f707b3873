// CSV form of a report and atomic file writes.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "experiments/harness/interrupt.h"
#include "experiments/harness/output.h"
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

namespace {

struct PendingFile {
  std::string path, tmp;
  int slot = -1;        // in the signal handlers' list of files to remove
  bool created = false;
};

// Removes the temporary files not yet renamed; their targets stay as they were.
void discard(std::vector<PendingFile>& files) {
  for (PendingFile& f : files)
    if (f.created) {
      ::unlink(f.tmp.c_str());
      unregister_temp_file(f.slot);
      f.created = false;
    }
}

[[noreturn]] void fail(const PendingFile& f, const std::string& what, int err) {
  throw std::runtime_error(fmt::format("cannot write {}: {} failed: {}", f.path, what, std::strerror(err)));
}

// path.tmp, whole and synced. Stops between chunks once a signal arrived, so that even
// a large report on a slow disk does not hold up Ctrl-C.
void write_tmp(PendingFile& f, const std::string& content) {
  // O_NOFOLLOW: a link planted at path.tmp must not redirect the write (in /tmp,
  // another user could point it at any file this process may write).
  const int fd = ::open(f.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int err = errno;
    // There is no tmp of ours to remove (and one of another writer's must stay).
    throw std::runtime_error(fmt::format("cannot write {}: creating {} failed: {}", f.path, f.tmp, std::strerror(err)));
  }
  f.created = true;
  f.slot = register_temp_file(f.tmp);
  constexpr size_t kChunk = size_t{1} << 20;
  size_t done = 0;
  while (done < content.size()) {
    if (interrupted()) {
      ::close(fd);
      throw Interrupted();
    }
    const ssize_t n = ::write(fd, content.data() + done, std::min(kChunk, content.size() - done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(f, "write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(f, "fsync", err);
  }
  if (::close(fd) != 0) fail(f, "close", errno);
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<PendingFile> pending;
  pending.reserve(files.size());
  try {
    for (const auto& [path, content] : files) {
      if (path.empty()) throw std::runtime_error("cannot write a report: the file name is empty");
      pending.push_back({path, path + ".tmp"});
      write_tmp(pending.back(), content);
    }
    throw_if_interrupted();
  } catch (...) {
    discard(pending);
    throw;
  }
  // The renames: microseconds, and a signal now no longer undoes the run (interrupt.h).
  begin_commit();
  std::string written;
  for (PendingFile& f : pending) {
    // Checked before the run; something else may have appeared there since.
    const std::string kind = non_regular_kind(f.path);
    const int err = !kind.empty() && kind != "a symbolic link" ? EISDIR
                    : ::rename(f.tmp.c_str(), f.path.c_str()) != 0 ? errno
                                                                      : 0;
    if (err) {
      end_commit();
      discard(pending);
      const std::string why = err == EISDIR ? fmt::format("it is {} (renaming the report over it would replace it)", kind)
                                            : fmt::format("rename failed: {}", std::strerror(err));
      throw std::runtime_error(fmt::format("cannot write {}: {}{}", f.path, why,
                                           written.empty() ? "" : "; written before that:" + written));
    }
    unregister_temp_file(f.slot);
    f.created = false;
    written += " " + f.path;
  }
  end_commit();
  // A rename is durable only once its folder is synced; failure here is harmless.
  std::set<std::string> folders;
  for (const PendingFile& f : pending) folders.insert(folder_of(f.path));
  for (const std::string& dir : folders) {
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
}

void write_file_atomic(const std::string& path, const std::string& content) { write_files_atomic({{path, content}}); }

}  // namespace tg::harness
