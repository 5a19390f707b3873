#pragma once
// Strict reading of numeric flag values: decimal only, and what does not fit is refused.
// strtoll with base 0 (CLI11's default) reads "010" as 8 and "0x10" as 16, and strtoull
// clamps an overflowing value to 2^64-1; here "010" is ten, "0x10" is refused, and a
// value outside [lo, hi] (overflow included) is refused with the range.
#include <cstdint>
#include <string>

namespace tg::harness {

// Integers: an optional sign and decimal digits ("+5", "-3", "007"), nothing else.
// "" when `text` is one in [lo, hi]; `canonical` (if given) then receives its plain
// form ("7"). Else the complaint, starting "Value <text> ".
std::string check_decimal_integer(const std::string& text, int64_t lo, int64_t hi, std::string* canonical = nullptr);

// Reals: decimal notation with an optional fraction and exponent ("0.5", ".5", "1e-3",
// "2E+6"); no hex floats, inf or nan. A value that is not zero but rounds to 0 in
// double precision (1e-400) is refused as too small rather than read as 0; one
// that overflows is out of the range. `canonical` gets the shortest text that reads
// back as the same double.
std::string check_decimal_real(const std::string& text, double lo, double hi, std::string* canonical = nullptr);

}  // namespace tg::harness
