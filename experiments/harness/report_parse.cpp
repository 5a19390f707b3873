// The strict JSON parse of a report: the project's one JSON policy (graph/json_strict.h),
// worded for reports (report_check.h).
#include <fmt/format.h>

#include <algorithm>

#include "experiments/harness/report_check.h"
#include "graph/json_strict.h"

namespace tg::harness::detail {

std::string parse_strict(const std::string& text, nlohmann::json& out) {
  const JsonIssue issue = parse_json_strict(text, kMaxReportDepth, out);
  const auto line = [&] { return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(issue.byte), '\n'); };
  switch (issue.kind) {
    case JsonIssue::Kind::none: return "";
    case JsonIssue::Kind::nul_byte:
      return fmt::format("byte {} (line {}) is a NUL byte: a report is text (nothing after it would be read)",
                         issue.byte, line());
    case JsonIssue::Kind::byte_order_mark:
      return "it starts with a UTF-8 byte-order mark, which JSON does not allow";
    case JsonIssue::Kind::too_deep:
      return fmt::format("byte {} (line {}): nested more than {} levels deep (a report nests 4)", issue.byte, line(),
                         kMaxReportDepth);
    case JsonIssue::Kind::duplicate_key:
      return fmt::format("{}: key \"{}\" appears twice in one object (which one counts would be a guess)",
                         issue.path.empty() ? "the top level" : issue.path, issue.key.substr(0, 60));
    case JsonIssue::Kind::syntax:
    case JsonIssue::Kind::out_of_range: break;
  }
  return issue.detail;
}

}  // namespace tg::harness::detail
