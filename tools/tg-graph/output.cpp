#include "tools/tg-graph/output.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tg::graph_tool {

void require_stdout_open() {
  if (fcntl(STDOUT_FILENO, F_GETFL) == -1)
    throw OutputError(std::string("stdout is not open (") + std::strerror(errno) +
                      "); run tg-graph with stdout open, redirected to a file or to /dev/null");
}

void write_stdout(const std::string& text) {
  errno = 0;
  const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
  if (written != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    throw OutputError("cannot write the result to stdout: " +
                      std::string(err ? std::strerror(err) : "the write failed") +
                      (err == ENOSPC ? " (the disk or device is full)" : "") + "; nothing else went wrong");
  }
}

HostMemory host_memory() {
  HostMemory m;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) m.total_bytes = static_cast<double>(pages) * static_cast<double>(page);
  std::ifstream info("/proc/meminfo");
  std::string line;
  while (std::getline(info, line)) {
    std::istringstream in(line);
    std::string key;
    double kib = 0;
    if (in >> key >> kib && key == "MemAvailable:") m.available_bytes = kib * 1024.0;
  }
  return m;
}

std::string with_description(std::string json, const std::string& description) {
  const std::string key = "\"version\": 1";
  const size_t at = json.find(key);
  if (at == std::string::npos) return json;
  json.insert(at + key.size(), ",\n  \"description\": " +
                                   nlohmann::json(description).dump(-1, ' ', false,
                                                                     nlohmann::json::error_handler_t::replace));
  return json;
}

}  // namespace tg::graph_tool
