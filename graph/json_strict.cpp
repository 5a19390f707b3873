#include "graph/json_strict.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace tg {

namespace {

using nlohmann::json;

// Builds the DOM from nlohmann's SAX events, refusing a key given twice. Its own stack
// instead of recursion; the depth is capped before it runs.
class StrictBuilder {
 public:
  explicit StrictBuilder(json& root, JsonIssue& issue) : root_(root), issue_(issue) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(json::binary_t&) {
    issue_.kind = JsonIssue::Kind::syntax;
    issue_.detail = "binary values are not JSON text";
    return false;
  }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (stack_.back()->contains(k)) {
      issue_.kind = JsonIssue::Kind::duplicate_key;
      issue_.path = path();
      issue_.key = k;
      return false;
    }
    keys_.back() = std::move(k);
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    issue_.kind = JsonIssue::Kind::syntax;
    issue_.byte = byte > 0 ? byte - 1 : 0;
    issue_.detail = e.what();
    return false;
  }

 private:
  json* slot() {
    if (stack_.empty()) return &root_;
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return &top.back();
    }
    return &top[keys_.back()];
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json container) {
    json* s = slot();
    *s = std::move(container);
    stack_.push_back(s);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  // "measurements[3].params" for the innermost open container; "" at the top level.
  std::string path() const {
    std::string p;
    for (size_t i = 1; i < stack_.size(); ++i) {
      const json& parent = *stack_[i - 1];
      if (parent.is_array()) p += fmt::format("[{}]", parent.size() - 1);
      else p += (p.empty() ? "" : ".") + keys_[i - 1];
    }
    return p;
  }

  json& root_;
  JsonIssue& issue_;
  std::vector<json*> stack_;       // open containers, outermost first
  std::vector<std::string> keys_;  // per open container: the key being filled (objects)
};

// The offset of the first bracket that opens level max_depth + 1, or npos.
size_t too_deep_at(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

JsonIssue parse_json_strict(const std::string& text, int max_depth, json& out) {
  JsonIssue issue;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
    issue.kind = JsonIssue::Kind::byte_order_mark;
    return issue;
  }
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    issue.kind = JsonIssue::Kind::nul_byte;
    issue.byte = nul;
    return issue;
  }
  if (const size_t deep = too_deep_at(text, max_depth); deep != std::string::npos) {
    issue.kind = JsonIssue::Kind::too_deep;
    issue.byte = deep;
    return issue;
  }
  StrictBuilder builder(out, issue);
  try {
    if (json::sax_parse(text, &builder, json::input_format_t::json, true)) return issue;
  } catch (const json::exception& e) {  // out_of_range for a number like 1e400
    issue.kind = JsonIssue::Kind::out_of_range;
    issue.detail = e.what();
    return issue;
  }
  if (!issue) {
    issue.kind = JsonIssue::Kind::syntax;
    issue.detail = "not valid JSON";
  }
  return issue;
}

void json_line_col(const std::string& text, size_t byte, int& line, int& col) {
  line = 1;
  col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
}

}  // namespace tg
