// Strict reading of numeric flag values (experiments/harness/numbers.h).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "experiments/harness/numbers.h"

using namespace tg::harness;

namespace {
std::string int_plain(const std::string& text, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
  std::string plain;
  const std::string why = check_decimal_integer(text, lo, hi, &plain);
  return why.empty() ? plain : "refused: " + why;
}
std::string real_plain(const std::string& text, double lo = -1e308, double hi = 1e308) {
  std::string plain;
  const std::string why = check_decimal_real(text, lo, hi, &plain);
  return why.empty() ? plain : "refused: " + why;
}
bool refused(const std::string& r) { return r.rfind("refused: ", 0) == 0; }
}  // namespace

TEST_CASE("integers: decimal digits with an optional sign, leading zeros are decimal") {
  CHECK(int_plain("0") == "0");
  CHECK(int_plain("010") == "10");  // not octal 8
  CHECK(int_plain("007") == "7");
  CHECK(int_plain("+5") == "5");
  CHECK(int_plain("-0") == "0");
  CHECK(int_plain("-12") == "-12");
  CHECK(int_plain("9223372036854775807") == "9223372036854775807");
  CHECK(int_plain("-9223372036854775808") == "-9223372036854775808");
  CHECK(int_plain("0000000000000000000000000042") == "42");
}

TEST_CASE("integers: hex, exponents, words, blanks and overflow are refused, with the range") {
  for (const char* bad : {"0x10", "0X10", "1e3", "2.5", "", "+", "-", "+-1", " 5", "5 ", "abc", "1_000", "٣"})
    CHECK_MESSAGE(refused(int_plain(bad)), bad);
  CHECK(int_plain("0x10").find("hexadecimal is not read") != std::string::npos);
  CHECK(int_plain("abc").find("Value abc is not a decimal integer (digits only)") != std::string::npos);
  // Beyond int64 (and 2^64, which strtoull would clamp to 2^64-1): out of range, never clamped.
  CHECK(int_plain("9223372036854775808") == "refused: Value 9223372036854775808 not in range [-9223372036854775808 - "
                                            "9223372036854775807]");
  CHECK(int_plain("18446744073709551616", 0, 100) == "refused: Value 18446744073709551616 not in range [0 - 100]");
  CHECK(int_plain("101", 0, 100) == "refused: Value 101 not in range [0 - 100]");
  CHECK(int_plain("-1", 0, 100) == "refused: Value -1 not in range [0 - 100]");
  // A hostile value is cut short in the message.
  CHECK(int_plain(std::string(5000, '9'), 0, 1).size() < 120);
}

TEST_CASE("reals: decimal notation, hex floats, inf and nan refused, underflow is too small, overflow out of range") {
  CHECK(real_plain("0.5") == "0.5");
  CHECK(real_plain(".5") == "0.5");
  CHECK(real_plain("5.") == "5");
  CHECK(real_plain("1e-3") == "0.001");
  CHECK(real_plain("2E+6") == "2000000");
  CHECK(real_plain("-0") == "-0");
  CHECK(real_plain("0e999999") == "0");                // zero written with a big exponent is still zero
  CHECK(real_plain("0.000") == "0");
  CHECK(real_plain("4.9e-324") == "5e-324");           // the smallest subnormal is not zero
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "0x1p3", "1e", "e5", ".", "1.2.3", "", "1,5", "5f"})
    CHECK_MESSAGE(refused(real_plain(bad)), bad);
  CHECK(real_plain("1e-400") ==
        "refused: Value 1e-400 is too small: it rounds to 0 in double precision (write 0 if 0 is meant)");
  CHECK(real_plain("-1e-400").find("too small") != std::string::npos);
  CHECK(real_plain("1e400", 0, 10) == "refused: Value 1e400 not in range [0 - 10]");
  CHECK(real_plain("10.5", 0, 10) == "refused: Value 10.5 not in range [0 - 10]");
  CHECK(real_plain("0x1p3").find("hexadecimal is not read") != std::string::npos);
  CHECK(real_plain("nan").find("is not a finite decimal number") != std::string::npos);
}
