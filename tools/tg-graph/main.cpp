// tg-graph: the command-line front of the graph files. Exit 0 ok, 1 internal
// failure, 2 bad usage or a bad graph file (the message says which and why).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "graph/dot.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "kernels/interpreter.h"
#include "tools/tg-graph/commands.h"

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitUsage = 2;

// A bad file is the user's to fix, not a crash: every GraphError exits 2.
tg::Graph load_checked(const std::string& path) {
  tg::Graph g = tg::load_graph_file(path);
  try {
    tg::validate(g);
  } catch (const tg::GraphError& e) {
    tg::graph_error("{}: {}", path, e.what());
  }
  return g;
}

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0)); }

int cmd_check(const std::string& path) {
  const tg::Graph g = load_checked(path);
  double param_bytes = 0, other_bytes = 0;
  for (const tg::ValueInfo& v : g.values)
    (v.role == tg::Role::parameter || v.role == tg::Role::optimizer_state ? param_bytes : other_bytes) +=
        static_cast<double>(v.bytes());
  fmt::print("{}: ok: {} values ({} inputs, {} parameters, {} optimizer_state), {} nodes, {} outputs; "
             "parameters and state {}, other values {}\n",
             path, g.values.size(), g.values_with_role(tg::Role::input).size(),
             g.values_with_role(tg::Role::parameter).size(), g.values_with_role(tg::Role::optimizer_state).size(),
             g.nodes.size(), g.outputs.size(), mib(param_bytes), mib(other_bytes));
  return 0;
}

int cmd_run(const std::string& path, uint64_t seed, double max_mib) {
  const tg::Graph g = load_checked(path);
  double bytes = 0;
  for (const tg::ValueInfo& v : g.values) bytes += static_cast<double>(v.bytes());
  if (bytes > max_mib * 1024.0 * 1024.0)
    tg::graph_error("{}: running it needs {} of host memory (one buffer per value), more than --max-mib {}; "
                    "raise --max-mib or shrink the shapes", path, mib(bytes), max_mib);
  std::vector<std::vector<float>> values = tg::make_values(g, seed);
  try {
    tg::interpret(g, values);
  } catch (const tg::GraphError& e) {
    // The graph passed validation, so a refusal here is the interpreter's bug.
    fmt::print(stderr, "tg-graph: internal error: the interpreter rejected a validated graph: {}\n", e.what());
    return kExitInternal;
  }
  fmt::print("{}: ran {} nodes on the CPU, seed {}\n", path, g.nodes.size(), seed);
  auto show = [&](int id) {
    const tg::ValueInfo& v = g.values[static_cast<size_t>(id)];
    const auto& data = values[static_cast<size_t>(id)];
    fmt::print("  {:<24} {:<8} {:<16} sum {:<16.8g} checksum {:016x}\n", v.name, tg::role_name(v.role),
               v.shape.str(), tg::sum(data), tg::checksum(data));
  };
  if (g.outputs.empty()) fmt::print("  (the graph has no outputs)\n");
  for (int o : g.outputs) show(o);
  const std::vector<int> params = g.values_with_role(tg::Role::parameter);
  bool updated = false;
  for (const tg::Node& n : g.nodes) updated = updated || tg::op_is_update(n.op);
  if (updated) {
    fmt::print("parameters after the update:\n");
    for (int p : params) show(p);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // bench runs under the experiments' harness, which parses its own flags (--device, --json, ...).
  if (argc > 1 && std::string(argv[1]) == "bench") return tg::tools::bench_main(argc, argv);
  CLI::App app{"tg-graph: check, print, draw and run twograph graph files (JSON; see docs/graph-format.md)."};
  app.footer(
      "Examples:\n"
      "  tg-graph check tests/graphs/mlp.json\n"
      "  tg-graph print tests/graphs/mlp.json\n"
      "  tg-graph dot tests/graphs/mlp.json | dot -Tsvg > mlp.svg\n"
      "  tg-graph run tests/graphs/mlp.json --seed 7\n"
      "Exit status: 0 ok, 1 internal failure, 2 bad usage or bad graph file.");
  app.require_subcommand(1);
  std::string file;
  uint64_t seed = 1;
  double max_mib = 4096;
  auto add_file = [&file](CLI::App* sub) { sub->add_option("FILE", file, "Graph file (.json)")->required(); };
  CLI::App* check = app.add_subcommand("check", "Load and validate FILE; print a summary");
  CLI::App* dot = app.add_subcommand("dot", "Print FILE as Graphviz DOT on stdout");
  CLI::App* print = app.add_subcommand("print", "Print FILE as a readable listing");
  CLI::App* run = app.add_subcommand("run", "Run FILE on the CPU with random inputs; print output shapes and checksums");
  for (CLI::App* sub : {check, dot, print, run}) add_file(sub);
  app.add_subcommand("bench", "Run FILE with the static and the dynamic executor, report as tg-train does "
                              "(see 'tg-graph bench --help')");
  tg::tools::ImportArgs import_args;
  CLI::App* import = tg::tools::add_import_command(app, import_args);
  // Own checks: CLI11 wraps "-1" into a uint64 seed, lets NaN through ranges, and
  // prints DBL_MAX in full in PositiveNumber's message.
  const CLI::Validator digits([](std::string& v) {
    return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
               ? std::string()
               : "must be a non-negative integer, got '" + v + "'";
  }, "UINT");
  const CLI::Validator positive([](std::string& v) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    return !v.empty() && *end == '\0' && d > 0 ? std::string() : "must be a number of MiB > 0, got '" + v + "'";
  }, "MIB");
  run->add_option("--seed", seed, "Seed for inputs and initial parameters")->capture_default_str()->check(digits);
  run->add_option("--max-mib", max_mib, "Refuse graphs whose values need more host memory than this")
      ->capture_default_str()
      ->check(positive);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "tg-graph: bad usage: {}. Run 'tg-graph --help' for the subcommands and an example.\n",
               e.what());
    return kExitUsage;
  }
  try {
    if (check->parsed()) return cmd_check(file);
    if (run->parsed()) return cmd_run(file, seed, max_mib);
    if (import->parsed()) return tg::tools::run_import(import_args);
    const tg::Graph g = load_checked(file);
    if (dot->parsed()) fmt::print("{}", tg::graph_to_dot(g, file));
    else fmt::print("{}", tg::text_dump(g));
    return 0;
  } catch (const tg::GraphError& e) {
    fmt::print(stderr, "tg-graph: error: {}\n", e.what());
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "tg-graph: internal error: out of memory\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tg-graph: internal error: {}\n", e.what());
    return kExitInternal;
  }
}
