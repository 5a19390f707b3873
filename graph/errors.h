#pragma once
// Every error about a graph (bad shapes, bad files, bad attributes) is a
// GraphError whose message names the node or the JSON path and says how to fix it.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace tg {

class GraphError : public std::runtime_error {
 public:
  explicit GraphError(const std::string& what) : std::runtime_error(what) {}
};

template <typename... Args>
[[noreturn]] void graph_error(fmt::format_string<Args...> f, Args&&... args) {
  throw GraphError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tg
