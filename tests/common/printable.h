#pragma once
// What the tests and fuzzers require of text a terminal will show (graph/quote.h):
// no C0 control byte but the line break, no DEL, and none of the UTF-8 characters
// quote.cpp escapes (C1 controls, bidi and separator characters, zero-width ones, the
// byte-order mark).
#include <string>

namespace tg::testing {

// Empty when `s` is safe, else where and what the first unsafe byte is.
inline std::string unsafe_byte(const std::string& s, bool allow_newlines = true) {
  auto at = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = at(i);
    if ((c < 0x20 && !(c == '\n' && allow_newlines)) || c == 0x7f) return "byte " + std::to_string(c) + " at " + std::to_string(i);
    if (c == 0xC2 && i + 1 < s.size() && at(i + 1) >= 0x80 && at(i + 1) <= 0x9F) return "a C1 control at " + std::to_string(i);
    if (c == 0xD8 && i + 1 < s.size() && at(i + 1) == 0x9C) return "U+061C at " + std::to_string(i);
    if (c == 0xE2 && i + 2 < s.size() && at(i + 1) == 0x80 && at(i + 2) >= 0x8B && at(i + 2) <= 0x8F)
      return "a zero-width or direction mark at " + std::to_string(i);
    if (c == 0xE2 && i + 2 < s.size() && at(i + 1) == 0x80 && at(i + 2) >= 0xA8 && at(i + 2) <= 0xAE)
      return "a separator or bidi embedding at " + std::to_string(i);
    if (c == 0xE2 && i + 2 < s.size() && at(i + 1) == 0x81 && at(i + 2) >= 0xA6 && at(i + 2) <= 0xA9)
      return "a bidi isolate at " + std::to_string(i);
    if (c == 0xEF && i + 2 < s.size() && at(i + 1) == 0xBB && at(i + 2) == 0xBF) return "U+FEFF at " + std::to_string(i);
  }
  return "";
}

inline bool terminal_safe(const std::string& s, bool allow_newlines = true) { return unsafe_byte(s, allow_newlines).empty(); }

}  // namespace tg::testing
