#pragma once
// Reading and writing reports: JSON (docs/report.schema.json), CSV (one row per
// measurement), and atomic file writes.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::harness {

// A report that cannot be read: the message names the file and the problem.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string to_json(const Report& r, int indent = 1);
std::string to_csv(const Report& r);

// Checks a JSON text against schema version 1: every rule of docs/report.schema.json
// and those a schema cannot state (docs/report-format.md, "Validation": ordered
// statistics, count = number of samples, each name + params once, a real UTC time,
// no duplicate keys, no NUL byte). Every problem found, each as
// "measurements[2].median: missing" (empty when valid).
std::vector<std::string> validate_report_json(const std::string& json_text);

// Parses and validates; throws ReportError("<where>: <problem>") on any problem.
Report report_from_json(const std::string& json_text, const std::string& where = "report");

// The largest report read_report takes by default.
inline constexpr uint64_t kMaxReportBytes = uint64_t{256} << 20;
// Reads and validates a report file. Refused (ReportError naming the file): anything
// but a regular file (a folder, a FIFO, a device: nothing is read from them), a file
// over max_bytes (checked before reading, and while reading), an empty file.
Report read_report(const std::string& path, uint64_t max_bytes = kMaxReportBytes);

// Writes `content` to path atomically: path.tmp, fsync, rename over path, fsync the
// folder. On any failure path.tmp is removed, path is untouched, and
// std::runtime_error says what failed (with errno's text). path.tmp is never
// followed if it is a symbolic link. Once a signal arrived (interrupt.h) it throws
// Interrupted instead, leaving nothing behind either.
void write_file_atomic(const std::string& path, const std::string& content);
// Several files as one: every path.tmp is written and synced first, then all are
// renamed, back to back (a signal during the renames no longer stops them). A
// failure or a signal before the renames leaves every target untouched.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace tg::harness
