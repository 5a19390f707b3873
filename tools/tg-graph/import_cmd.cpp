// tg-graph import: an ONNX model -> a graph file (the IR, docs/graph-format.md)
// and a safetensors file with its initializers (graph/weights.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "experiments/harness/report_io.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/validate.h"
#include "graph/weights.h"
#include "tools/tg-graph/commands.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::tools {

namespace {

constexpr int kExitUsage = 2;

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    char* end = nullptr;
    const long long v = eq == std::string::npos ? 0 : std::strtoll(s.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || v < 1 || eq + 1 == s.size())
      graph_error("--dim {}: give NAME=N with N >= 1, e.g. --dim batch=32", s);
    out[s.substr(0, eq)] = v;
  }
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  const auto ca = std::filesystem::weakly_canonical(a, ec1), cb = std::filesystem::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && ca == cb;
}

// The saver writes no description; the file should say where it came from. Escaped:
// the model's file name and producer may be any bytes, and JSON holds UTF-8 only.
std::string with_description(std::string json, const std::string& description) {
  const std::string key = "\"version\": 1";
  const size_t at = json.find(key);
  if (at == std::string::npos) return json;
  json.insert(at + key.size(), ",\n  \"description\": " + nlohmann::json(escape_text(description)).dump());
  return json;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

CLI::App* add_import_command(CLI::App& app, ImportArgs& a) {
  CLI::App* sub = app.add_subcommand(
      "import", "Import an ONNX model as a graph file (-o FILE.json) and its weights (FILE.safetensors)");
  sub->add_option("MODEL", a.model, "ONNX model (.onnx), e.g. from torch.onnx.export")->required();
  sub->add_option("-o,--output", a.out, "Graph file to write (.json)")->required();
  sub->add_option("--weights", a.weights, "Weights file to write (default: the output's name with .safetensors)");
  sub->add_option("--dim", a.dims, "NAME=N: the value of a symbolic input dim (repeat for each)");
  sub->add_option("--loss", a.loss,
                  "Append a loss so that the graph trains: mse (new input 'target'), cross_entropy (new input "
                  "'labels', [n] class indices), or none")
      ->check(CLI::IsMember({"none", "mse", "cross_entropy"}))
      ->capture_default_str();
  return sub;
}

int run_import(const ImportArgs& a) {
  onnx::ImportOptions opt;
  opt.dims = parse_dims(a.dims);
  opt.loss = a.loss == "mse" ? onnx::ImportOptions::Loss::mse
             : a.loss == "cross_entropy" ? onnx::ImportOptions::Loss::cross_entropy
                                         : onnx::ImportOptions::Loss::none;
  std::string weights_path = a.weights;
  if (weights_path.empty()) {
    std::filesystem::path p(a.out);
    weights_path = (p.extension() == ".json" ? p.replace_extension(".safetensors") : p += ".safetensors").string();
  }
  for (const std::string& o : {a.out, weights_path})
    if (same_file(o, a.model)) graph_error("{}: is the model being read; write the output elsewhere", o);
  if (same_file(a.out, weights_path)) graph_error("-o and --weights name the same file {}; give two names", a.out);

  const onnx::Model model = onnx::read_model_file(a.model);
  onnx::Imported im = onnx::import_model(model, opt, a.model);
  try {
    validate(im.graph);
  } catch (const GraphError& e) {
    fmt::print(stderr, "tg-graph: internal error: the imported graph does not validate (an import bug): {}\n",
               e.what());
    return 1;
  }
  const Weights w = weights_of(im.graph);
  Graph plain = im.graph;
  strip_weights(plain);
  const std::string json = with_description(
      save_graph_json(plain),
      fmt::format("Imported from {} ({}, opset {}) by tg-graph import; the weights are in {}",
                  std::filesystem::path(a.model).filename().string(), model.producer, model.opset,
                  std::filesystem::path(weights_path).filename().string()));
  double bytes = 0;
  for (const auto& [name, t] : w) bytes += static_cast<double>(t.data.size()) * 4.0;
  try {
    // The weights first: a graph file never names weights that were not written.
    harness::write_file_atomic(weights_path, weights_to_safetensors(w));
    harness::write_file_atomic(a.out, json);
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "tg-graph: error: {}; check the path\n", e.what());
    return kExitUsage;
  }
  fmt::print("{}: {} ONNX nodes -> {} IR nodes, {} parameters ({:.2f} MiB), {} inputs, {} outputs\n", a.model,
             model.nodes.size(), im.graph.nodes.size(), w.size(), mib(bytes),
             im.graph.values_with_role(Role::input).size(), im.graph.outputs.size());
  for (const std::string& n : im.notes) fmt::print("  note: {}\n", n);
  fmt::print("wrote {} and {}\nnext: tg-graph check {}\n      tg-graph bench {} --weights {} --device auto\n", a.out,
             weights_path, a.out, a.out, weights_path);
  return 0;
}

}  // namespace tg::tools
