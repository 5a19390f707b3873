#pragma once
// Field-by-field Graph comparison for round-trip tests: returns "" when equal,
// else the first difference, so a failing CHECK says what differs.
#include <fmt/format.h>

#include <string>

#include "graph/graph.h"

namespace tg::testing {

inline std::string graph_difference(const Graph& a, const Graph& b) {
  if (a.values.size() != b.values.size()) return fmt::format("value count {} != {}", a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const ValueInfo& x = a.values[i];
    const ValueInfo& y = b.values[i];
    if (x.name != y.name) return fmt::format("value #{} name '{}' != '{}'", i, x.name, y.name);
    if (x.shape != y.shape) return fmt::format("value '{}' shape {} != {}", x.name, x.shape.str(), y.shape.str());
    if (x.dtype != y.dtype) return fmt::format("value '{}' dtype differs", x.name);
    if (x.role != y.role) return fmt::format("value '{}' role {} != {}", x.name, role_name(x.role), role_name(y.role));
    if (x.producer != y.producer) return fmt::format("value '{}' producer {} != {}", x.name, x.producer, y.producer);
    const bool leaf = x.role == Role::parameter || x.role == Role::optimizer_state;
    if (leaf && !(x.init == y.init)) return fmt::format("value '{}' init differs ({} vs {})", x.name, x.init.a, y.init.a);
  }
  if (a.nodes.size() != b.nodes.size()) return fmt::format("node count {} != {}", a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    if (x.name != y.name) return fmt::format("node #{} name '{}' != '{}'", i, x.name, y.name);
    if (x.op != y.op) return fmt::format("node '{}' op {} != {}", x.name, op_name(x.op), op_name(y.op));
    if (x.inputs != y.inputs) return fmt::format("node '{}' inputs differ", x.name);
    if (x.outputs != y.outputs) return fmt::format("node '{}' outputs differ", x.name);
    if (!(x.attrs == y.attrs)) return fmt::format("node '{}' attrs differ", x.name);
  }
  if (a.outputs != b.outputs) return "graph outputs differ";
  return "";
}

}  // namespace tg::testing
