#include "tools/tg-graph/flags.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "graph/quote.h"

namespace tg::graph_tool {

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// [digits][.digits][e[+-]digits], at least one digit before the exponent: what a
// person types for a size. No sign, no hex (strtod reads "0x10"), no inf or nan.
bool plain_decimal(const std::string& s) {
  size_t i = 0, mantissa = 0;
  while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp_start = i;
    while (i < s.size() && digit(s[i])) ++i;
    if (i == exp_start) return false;
  }
  return i == s.size();
}

}  // namespace

std::string parse_seed(const std::string& text, uint64_t& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return fmt::format("must be a non-negative integer (decimal digits), got {}", quote_name(text));
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t v = 0;
  for (char c : text) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (kMax - d) / 10)
      return fmt::format("{} is larger than the largest seed, {} (2^64 - 1)", escape_text(text), kMax);
    v = v * 10 + d;
  }
  out = v;
  return "";
}

std::string parse_mib(const std::string& text, double& out) {
  if (!plain_decimal(text))
    return fmt::format("must be a number of MiB > 0 in decimal, like 512 or 0.5, got {}", quote_name(text));
  errno = 0;
  const double v = std::strtod(text.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(v))
    return fmt::format("{} is too large to be a number (it overflows a double); give the limit in MiB, like 65536",
                       escape_text(text));
  if (!(v > 0.0))  // 0, or a decimal that underflows (1e-400: strtod gives 0 and ERANGE)
    return fmt::format("must be a number of MiB > 0, got {}{}", quote_name(text),
                       v == 0.0 && text.find_first_of("123456789") != std::string::npos ? ", which rounds to 0" : "");
  out = v;
  return "";
}

}  // namespace tg::graph_tool
