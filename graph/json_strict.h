#pragma once
// One parse policy for every JSON text the project reads (graph files, weights
// headers, reports), stricter than nlohmann's defaults where those let damaged or
// hostile input through:
//   - a NUL byte anywhere is refused (nlohmann stops at it, ignoring what follows);
//   - a UTF-8 byte-order mark is refused (nlohmann skips it; JSON does not allow it);
//   - nesting deeper than the caller's cap is refused before parsing (a flat scan), so
//     nothing recurses on 100,000 levels;
//   - a key given twice in one object is refused (nlohmann keeps the last);
//   - a number beyond a double's range (1e400) is refused.
// Each reader words its own message from the JsonIssue; the policy is this one.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tg {

struct JsonIssue {
  enum class Kind { none, nul_byte, byte_order_mark, too_deep, syntax, duplicate_key, out_of_range };
  Kind kind = Kind::none;
  size_t byte = 0;     // nul_byte, too_deep, syntax: the offending byte's offset
  std::string path;    // duplicate_key: the object holding it ("measurements[3].params"; "" = the top level)
  std::string key;     // duplicate_key: the key
  std::string detail;  // syntax, out_of_range: the parser's own message
  explicit operator bool() const { return kind != Kind::none; }
};

// Parses `text` into `out` under the policy above; `max_depth` counts open arrays and
// objects. Returns an issue with kind none on success.
JsonIssue parse_json_strict(const std::string& text, int max_depth, nlohmann::json& out);

// 1-based line and column (in bytes) of offset `byte` of `text`.
void json_line_col(const std::string& text, size_t byte, int& line, int& col);

}  // namespace tg
