#pragma once
// Stopping on SIGINT, SIGTERM and SIGHUP, and never by SIGPIPE.
//
// install_signal_handlers() makes the first of those signals set a flag that the
// measurement loops poll (throw_if_interrupted throws Interrupted), so the run unwinds
// through its destructors, writes no report and exits 128 + the signal (130 for
// Ctrl-C, 143 for SIGTERM). Two things bound how long that may take:
//   - a watchdog: if the process is still running kForceExitAfterS (0.75 s) after the first
//     signal (a body stuck in one long computation that does not poll), the temporary
//     files registered below are removed and the process _exits with the same status
//     and message;
//   - a second signal: the registered temporary files are removed and the process is
//     killed by that signal at once.
// Neither fires while the reports are being renamed into place (begin_commit ..
// end_commit, microseconds): a signal then comes too late to undo a finished run.
//
// SIGPIPE is ignored, so a write to a closed pipe fails with EPIPE instead of killing
// the process: `tg-x --json r.json | head -1` stops printing and still writes r.json
// (output.h).
#include <stdexcept>
#include <string>

namespace tg::harness {

inline constexpr double kForceExitAfterS = 0.75;

// Idempotent; `tool` prefixes the messages the handlers write themselves, and
// `nothing_written` ends them and Interrupted's ("no report was written"; a tool
// that writes other files says what it did not write).
void install_signal_handlers(const std::string& tool, const std::string& nothing_written = "no report was written");

bool interrupted();
int interrupt_signal();                // the first signal received (SIGINT, ...), 0 for none
int interrupt_exit_status();           // 128 + interrupt_signal(); 130 when set for testing
std::string interrupt_signal_name();   // "SIGINT", "SIGTERM", "SIGHUP"
void throw_if_interrupted();           // throws Interrupted when the flag is set
void set_interrupted_for_testing(bool value);  // as if SIGINT had arrived (no watchdog)

// Thrown by the loops once a signal arrived; the experiment unwinds, writes no report
// and exits interrupt_exit_status().
struct Interrupted : std::runtime_error {
  Interrupted();
};

// Temporary files the handlers remove before the process dies by a signal or the
// watchdog. Returns a slot (-1 when the path does not fit a slot or all are taken: the
// file is then not cleaned up by a hard stop, only by the normal error paths).
int register_temp_file(const std::string& path);
void unregister_temp_file(int slot);  // -1 is ignored

// The window in which the reports are renamed into place.
void begin_commit();
void end_commit();

}  // namespace tg::harness
