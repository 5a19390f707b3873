#pragma once
// SIGINT handling. install_sigint_handler() makes the first Ctrl-C set a flag that
// the measurement loops check (they throw Interrupted); a second Ctrl-C kills the
// process at once (the default action is restored by the first).
namespace tg::harness {
void install_sigint_handler();
bool interrupted();
void throw_if_interrupted();  // throws Interrupted when the flag is set
void set_interrupted_for_testing(bool value);
}  // namespace tg::harness
