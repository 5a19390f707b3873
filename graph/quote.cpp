#include "graph/quote.h"

#include <fmt/format.h>

#include <algorithm>

namespace tg {

namespace {

// The length of the valid UTF-8 sequence of 2 to 4 bytes at s[i] (its code point in
// cp), or 0 when the bytes there are not one: a stray continuation byte, a truncated
// sequence, an overlong form, a surrogate or a code point past U+10FFFF.
size_t utf8_sequence(std::string_view s, size_t i, char32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) len = 2, cp = b0 & 0x1Fu, min = 0x80;
  else if (b0 >= 0xE0 && b0 <= 0xEF) len = 3, cp = b0 & 0x0Fu, min = 0x800;
  else if (b0 >= 0xF0 && b0 <= 0xF4) len = 4, cp = b0 & 0x07u, min = 0x10000;
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Code points a terminal acts on or that hide what a name is: C1 controls (0x9B is
// a one-byte CSI on some terminals), the bidirectional overrides and isolates
// ("Trojan source"), zero-width characters, the byte-order mark and the Unicode
// line and paragraph separators.
bool shown_escaped(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

// Appends text[from, to) escaped. In quotes, the quote and the backslash are escaped
// too (so the quoted form reads back unambiguously); keep_newlines leaves '\n' as is.
void append_escaped(std::string& out, std::string_view text, bool in_quotes, bool keep_newlines) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      char32_t cp = 0;
      const size_t len = utf8_sequence(text, i, cp);
      if (len == 0) {
        fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
        ++i;
      } else {
        if (shown_escaped(cp)) fmt::format_to(std::back_inserter(out), "\\u{{{:04x}}}", static_cast<uint32_t>(cp));
        else out.append(text.substr(i, len));
        i += len;
      }
      continue;
    }
    ++i;
    if (c == '\n' && keep_newlines) out += '\n';
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\0') out += "\\0";
    else if (c < 0x20 || c == 0x7f) fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    else if (in_quotes && (c == '\'' || c == '\\')) (out += '\\') += static_cast<char>(c);
    else out += static_cast<char>(c);
  }
}

// The longest prefix of at most max bytes that does not end inside a UTF-8 sequence.
size_t prefix_bytes(std::string_view text, size_t max) {
  if (text.size() <= max) return text.size();
  size_t n = max;  // a sequence is at most 4 bytes: back off at most 3
  while (n > 0 && max - n < 3 && (static_cast<unsigned char>(text[n]) & 0xC0u) == 0x80u) --n;
  return n;
}

bool plain_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '/' || c == '@' || c == '+' || c == '-';
}

std::string quote_whole(std::string_view name) {
  std::string out = "'";
  append_escaped(out, name, true, false);
  return out + "'";
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const size_t len = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence(text, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string escape_text(std::string_view text) {
  std::string out;
  append_escaped(out, text, false, false);
  return out;
}

std::string quote_name(std::string_view name) {
  const size_t shown = prefix_bytes(name, kMaxQuotedNameBytes);
  if (shown == name.size()) return quote_whole(name);
  return fmt::format("{}... (a name of {} bytes)", quote_whole(name.substr(0, shown)), name.size());
}

std::string listed(std::string_view name) {
  bool plain = !name.empty();
  for (char c : name) plain = plain && plain_byte(static_cast<unsigned char>(c));
  return plain ? std::string(name) : quote_whole(name);
}

namespace {

std::string printable(std::string_view text, size_t max_bytes, bool keep_newlines) {
  // Escaping can make a byte four (\xHH), so the cap is on what is printed: the text
  // is escaped a piece at a time until max_bytes is reached.
  constexpr size_t kPiece = 1024;
  std::string out;
  size_t done = 0;
  while (done < text.size() && out.size() < max_bytes) {
    const std::string_view rest = text.substr(done);
    // A quarter of the room left: even if every byte becomes \xHH, out stays within ~max_bytes.
    const size_t take = prefix_bytes(rest, std::min(kPiece, (max_bytes - out.size() + 3) / 4));
    if (take == 0) break;
    append_escaped(out, rest.substr(0, take), false, keep_newlines);
    done += take;
  }
  if (done < text.size())
    fmt::format_to(std::back_inserter(out), "{}... ({} more bytes left out)", keep_newlines ? "\n" : " ",
                   text.size() - done);
  return out;
}

}  // namespace

std::string printable_message(std::string_view text, size_t max_bytes) { return printable(text, max_bytes, true); }

std::string printable_line(std::string_view text, size_t max_bytes) { return printable(text, max_bytes, false); }

}  // namespace tg
