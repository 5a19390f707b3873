#pragma once
// Where a binary's output goes: stdout, checked on every write, and the report files,
// checked before the run.
#include <stdexcept>
#include <string>

namespace tg::harness {

// stdout could not be written for another reason than a closed pipe (a full disk,
// /dev/full, an I/O error): the message says so, with errno's text.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `text` to stdout and flushes it (print_stdout("") just flushes). A closed
// pipe (EPIPE, e.g. `| head -1`) turns stdout off for the rest of the process: this
// and every later call return false and print nothing. Any other failure throws
// OutputError the first time, and later calls return false. SIGPIPE must be ignored
// for EPIPE to be seen (install_signal_handlers, or ignore_sigpipe below).
bool print_stdout(const std::string& text);
bool stdout_closed();          // a closed pipe was seen
std::string stdout_failure();  // the first OutputError's message, "" if none
// For the tools that install no other handler (tg-report).
void ignore_sigpipe();

// A report path checked before the run: "" when `path` can be written the way
// write_file_atomic writes (a new `path.tmp` in the same folder, renamed over `path`),
// else why not, naming `flag` and `path`. Refused: an empty name; anything that exists
// and is not a regular file (a folder, /dev/null or another device, a FIFO, a socket,
// a symbolic link to one of those, a dangling link); a parent that is missing or not
// a folder; a folder this process cannot create files in (permissions, a read-only or
// pseudo file system such as /proc or /sys, a name too long). A symbolic link to a
// regular file is followed: `*write_path` receives the path to write (the link's
// target, so the link stays), else `path` itself.
std::string output_path_problem(const std::string& flag, const std::string& path, std::string* write_path);

// "" unless two checked write paths are the same file, or one is the other's
// temporary file: then the complaint, naming both flags.
std::string output_paths_clash(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                               const std::string& path_b);

// "" unless writing the checked path `out_path` (or its temporary file, out_path.tmp)
// would replace `in_path`, a file the run reads: the same file once links are resolved
// (a hard link too). Then the complaint, naming both. An input that does not exist
// clashes with nothing (reading it fails on its own).
std::string output_overwrites_input(const std::string& out_flag, const std::string& out_path,
                                    const std::string& in_what, const std::string& in_path);

// A path as messages show it: escaped (graph/quote.h) and cut after 4096 bytes, the
// longest path the system takes, so a path cannot forge a line or flood the terminal.
std::string shown_path(const std::string& path);

// Every message a binary prints on stderr, as "<tool>: <text>", through graph/quote.h
// and capped at kMaxMessageBytes. say() keeps the text's line breaks (a validator's
// list of problems); say_line() escapes them, for a message that is one line by
// construction but quotes what a user typed or a file held (a parser's complaint).
void say(const std::string& tool, const std::string& text);
void say_line(const std::string& tool, const std::string& text);

// The kind of file at `path` as a phrase ("a folder", "a character device", ...), or
// "" for a regular file or nothing there. Without follow_links a link is "a symbolic
// link"; with it, the kind of what it leads to.
std::string non_regular_kind(const std::string& path, bool follow_links = false);

}  // namespace tg::harness
