#include "graph/text_dump.h"

#include <fmt/format.h>

#include "graph/json_io.h"
#include "graph/quote.h"

namespace tg {

namespace {

bool in_range(const Graph& g, int id) { return id >= 0 && id < static_cast<int>(g.values.size()); }

std::string value_ref(const Graph& g, int id) {
  if (!in_range(g, id)) return fmt::format("?{}", id);
  const ValueInfo& v = g.values[static_cast<size_t>(id)];
  return listed(v.name) + v.shape.str();
}


std::string init_str(const ParamInit& p) {
  if (p.kind == ParamInit::Kind::data) return fmt::format("data({} floats)", p.data ? p.data->size() : 0);
  if (p.kind == ParamInit::Kind::seed) return "seed";
  if (p.kind == ParamInit::Kind::running_stats) return "running_stats";
  return fmt::format("{}({})", p.kind == ParamInit::Kind::uniform ? "uniform" : "constant", p.a);
}

}  // namespace

std::string text_dump(const Graph& g) {
  std::string out = fmt::format("# {} values ({} inputs, {} parameters, {} optimizer_state), {} nodes, {} outputs\n",
                                g.values.size(), g.values_with_role(Role::input).size(),
                                g.values_with_role(Role::parameter).size(),
                                g.values_with_role(Role::optimizer_state).size(), g.nodes.size(), g.outputs.size());
  for (const ValueInfo& v : g.values) {
    if (v.producer >= 0) continue;
    if (v.role == Role::input) out += fmt::format("input {}{}{}\n", listed(v.name), v.shape.str(), dtype_suffix(v.dtype));
    else
      out += fmt::format("{} {}{}{} init {}\n", role_name(v.role), listed(v.name), v.shape.str(), dtype_suffix(v.dtype),
                         init_str(v.init));
  }
  for (const Node& n : g.nodes) {
    const bool known_op = static_cast<int>(n.op) < kNumOps;
    std::string args;
    for (int in : n.inputs) args += (args.empty() ? "" : ", ") + value_ref(g, in);
    const std::string attrs = known_op ? node_attrs_json(g, n) : "";
    const std::string call = fmt::format("{}({}){}", known_op ? op_name(n.op) : "?op", args, attrs.empty() ? "" : " " + attrs);
    if (n.outputs.empty()) {
      out += fmt::format("{}: {} (updates in place)\n", listed(n.name), call);
      continue;
    }
    const int o = n.outputs[0];
    if (!in_range(g, o)) {
      out += fmt::format("{} = {} -> ?{}\n", listed(n.name), call, o);
      continue;
    }
    const ValueInfo& v = g.values[static_cast<size_t>(o)];
    const std::string lhs = v.name == n.name ? listed(n.name) : fmt::format("{} (node {})", listed(v.name), listed(n.name));
    std::string second;
    if (n.outputs.size() > 1 && in_range(g, n.outputs[1])) {
      const ValueInfo& w = g.values[static_cast<size_t>(n.outputs[1])];
      second = fmt::format(", {} {}{} {}", listed(w.name), w.shape.str(), dtype_suffix(w.dtype), role_name(w.role));
    }
    out += fmt::format("{} = {} -> {}{} {}{}\n", lhs, call, v.shape.str(), dtype_suffix(v.dtype), role_name(v.role), second);
  }
  std::string outs;
  for (int o : g.outputs) outs += (outs.empty() ? "" : ", ") + (in_range(g, o) ? listed(g.values[static_cast<size_t>(o)].name) : fmt::format("?{}", o));
  out += "outputs: " + (outs.empty() ? std::string("(none)") : outs) + "\n";
  return out;
}

}  // namespace tg
