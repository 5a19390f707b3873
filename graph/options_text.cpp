#include "graph/options_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "graph/quote.h"

namespace tg::options_detail {

namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> split_items(const std::string& text, const std::string& kind,
                                                             const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::string>> out;
  if (trimmed(text).empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const size_t len = comma == std::string::npos ? std::string::npos : comma - start;
    const std::string item = trimmed(text.substr(start, len));
    const size_t eq = item.find('=');
    if (item.empty())
      throw std::invalid_argument("an empty item (two commas in a row, or one at an end); give key=value items "
                                  "joined by ','");
    if (eq == std::string::npos)
      throw std::invalid_argument(fmt::format("{} is not key=value; give key=value items joined by ',' (keys: {})",
                                              quote_name(item), joined(keys)));
    const std::string key = trimmed(item.substr(0, eq)), value = trimmed(item.substr(eq + 1));
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw std::invalid_argument(fmt::format("{} is not {}; the keys are {}", quote_name(key), kind, joined(keys)));
    for (const auto& [k, v] : out)
      if (k == key) throw std::invalid_argument(fmt::format("{} is given twice; give each key once", quote_name(key)));
    out.emplace_back(key, value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool switch_value(const std::string& key, const std::string& value) {
  if (value == "1") return true;
  if (value == "0") return false;
  throw std::invalid_argument(fmt::format("{}={}: expected 1 (on) or 0 (off)", key, quote_name(value)));
}

int64_t integer_value(const std::string& key, const std::string& value, int64_t lo, int64_t hi) {
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const long long v = digits ? std::strtoll(value.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v < lo || v > hi)
    throw std::invalid_argument(fmt::format("{}={}: expected an integer in [{}, {}]", key, quote_name(value), lo, hi));
  return static_cast<int64_t>(v);
}

}  // namespace tg::options_detail
