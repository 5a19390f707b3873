#include "kernels/env_switch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "graph/quote.h"

namespace tg::kernels {

int read_env_switch(const char* variable) {
  const char* v = std::getenv(variable);
  if (!v || !*v) return -1;
  if (std::strcmp(v, "0") == 0) return 0;
  if (std::strcmp(v, "1") == 0) return 1;
  throw std::invalid_argument(fmt::format("{}={}: expected 1 (on) or 0 (off); unset it for the default", variable,
                                          quote_name(v)));
}

std::string env_switch_problem() {
  for (const char* variable : kEnvSwitchVariables) {
    try {
      read_env_switch(variable);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  }
  return "";
}

}  // namespace tg::kernels
