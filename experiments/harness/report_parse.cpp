// The strict JSON parse of a report: nlohmann's SAX parser feeding a DOM builder that
// refuses duplicate keys and deep nesting (report_check.h).
#include <fmt/format.h>

#include <algorithm>

#include "experiments/harness/report_check.h"

namespace tg::harness::detail {

namespace {

using nlohmann::json;

class StrictBuilder {
 public:
  explicit StrictBuilder(json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(json::binary_t&) { return refuse("binary values are not JSON text"); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (stack_.back()->contains(k))
      return refuse(fmt::format("{}: key \"{}\" appears twice in one object (which one counts would be a guess)",
                                path(), k.substr(0, 60)));
    keys_.back() = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool refuse(std::string why) {
    error_ = std::move(why);
    return false;
  }
  // The new value's slot: the root, the next array element or the current key.
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
    if (static_cast<int>(stack_.size()) >= kMaxReportDepth)
      return refuse(fmt::format("{}: nested more than {} levels deep (a report nests 4)", path(), kMaxReportDepth));
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
  // "measurements[3].params" for the innermost open container.
  std::string path() const {
    std::string p;
    for (size_t i = 1; i < stack_.size(); ++i) {
      const json& parent = *stack_[i - 1];
      if (parent.is_array()) p += fmt::format("[{}]", parent.size() - 1);
      else p += (p.empty() ? "" : ".") + keys_[i - 1];
    }
    return p.empty() ? "the top level" : p;
  }

  json& root_;
  std::vector<json*> stack_;       // open containers, outermost first
  std::vector<std::string> keys_;  // per open container: the key being filled (objects)
  std::string error_;
};

}  // namespace

std::string parse_strict(const std::string& text, json& out) {
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    return fmt::format("byte {} (line {}) is a NUL byte: a report is text (nothing after it would be read)", nul,
                       line);
  }
  StrictBuilder b(out);
  try {
    if (json::sax_parse(text, &b, json::input_format_t::json, true)) return "";
  } catch (const json::exception& e) {  // out_of_range for a number like 1e400
    return e.what();
  }
  return b.error().empty() ? "not valid JSON" : b.error();
}

}  // namespace tg::harness::detail
