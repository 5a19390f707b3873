#include "experiments/harness/numbers.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tg::harness {

namespace {
bool digit(char c) { return c >= '0' && c <= '9'; }

// Shown in a message: a hostile value must not flood the terminal.
std::string shown(const std::string& text) { return text.size() <= 40 ? text : text.substr(0, 40) + "..."; }

// Why a value is not decimal, for the forms people do write.
std::string hint_for(const std::string& text, const char* otherwise) {
  const size_t start = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() > start + 1 && text[start] == '0' && (text[start + 1] == 'x' || text[start + 1] == 'X'))
    return " (hexadecimal is not read: write it in decimal)";
  return otherwise;
}
}  // namespace

std::string check_decimal_integer(const std::string& text, int64_t lo, int64_t hi, std::string* canonical) {
  size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (i == text.size()) return fmt::format("Value '{}' is not a decimal integer", shown(text));
  for (size_t k = i; k < text.size(); ++k)
    if (!digit(text[k]))
      return fmt::format("Value {} is not a decimal integer{}", shown(text), hint_for(text, " (digits only)"));
  while (i + 1 < text.size() && text[i] == '0') ++i;  // leading zeros: decimal, not octal
  const std::string digits = (negative ? "-" : "") + text.substr(i);
  int64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || v < lo || v > hi)
    return fmt::format("Value {} not in range [{} - {}]", shown(text), lo, hi);
  if (canonical) *canonical = fmt::format("{}", v);
  return "";
}

std::string check_decimal_real(const std::string& text, double lo, double hi, std::string* canonical) {
  // [+-] (digits [. digits] | . digits) [(e|E) [+-] digits]
  size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  bool mantissa_digits = false, nonzero = false;
  for (; i < text.size() && digit(text[i]); ++i) mantissa_digits = true, nonzero = nonzero || text[i] != '0';
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && digit(text[i]); ++i) mantissa_digits = true, nonzero = nonzero || text[i] != '0';
  bool ok = mantissa_digits;
  if (ok && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    ok = i < text.size() && digit(text[i]);
    while (i < text.size() && digit(text[i])) ++i;
  }
  if (!ok || i != text.size())
    return fmt::format("Value {} is not a finite decimal number{}", shown(text),
                       hint_for(text, " (like 0.5 or 1e-3; no inf or nan)"));
  errno = 0;
  // The syntax above is the C locale's; strtod reads it the same in any locale that
  // uses '.' as the decimal point, which is all this program sets (none).
  const double v = std::strtod(text.c_str(), nullptr);
  if (v == 0 && nonzero)
    return fmt::format("Value {} is too small: it rounds to 0 in double precision (write 0 if 0 is meant)",
                       shown(text));
  if (!std::isfinite(v) || v < lo || v > hi) return fmt::format("Value {} not in range [{} - {}]", shown(text), lo, hi);
  if (canonical) *canonical = fmt::format("{}", v);
  return "";
}

}  // namespace tg::harness
