#include "graph/dot.h"

#include <fmt/format.h>

#include "graph/json_io.h"
#include "graph/quote.h"

namespace tg {

namespace {

// Pastel fills so black labels stay readable; one per role.
const char* role_color(Role r) {
  switch (r) {
    case Role::input: return "#cfe2ff";
    case Role::parameter: return "#d1e7dd";
    case Role::gradient: return "#f8d7da";
    case Role::optimizer_state: return "#fff3cd";
    case Role::activation: return "#e2d9f3";
    case Role::temporary: return "#ffffff";
    case Role::output: return "#ffd8a8";
  }
  return "#ffffff";
}

// A DOT string's content: quotes and backslashes escaped, our own line breaks as \n.
// Names and the title reach it already escaped (listed, escape_text), so no control
// character gets into the file.
std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}

}  // namespace

std::string graph_to_dot(const Graph& g, const std::string& title) {
  const int nv = static_cast<int>(g.values.size());
  std::vector<bool> is_output(g.values.size(), false);
  for (int o : g.outputs)
    if (o >= 0 && o < nv) is_output[static_cast<size_t>(o)] = true;
  std::string out = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
                                "  edge [fontname=\"Helvetica\", fontsize=9];\n", esc(escape_text(title)));
  for (int id = 0; id < nv; ++id) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    if (v.producer >= 0) continue;
    out += fmt::format("  v{} [shape=ellipse, style=filled, fillcolor=\"{}\"{}, label=\"{}\\n{} {}{}\"];\n", id,
                       role_color(v.role), is_output[static_cast<size_t>(id)] ? ", peripheries=2" : "", esc(listed(v.name)),
                       role_name(v.role), v.shape.str(), dtype_suffix(v.dtype));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const char* op = static_cast<int>(n.op) < kNumOps ? op_name(n.op) : "?op";
    const std::string attrs = static_cast<int>(n.op) < kNumOps ? node_attrs_json(g, n) : "";
    std::string label = fmt::format("{} {}", op, listed(n.name));
    if (!attrs.empty()) label += "\n" + attrs;
    const char* color = "#e9ecef";  // update ops: no output value, grey
    bool output = false;
    if (!n.outputs.empty() && n.outputs[0] >= 0 && n.outputs[0] < nv) {
      const ValueInfo& v = g.values[static_cast<size_t>(n.outputs[0])];
      label += fmt::format("\n{}{} {}", v.shape.str(), dtype_suffix(v.dtype), role_name(v.role));
      if (n.outputs.size() > 1 && n.outputs[1] >= 0 && n.outputs[1] < nv) {
        const ValueInfo& w = g.values[static_cast<size_t>(n.outputs[1])];
        label += fmt::format("\n+ {} {}{} {}", listed(w.name), w.shape.str(), dtype_suffix(w.dtype), role_name(w.role));
      }
      color = role_color(v.role);
      output = is_output[static_cast<size_t>(n.outputs[0])];
    } else if (n.outputs.empty()) {
      label += "\n(updates in place)";
    }
    out += fmt::format("  n{} [shape=box, style=\"rounded,filled\", fillcolor=\"{}\"{}, label=\"{}\"];\n", i, color,
                       output ? ", peripheries=2" : "", esc(label));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int in = n.inputs[k];
      if (in < 0 || in >= nv) continue;
      const ValueInfo& v = g.values[static_cast<size_t>(in)];
      const std::string from = v.producer >= 0 ? fmt::format("n{}", v.producer) : fmt::format("v{}", in);
      // Update ops write their param (and velocity) in place: dashed edges.
      out += fmt::format("  {} -> n{} [label=\"{}\"{}];\n", from, i, k,
                         op_update_writes(n.op, static_cast<int>(k), static_cast<int>(n.inputs.size())) ? ", style=dashed" : "");
    }
  }
  return out + "}\n";
}

}  // namespace tg
