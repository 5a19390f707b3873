// `tg-report markdown`: one section per report, its measurements as a table.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "experiments/harness/table.h"
#include "tools/tg-report/compare.h"

namespace tg::report {

namespace {
// An underscore between two letters or digits cannot start or end emphasis, so
// snake_case names stay as they are; any other one is escaped.
bool inside_word(const std::string& s, size_t i) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return i > 0 && i + 1 < s.size() && word(s[i - 1]) && word(s[i + 1]);
}
}  // namespace

std::string markdown_text(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\r' || ch == '\n') {
      if (ch == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      o += "<br>";
    } else if (ch == '\t') {
      o += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      o += fmt::format("\\x{:02x}", u);  // a backslash before a letter stays a backslash
    } else {
      // The ASCII punctuation that means something inline in (GitHub) markdown, table
      // cells included; '#', '-', '+' and '!' only at the start (a heading, a list
      // item, an image), where escaping them keeps numbers like 1e-06 readable.
      if (std::strchr("\\`*[]<>|~&", ch) != nullptr || (o.empty() && std::strchr("#-+!", ch) != nullptr) ||
          (ch == '_' && !inside_word(s, i)))
        o += '\\';
      o += ch;
    }
  }
  return o;
}

std::string markdown_code(const std::string& s) {
  std::string body;
  size_t run = 0, longest = 0;
  for (const char ch : s) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    body += (ch == '\n' || ch == '\r') ? ' ' : ch;  // a code span cannot hold a line break
  }
  const std::string fence(longest + 1, '`');
  // A space on each side keeps a leading or trailing backtick out of the fence.
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string markdown(const harness::Report& r, const std::string& file) {
  const auto& m = r.meta;
  const auto t = [](const std::string& s) { return markdown_text(s); };
  std::string out = fmt::format("## {}\n\n", t(m.tool));
  out += fmt::format("{} - {} {} (git {}, {}), {} on {}, device: {}{}\n\n", markdown_code(file), t(m.tool),
                     t(m.tool_version), t(m.git_rev), t(m.build_type), t(m.utc_time), t(m.host_name),
                     t(m.device_name), m.quick ? ", quick mode" : "");
  out += "| measurement | params | median | p10 | p90 | noise | n | extra |\n";
  out += "|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& x : r.measurements) {
    std::string extra;
    for (const auto& [k, v] : x.extra) extra += (extra.empty() ? "" : ", ") + fmt::format("{} {:.3g}", k, v);
    const auto& s = x.stats;
    // A noise too large for fixed notation (a hostile report's 1e300) in exponent form.
    const std::string noise = s.noise * 100 < 1e6 ? fmt::format("{:.1f}%", s.noise * 100)
                                                  : fmt::format("{:.3g}%", s.noise * 100);
    out += fmt::format("| {} | {} | {} | {} | {} | {}{} | {} | {} |\n", t(x.name), t(harness::params_str(x.params)),
                       t(harness::format_value(s.median, x.unit)), t(harness::format_value(s.p10, x.unit)),
                       t(harness::format_value(s.p90, x.unit)), noise, s.noisy ? " (noisy)" : "", s.count, t(extra));
  }
  if (r.measurements.empty()) out += "| (no measurements) | | | | | | | |\n";
  if (r.error)
    out += fmt::format("\n**This run failed ({})**: {}. The table holds the measurements taken before.\n",
                       t(r.error->kind), t(r.error->message));
  if (!r.notes.empty()) {
    out += "\nSkipped:\n\n";
    for (const auto& n : r.notes) out += fmt::format("- {}: {}\n", t(n.part), t(n.reason));
  }
  return out + "\n";
}

}  // namespace tg::report
