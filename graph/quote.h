#pragma once
// Names and text from graph files reach terminals, listings and logs. A name may hold
// anything JSON can: ANSI escape sequences, newlines, NUL bytes, bidirectional-override
// characters, megabytes. Every name printed goes through one escaping rule, here:
//   - control characters (C0, DEL, C1), invalid UTF-8 bytes, the Unicode bidi and
//     line/paragraph-separator characters, and the quote and backslash are escaped
//     (\n, \t, \r, \0, \xHH for bytes, \u{HHHH} for code points, \' and \\);
//   - other UTF-8 passes through, so names in any script stay readable.
// The escaped text never holds a byte below 0x20 or 0x7f, so it cannot move the
// cursor, recolour the terminal or start a fake line.
#include <cstddef>
#include <string>
#include <string_view>

namespace tg {

// How much of a name a message shows: the rest is counted, not printed.
constexpr size_t kMaxQuotedNameBytes = 96;
// The most a single message (an exception's text, one line or a list) may hold
// once tools print it; the rest is left out with a note.
constexpr size_t kMaxMessageBytes = 16384;
// How much of a file's path a message shows (PATH_MAX: any path the system takes shows
// whole): through printable_line, so a path cannot start a line of its own either.
constexpr size_t kMaxShownPathBytes = 4096;

// Whether `text` is valid UTF-8: the only text a graph file (JSON) can hold.
bool valid_utf8(std::string_view text);

// The escaped form of `text`, without quotes and without a length cap.
std::string escape_text(std::string_view text);

// For messages: 'name' escaped; names longer than kMaxQuotedNameBytes are cut
// ('<the first 96 bytes>'... (a name of 10000000 bytes)). Always quoted, so an empty
// name shows as ''.
std::string quote_name(std::string_view name);

// For listings (tg-graph print, DOT labels): the name bare when it is plain
// (letters, digits and _ . : / @ + - only, and not empty), else quoted and escaped
// like quote_name(), but whole: a listing shows every name in full.
std::string listed(std::string_view name);

// For a whole message about to be printed (several lines, text from libraries or
// paths): every line break kept, everything else escaped as above, and cut once about
// max_bytes are printed (at most 3 bytes past it), with
// "... (N more bytes left out)".
std::string printable_message(std::string_view text, size_t max_bytes = kMaxMessageBytes);

// For a message that is one line by construction (a command-line parser's complaint,
// an importer's refusal, a note) but may quote a user's or a model's text raw: as
// printable_message, with line breaks escaped too, so that nothing inside it can
// start a line of its own; the cut's note stays on the same line.
std::string printable_line(std::string_view text, size_t max_bytes = kMaxMessageBytes);

}  // namespace tg
