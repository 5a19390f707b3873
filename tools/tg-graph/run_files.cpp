#include "tools/tg-graph/run_files.h"

#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/quote.h"
#include "graph/weights.h"

namespace tg::graph_tool {

void apply_weights(Graph& g, const std::string& path) {
  attach_weights(g, load_weights_file(path), printable_line(path, kMaxShownPathBytes));
}

std::vector<std::string> apply_inputs(const Graph& g, std::vector<std::vector<float>>& values,
                                      const std::string& path) {
  const Weights file = load_weights_file(path);
  const std::string shown = printable_line(path, kMaxShownPathBytes);
  std::vector<std::string> missing;
  for (int id : g.values_with_role(Role::input)) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    const auto it = file.find(v.name);
    if (it == file.end()) {
      missing.push_back(listed(v.name));
      continue;
    }
    if (it->second.shape != v.shape)
      graph_error("--inputs {}: tensor {} is {}, but the graph's input {} is {}; give it the input's shape", shown,
                  listed(v.name), it->second.shape.str(), listed(v.name), v.shape.str());
    values[static_cast<size_t>(id)] = it->second.data;
  }
  if (!missing.empty()) {
    std::string names;
    for (const std::string& n : missing) names += (names.empty() ? "" : ", ") + n;
    graph_error("--inputs {}: no tensor for the input(s) {}; the file must hold every input of the graph, each "
                "under its name", shown, names);
  }
  std::vector<std::string> unread;
  for (const auto& [name, t] : file) {
    const int id = g.find_value(name);
    if (id < 0 || g.values[static_cast<size_t>(id)].role != Role::input) unread.push_back(listed(name));
  }
  return unread;
}

std::string outputs_safetensors(const Graph& g, const std::vector<std::vector<float>>& values) {
  Weights out;
  for (int id : g.outputs) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    out[v.name] = WeightTensor{v.shape, values[static_cast<size_t>(id)]};
  }
  return weights_to_safetensors(out);
}

}  // namespace tg::graph_tool
