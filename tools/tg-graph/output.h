#pragma once
// What tg-graph needs from its host: stdout that is checked, so a full disk, a closed
// stdout or a failed flush is an error with a message rather than a silent exit 0,
// and how much memory there is, so `run` refuses a graph that cannot fit instead of
// being killed half-way.
#include <stdexcept>
#include <string>

namespace tg::graph_tool {

// The result could not be written (exit 1: the graph was fine, the output was not).
class OutputError : public std::runtime_error {
 public:
  explicit OutputError(const std::string& what) : std::runtime_error(what) {}
};

// Throws OutputError when descriptor 1 is not open. Checked before any work: a file
// opened later could be given descriptor 1, and writes would go to it.
void require_stdout_open();

// Writes all of `text` to stdout and flushes it; throws OutputError naming the
// system's reason (ENOSPC for /dev/full, EBADF for a closed stdout).
void write_stdout(const std::string& text);

struct HostMemory {
  double total_bytes = 0;      // physical memory; 0 when unknown
  double available_bytes = 0;  // MemAvailable (Linux): what can be allocated without swapping; 0 when unknown
};
HostMemory host_memory();

// A graph file's JSON (save_graph_json, which writes no description) with `description`
// after its version, saying where it came from; bytes that are not UTF-8 become U+FFFD.
std::string with_description(std::string json, const std::string& description);

}  // namespace tg::graph_tool
