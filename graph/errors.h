#pragma once
// Every error about a graph (bad shapes, bad files, bad attributes) is a
// GraphError whose message names the node or the JSON path and says how to fix it.
// Data that a valid graph's op cannot use is an InputError.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "graph/op.h"
#include "graph/quote.h"

namespace tg {

class GraphError : public std::runtime_error {
 public:
  explicit GraphError(const std::string& what) : std::runtime_error(what) {}
};

template <typename... Args>
[[noreturn]] void graph_error(fmt::format_string<Args...> f, Args&&... args) {
  throw GraphError(fmt::format(f, std::forward<Args>(args)...));
}

// Values an op cannot use although the graph passed validation: cross_entropy
// labels that are not class indices, a padded_mse_loss count that is not a whole
// number in [1, n], sizes past a library's limit (a BLAS 32-bit int). It is the
// caller's input, not a bug: the kernels throw it without a node, the executors and
// the interpreter rethrow it with the node in front (rethrow_at_node), and the
// binaries exit 2. An std::invalid_argument, so code that caught the kernels'
// argument errors before still catches it.
class InputError : public std::invalid_argument {
 public:
  explicit InputError(const std::string& what) : std::invalid_argument(what) {}
};

template <typename... Args>
[[noreturn]] void input_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

// "cross_entropy 'loss': <e.what()>".
[[noreturn]] inline void rethrow_at_node(const InputError& e, OpKind op, const std::string& node) {
  throw InputError(fmt::format("{} {}: {}", op_name(op), quote_name(node), e.what()));
}

}  // namespace tg
