// tg-graph import: an ONNX model -> a graph file (the IR, docs/graph-format.md)
// and a safetensors file with its initializers (graph/weights.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "experiments/harness/interrupt.h"
#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/quote.h"
#include "graph/weights.h"
#include "tools/tg-graph/commands.h"
#include "tools/tg-graph/onnx_import.h"
#include "tools/tg-graph/output.h"

namespace tg::tools {

namespace {

namespace th = tg::harness;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
// What a message lists of a model's names before it counts the rest.
constexpr size_t kMaxListedNames = 12;
// What import prints of the importer's notes before it counts the rest.
constexpr size_t kMaxNotes = 50;

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    const std::string name = s.substr(0, eq), number = eq == std::string::npos ? "" : s.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(number.c_str(), &end, 10);
    // strtoll takes a sign, spaces and an overflow (as LLONG_MAX): digits only here.
    if (name.empty() || number.empty() || number.find_first_not_of("0123456789") != std::string::npos ||
        errno == ERANGE || *end != '\0' || v < 1)
      graph_error("--dim {}: give NAME=N with N a whole number >= 1, e.g. --dim batch=32", quote_name(s));
    if (const auto it = out.find(name); it != out.end())
      graph_error("--dim {} is given twice ({} and {}); give each dim once", quote_name(name), it->second, v);
    out[name] = v;
  }
  return out;
}

// A --dim the importer would never read is a typo or a different model: said, not ignored.
void check_dims_used(const std::map<std::string, int64_t>& dims, const onnx::Model& model, const std::string& path) {
  std::set<std::string> symbolic;
  for (const onnx::ValueDecl& d : model.inputs)
    for (const onnx::Dim& x : d.dims)
      if (x.value < 1 && !x.param.empty()) symbolic.insert(x.param);
  for (const auto& [name, value] : dims) {
    if (symbolic.count(name)) continue;
    std::string known;
    size_t listed_names = 0;
    for (const std::string& k : symbolic)
      if (listed_names++ < kMaxListedNames) known += (known.empty() ? "" : ", ") + quote_name(k);
    if (symbolic.size() > kMaxListedNames) known += fmt::format(" and {} more", symbolic.size() - kMaxListedNames);
    graph_error("--dim {}: {} has no input dim of that name; {}", quote_name(name), th::shown_path(path),
                symbolic.empty() ? std::string("its inputs have no symbolic dims, so leave out --dim")
                                 : "its inputs' symbolic dims are " + known);
  }
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

// Every path import writes, checked before the model is read (and against its external
// data once it is read): a refused -o must not leave a weights file behind, nor a long
// import end in a path that cannot be written.
struct Outputs {
  std::string graph, weights;  // the paths to write (a link's target)
};
Outputs checked_outputs(const ImportArgs& a, const std::string& weights_path) {
  Outputs o;
  auto check = [&a](const char* flag, const std::string& path, std::string& write) {
    if (std::string why = th::output_path_problem(flag, path, &write); !why.empty()) {
      if (&path != &a.out && a.weights.empty()) why += " (the weights go next to -o unless --weights names their file)";
      graph_error("{}", why);
    }
    if (const std::string why = th::output_overwrites_input(flag, write, "the model", a.model); !why.empty())
      graph_error("{}", why);
  };
  check("-o", a.out, o.graph);
  check("--weights", weights_path, o.weights);
  if (const std::string why = th::output_paths_clash("-o", o.graph, "--weights", o.weights); !why.empty())
    graph_error("{}", why);
  return o;
}

int import_checked(const ImportArgs& a) {
  // Flags first: nothing is read or written for a command line that is wrong.
  onnx::ImportOptions opt;
  opt.dims = parse_dims(a.dims);
  opt.loss = a.loss == "mse" ? onnx::ImportOptions::Loss::mse
             : a.loss == "cross_entropy" ? onnx::ImportOptions::Loss::cross_entropy
                                         : onnx::ImportOptions::Loss::none;
  opt.max_fold_bytes = a.max_fold_mib << 20;
  std::string weights_path = a.weights;
  if (weights_path.empty()) {
    std::filesystem::path p(a.out);
    weights_path = (p.extension() == ".json" ? p.replace_extension(".safetensors") : p += ".safetensors").string();
  }
  const Outputs out = checked_outputs(a, weights_path);
  graph_tool::require_stdout_open();

  const onnx::Model model = onnx::read_model_file(a.model);
  // The model's external data are inputs too; which files they are is known once it is read.
  for (const std::string& data : model.external_files)
    for (const auto& [flag, write] : {std::pair<const char*, const std::string&>{"-o", out.graph},
                                      std::pair<const char*, const std::string&>{"--weights", out.weights}})
      if (const std::string why = th::output_overwrites_input(flag, write, "the model's external data", data);
          !why.empty())
        graph_error("{}", why);
  check_dims_used(opt.dims, model, a.model);
  th::throw_if_interrupted();
  onnx::Imported im = onnx::import_model(model, opt, th::shown_path(a.model));
  // import_model has refused names that are not UTF-8 (check_model) and validated what it
  // returns by loading its graph file back (check_loads_back).
  th::throw_if_interrupted();
  const Weights w = weights_of(im.graph);
  Graph plain = im.graph;
  strip_weights(plain);
  const std::string json = graph_tool::with_description(
      save_graph_json(plain),
      fmt::format("Imported from {} ({}, opset {}) by tg-graph import; the weights are in {}",
                  std::filesystem::path(a.model).filename().string(), model.producer, model.opset,
                  std::filesystem::path(weights_path).filename().string()));
  double bytes = 0;
  for (const auto& [name, t] : w) bytes += static_cast<double>(t.data.size()) * 4.0;
  try {
    // Both as one, the weights renamed first: a graph file never names weights that
    // were not written, and a failure or a signal before the renames leaves neither.
    th::write_files_atomic({{out.weights, weights_to_safetensors(w)}, {out.graph, json}});
  } catch (const th::Interrupted&) {
    throw;
  } catch (const std::runtime_error& e) {
    th::say_line("tg-graph", std::string("error: ") + e.what() + "; check the path");
    return kExitUsage;
  }
  std::string text = fmt::format("{}: {} ONNX nodes -> {} IR nodes, {} parameters ({:.2f} MiB), {} inputs, {} outputs\n",
                                 th::shown_path(a.model), model.nodes.size(), im.graph.nodes.size(), w.size(),
                                 mib(bytes), im.graph.values_with_role(Role::input).size(), im.graph.outputs.size());
  // Notes quote the model's names: one line each, escaped and capped.
  for (size_t i = 0; i < im.notes.size() && i < kMaxNotes; ++i)
    text += "  note: " + printable_line(im.notes[i], 1024) + "\n";
  if (im.notes.size() > kMaxNotes) text += fmt::format("  ... and {} more notes\n", im.notes.size() - kMaxNotes);
  const std::string g = th::shown_path(a.out), ws = th::shown_path(weights_path);
  text += fmt::format("wrote {} and {}\nnext: tg-graph check {}\n      tg-graph bench {} --weights {} --device auto\n",
                      g, ws, g, g, ws);
  graph_tool::write_stdout(text);
  return 0;
}

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
  sub->add_option("--max-fold-mib", a.max_fold_mib,
                  "The most memory the constants the import computes may take together (weights it transposes, "
                  "scales or joins), in MiB")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  return sub;
}

int run_import(const ImportArgs& a) {
  // Ctrl-C, or a kill of a background import (started with SIGINT ignored), stops it
  // like an experiment: the temporary files go, nothing is written, exit 128 + signal.
  th::install_signal_handlers("tg-graph", "nothing was written");
  try {
    return import_checked(a);
  } catch (const th::Interrupted& e) {
    th::say("tg-graph", e.what());
    return th::interrupt_exit_status();
  } catch (const GraphError& e) {
    // The importer's and the reader's refusals are one line each and quote the model's
    // names as they are: escaped whole, a newline in a name cannot start a line.
    th::say_line("tg-graph", std::string("error: ") + e.what());
    return kExitUsage;
  }
}

}  // namespace tg::tools
