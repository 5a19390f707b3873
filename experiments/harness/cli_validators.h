#pragma once
// CLI11 validators for numbers.h's strict reading, for the files that use CLI11
// (experiment.cpp, tools/tg-report): decimal only, in range, and rewritten to plain
// digits before CLI11 converts the text (CLI11 reads integers with strtoll(base 0), so
// "010" would be 8 and "0x10" 16, and its range check lets NaN through). Use with
// Option::transform, which keeps the rewrite (check would drop it).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

#include "experiments/harness/numbers.h"

namespace tg::harness {

// check(text, &plain) -> "" or the complaint (numbers.h's two functions, bound to a range).
template <class Check>
CLI::Validator rewriting_validator(Check check, std::string description) {
  return CLI::Validator(
      [check](std::string& v) {
        std::string plain;
        std::string why = check(v, &plain);
        if (why.empty()) v = plain;
        return why;
      },
      std::move(description));
}

inline CLI::Validator decimal_integer(int64_t lo, int64_t hi) {
  return rewriting_validator([lo, hi](const std::string& v, std::string* plain) {
    return check_decimal_integer(v, lo, hi, plain);
  }, fmt::format("INT in [{} - {}]", lo, hi));
}

inline CLI::Validator decimal_real(double lo, double hi) {
  return rewriting_validator([lo, hi](const std::string& v, std::string* plain) {
    return check_decimal_real(v, lo, hi, plain);
  }, fmt::format("FLOAT in [{} - {}]", lo, hi));
}

}  // namespace tg::harness
