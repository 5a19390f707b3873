#pragma once
// The report reader's two checks, shared by report_json.cpp and report_read.cpp.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/harness/report.h"

namespace tg::harness::detail {

// Deeper than any report (they nest 4 levels): refused before anything recurses.
inline constexpr int kMaxReportDepth = 32;

// Parses `text` as JSON more strictly than nlohmann does by default: a NUL byte (which
// nlohmann takes for the end of the text, ignoring what follows), a key that appears
// twice in one object (nlohmann keeps the last), or nesting deeper than kMaxReportDepth
// is refused. "" on success, else the problem (with its place: a byte offset, or the
// JSON path of the object).
std::string parse_strict(const std::string& text, nlohmann::json& out);

// Every rule of docs/report.schema.json, and the ones a schema cannot state
// (docs/report-format.md, "Validation"): each problem as "<JSON path>: <problem>".
std::vector<std::string> validate_report(const nlohmann::json& j);

// A parameter value as read: string, boolean, integer, or real; an unsigned integer
// above 2^63-1 (which Param's int64 cannot hold) is read as a real, not wrapped to a
// negative number.
Param param_from_json(const nlohmann::json& j);

}  // namespace tg::harness::detail
