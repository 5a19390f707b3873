#pragma once
// What every fuzz target here shares: a bug aborts (so libFuzzer keeps the input)
// after saying which invariant broke.
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace tg::fuzz {

[[noreturn]] inline void bug(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: BUG: %s\n", target, what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string type_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t.name();
}

}  // namespace tg::fuzz
