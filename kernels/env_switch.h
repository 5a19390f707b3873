#pragma once
// A process-wide on/off switch of the kernels (the small-GEMM kernel, GEMM tuning, PDL):
// read from an environment variable at first use ("1" on, "0" off, anything else or
// unset: the default), settable from code later (tests, tool flags). Reads and writes are
// relaxed atomics: a switch changes which kernels later calls choose, nothing more.
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tg::kernels {

class EnvSwitch {
 public:
  constexpr EnvSwitch(const char* variable, bool default_on) : variable_(variable), default_on_(default_on) {}
  bool on() {
    int mode = mode_.load(std::memory_order_relaxed);
    if (mode < 0) {
      const char* v = std::getenv(variable_);
      const bool given = v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0);
      mode = given ? (v[0] == '1' ? 1 : 0) : (default_on_ ? 1 : 0);
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
