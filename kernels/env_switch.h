#pragma once
// A process-wide on/off switch of the kernels or passes (the small-GEMM kernel, GEMM
// tuning, PDL, ...): read from an environment variable at first use ("1" on, "0" off,
// unset or empty: the default), settable from code later (tests, tool flags). Any other
// value is refused: a typo must not silently mean the default. Reads and writes are
// relaxed atomics: a switch changes which kernels later calls choose, nothing more.
#include <atomic>
#include <string>

namespace tg::kernels {

// The variables of every EnvSwitch, so that a binary can check them all at start-up
// (check_env_switches) instead of failing when a switch is first read mid-run.
inline constexpr const char* kEnvSwitchVariables[] = {
    "TG_GEMM_UPDATE", "TG_LANES_EARLY",    "TG_LANES_GEMM_UPDATES", "TG_SKINNY_GEMM",
    "TG_GEMM_UPDATE_STREAMK", "TG_GEMM_AUTOTUNE", "TG_PDL", "TG_SMALL_GEMM"};

// The value of `variable` as a switch: 1 on, 0 off, -1 unset or empty. Throws
// std::invalid_argument naming the variable and the value for anything else.
int read_env_switch(const char* variable);

// "" when every variable of kEnvSwitchVariables is unset, empty, 0 or 1, else the first
// problem, worded for the user.
std::string env_switch_problem();

class EnvSwitch {
 public:
  constexpr EnvSwitch(const char* variable, bool default_on) : variable_(variable), default_on_(default_on) {}
  bool on() {
    int mode = mode_.load(std::memory_order_relaxed);
    if (mode < 0) {
      const int given = read_env_switch(variable_);
      mode = given >= 0 ? given : (default_on_ ? 1 : 0);
      mode_.store(mode, std::memory_order_relaxed);
    }
    return mode != 0;
  }
  void set(bool on) { mode_.store(on ? 1 : 0, std::memory_order_relaxed); }

 private:
  const char* variable_;
  bool default_on_;
  std::atomic<int> mode_{-1};  // -1: the variable not read yet
};

}  // namespace tg::kernels
