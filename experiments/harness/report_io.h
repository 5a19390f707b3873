#pragma once
// Reading and writing reports: JSON (docs/report.schema.json), CSV (one row per
// measurement), and atomic file writes.
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::harness {

// A report that cannot be read: the message names the file and the problem.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string to_json(const Report& r, int indent = 1);
std::string to_csv(const Report& r);

// Structural check of a parsed JSON text against schema version 1: every problem
// found, each as "measurements[2].median: missing" (empty when valid).
std::vector<std::string> validate_report_json(const std::string& json_text);

// Parses and validates; throws ReportError("<where>: <problem>") on any problem.
Report report_from_json(const std::string& json_text, const std::string& where = "report");
Report read_report(const std::string& path);

// Writes `content` to path atomically: path.tmp, fsync, rename over path, fsync the
// folder. On any failure path.tmp is removed, path is untouched, and
// std::runtime_error says what failed (with errno's text).
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace tg::harness
