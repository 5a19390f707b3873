// tg-graph: the command-line front of the graph files. Exit 0 ok; 1 an internal
// failure or a result that could not be written to stdout; 2 bad usage, a bad graph
// file, or a valid graph that cannot run (data an op cannot use, too big for the host).
// The message on stderr says which and why.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "graph/dot.h"
#include "graph/errors.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/precision.h"
#include "graph/quote.h"
#include "graph/text_dump.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "kernels/interpreter.h"
#include "static/passes/pass.h"
#include "tools/tg-graph/commands.h"
#include "tools/tg-graph/flags.h"
#include "tools/tg-graph/output.h"
#include "tools/tg-graph/run_files.h"
#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"

namespace {

namespace gt = tg::graph_tool;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Every message goes out escaped and capped: it may quote a path, a library's text
// or (already escaped) names from a hostile file.
void say(const std::string& what) { std::fputs((tg::printable_message(what) + "\n").c_str(), stderr); }

// --help > /dev/full is a failure like any other output that cannot be written.
int print_help(const std::string& text) {
  try {
    gt::require_stdout_open();
    gt::write_stdout(text);
    return 0;
  } catch (const gt::OutputError& e) {
    say(std::string("tg-graph: error: ") + e.what());
    return kExitFailure;
  }
}

// The path as results and messages show it.
std::string shown_path(const std::string& path) { return tg::printable_line(path, tg::kMaxShownPathBytes); }

// A bad file is the user's to fix, not a crash: every GraphError exits 2.
tg::Graph load_checked(const std::string& path) {
  tg::Graph g = tg::load_graph_file(path);
  try {
    tg::validate(g);
  } catch (const tg::GraphError& e) {
    tg::graph_error("{}: {}", shown_path(path), e.what());
  }
  return g;
}

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0)); }

std::string cmd_check(const std::string& path) {
  const tg::Graph g = load_checked(path);
  double param_bytes = 0, other_bytes = 0;
  for (const tg::ValueInfo& v : g.values)
    (v.role == tg::Role::parameter || v.role == tg::Role::optimizer_state ? param_bytes : other_bytes) +=
        static_cast<double>(v.bytes());
  return fmt::format("{}: ok: {} values ({} inputs, {} parameters, {} optimizer_state), {} nodes, {} outputs; "
                     "parameters and state {}, other values {}\n",
                     shown_path(path), g.values.size(), g.values_with_role(tg::Role::input).size(),
                     g.values_with_role(tg::Role::parameter).size(),
                     g.values_with_role(tg::Role::optimizer_state).size(), g.nodes.size(), g.outputs.size(),
                     mib(param_bytes), mib(other_bytes));
}

// The host memory `run` needs (one buffer per value) against --max-mib and what the
// machine has: refused up front, since vectors of that size would be killed by the
// kernel's OOM killer half-way rather than fail cleanly.
void check_fits(const std::string& path, double bytes, double max_mib) {
  if (bytes > max_mib * 1024.0 * 1024.0)
    tg::graph_error("{}: running it needs {} of host memory (one buffer per value), more than --max-mib {}; "
                    "raise --max-mib or shrink the shapes", shown_path(path), mib(bytes), max_mib);
  const gt::HostMemory host = gt::host_memory();
  const double limit = host.available_bytes > 0 ? host.available_bytes : host.total_bytes;
  if (limit > 0 && bytes > limit)
    tg::graph_error("{}: running it needs {} of host memory (one buffer per value), but this machine has {} {}; "
                    "shrink the shapes or free memory", shown_path(path), mib(bytes), mib(limit),
                    host.available_bytes > 0 ? "available now" : "in all");
}

// --outputs checked before anything runs: a path that cannot be written, or that is one of the
// files the run reads (the graph, --weights, --inputs), which writing it would destroy.
void check_outputs_path(const std::string& path, const gt::RunFiles& files) {
  std::string write_path;
  if (const std::string why = tg::harness::output_path_problem("--outputs", files.outputs, &write_path); !why.empty())
    tg::graph_error("{}", why);
  const std::pair<const char*, const std::string*> read[] = {
      {"FILE", &path}, {"--weights", &files.weights}, {"--inputs", &files.inputs}};
  for (const auto& [flag, in] : read)
    if (!in->empty())
      if (const std::string why = tg::harness::output_overwrites_input("--outputs", write_path, flag, *in);
          !why.empty())
        tg::graph_error("{}", why);
}

std::string cmd_run(const std::string& path, uint64_t seed, double max_mib, const gt::RunFiles& files) {
  if (!files.outputs.empty()) check_outputs_path(path, files);
  tg::Graph g = load_checked(path);
  if (!files.weights.empty()) gt::apply_weights(g, files.weights);
  double bytes = 0;
  for (const tg::ValueInfo& v : g.values) bytes += static_cast<double>(v.bytes());
  check_fits(path, bytes, max_mib);
  std::vector<std::vector<float>> values;
  auto out_of_memory = [&] {
    tg::graph_error("{}: ran out of host memory while allocating {} (one buffer per value); shrink the shapes "
                    "or free memory", shown_path(path), mib(bytes));
  };
  try {
    values = tg::make_values(g, seed);
  } catch (const std::bad_alloc&) {
    out_of_memory();
  }
  if (!files.inputs.empty())
    for (const std::string& name : gt::apply_inputs(g, values, files.inputs))
      say(fmt::format("tg-graph: note: --inputs: tensor {} names no input of the graph; not read", name));
  try {
    tg::interpret(g, values);
  } catch (const tg::InputError& e) {
    if (!files.inputs.empty())
      tg::graph_error("{}: cannot run on the inputs of {}: {}; check the ids and labels there", shown_path(path),
                      shown_path(files.inputs), e.what());
    // tg-graph run feeds valid labels and counts, so the bad data is computed by the graph.
    tg::graph_error("{}: cannot run: {}. The graph computes this value itself (run feeds every input "
                    "valid data): change the nodes that produce it", shown_path(path), e.what());
  } catch (const std::bad_alloc&) {
    out_of_memory();
  } catch (const tg::GraphError& e) {
    // The graph passed validation, so a refusal here is the interpreter's bug.
    throw std::runtime_error(std::string("the interpreter rejected a validated graph: ") + e.what());
  }
  if (!files.outputs.empty()) {
    try {
      tg::harness::write_file_atomic(files.outputs, gt::outputs_safetensors(g, values));
    } catch (const std::runtime_error& e) {
      tg::graph_error("--outputs {}: {}; check the path", shown_path(files.outputs), e.what());
    }
  }
  std::string out = fmt::format("{}: ran {} nodes on the CPU, {}\n", shown_path(path), g.nodes.size(),
                                files.inputs.empty() ? fmt::format("seed {}", seed)
                                                     : fmt::format("inputs from {}", shown_path(files.inputs)));
  auto show = [&](int id) {
    const tg::ValueInfo& v = g.values[static_cast<size_t>(id)];
    const auto& data = values[static_cast<size_t>(id)];
    out += fmt::format("  {:<24} {:<8} {:<16} sum {:<16.8g} checksum {:016x}\n", tg::listed(v.name),
                       tg::role_name(v.role), v.shape.str(), tg::sum(data), tg::checksum(data));
  };
  if (g.outputs.empty()) out += "  (the graph has no outputs)\n";
  for (int o : g.outputs) show(o);
  bool updated = false;
  for (const tg::Node& n : g.nodes) updated = updated || tg::op_is_update(n.op);
  if (updated) {
    out += "parameters after the update:\n";
    for (int p : g.values_with_role(tg::Role::parameter)) show(p);
  }
  return out;
}

// What `dot` and `print` show: the file's graph, or the training step the static compiler
// builds from it (--training: backward and one SGD-momentum update per parameter), after
// the graph passes of --passes, one line per pass on stderr. Running the command once per
// prefix of the pipeline (none, rows, rows,linear, ...) gives the graph before and after
// each pass (docs/compiler.md).
tg::Graph shown_graph(const std::string& path, bool training, const std::string& passes_text,
                      const tg::PassOptions& pass_options, tg::Precision precision) {
  tg::Graph g = load_checked(path);
  if (training) {
    const tg::GraphModel m = tg::graph_model(std::move(g));
    if (m.loss.empty())
      tg::graph_error("{}: --training needs a loss among the graph's outputs (mse_loss, padded_mse_loss or cross_entropy); the graph "
                      "has none: add one, or leave out --training to see the graph as it is",
                      shown_path(path));
    tg::TrainOptions train;  // as the static compiler builds it: fp16 scales its loss (graph/loss_scale.h)
    train.loss_scale.enabled = tg::loss_scale_enabled(train.loss_scale, precision);
    g = tg::build_training_graph(tg::with_precision(m.fn, precision), train);
  } else if (tg::precision_dtype(precision) != tg::DType::F32) {
    g = tg::build_inference_graph(tg::with_precision(tg::graph_model(std::move(g)).infer_fn, precision));
  }
  if (passes_text.empty()) return g;
  const tg::PassSet passes = tg::parse_passes(passes_text);  // checked before the file was read
  std::vector<tg::PassStats> stats;
  g = tg::run_passes(std::move(g), passes, pass_options, &stats);
  for (const tg::PassStats& st : stats)
    say(fmt::format("tg-graph: pass {}: {} -> {} nodes", tg::pass_name(st.pass), st.nodes_before, st.nodes_after));
  tg::validate(g);
  if (passes.has(tg::PassId::lanes)) {  // it marks nodes rather than rewriting them: name the marked ones
    const std::vector<bool> side = tg::side_lane_nodes(g, g.topo_order(), pass_options);
    std::string names;
    int count = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (side[n]) names += (count++ ? ", " : "") + tg::listed(g.nodes[n].name);
    say(fmt::format("tg-graph: pass lanes: {} of {} nodes on the side stream{}{}", count, g.nodes.size(),
                    count ? ": " : "", names));
  }
  return g;
}

// A CLI11 check from one of flags.h's parsers.
template <typename T>
CLI::Validator parsed_by(std::string (*parse)(const std::string&, T&), const char* kind) {
  return CLI::Validator([parse](std::string& v) {
    T ignored{};
    return parse(v, ignored);
  }, kind);
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
      "  tg-graph dot tests/graphs/classifier.json --training --passes all | dot -Tsvg > step-fused.svg\n"
      "  tg-graph model gpt2_tiny -o gpt2.json && tg-graph bench gpt2.json --device auto\n"
      "  tg-graph run tests/graphs/mlp.json --seed 7\n"
      "  tg-graph run tests/onnx/mlp.json --weights tests/onnx/mlp.safetensors --inputs tests/onnx/mlp.io.safetensors "
      "--outputs out.safetensors\n"
      "Exit status: 0 ok; 1 internal failure, or stdout could not be written; 2 bad usage, a bad graph file, or a "
      "graph that cannot run (data an op cannot use, too large for this machine).");
  app.require_subcommand(1);
  std::string file, seed_text = "1", max_mib_text = "4096";
  auto add_file = [&file](CLI::App* sub) { sub->add_option("FILE", file, "Graph file (.json)")->required(); };
  CLI::App* check = app.add_subcommand("check", "Load and validate FILE; print a summary");
  CLI::App* dot = app.add_subcommand("dot", "Print FILE as Graphviz DOT on stdout");
  CLI::App* print = app.add_subcommand("print", "Print FILE as a readable listing");
  CLI::App* run = app.add_subcommand("run", "Run FILE on the CPU with random inputs or --inputs; print output shapes and checksums");
  for (CLI::App* sub : {check, dot, print, run}) add_file(sub);
  bool training = false;
  std::string passes_text, pass_options_text, precision_text = "fp32";
  for (CLI::App* sub : {dot, print}) {
    sub->add_option("--precision", precision_text,
                    "Show the graph the precision policy records: fp32 (as written), bf16 or fp16 (autocast: casts "
                    "around the GEMMs, f32 for softmax, layernorm, reductions and losses; without --training the "
                    "prediction and what it needs)")
        ->check(CLI::Validator([](std::string& v) {
          tg::Precision p{};
          if (tg::parse_precision(v, p) && p != tg::Precision::tf32) return std::string();
          return "'" + v + "' is not a graph precision; use fp32, bf16 or fp16 (tf32 is a mode of the CUDA GEMMs)";
        }, "PRECISION"));
    sub->add_flag("--training", training,
                  "Show the training step the static compiler builds (backward and SGD-momentum updates); the file "
                  "must have a loss output");
    sub->add_option("--passes", passes_text,
                    "Apply these graph passes first: none, all, or a comma list of bn_fold, conv, heads, attention, rows, "
                    "linear, elementwise, optimizer, low_copies, vocab_pad, lanes, channels_last, and all (every pass but "
                    "channels_last; each prints its node counts on stderr; "
                    "lanes marks nodes for a second CUDA stream and changes none)")
        ->check(CLI::Validator([](std::string& v) {
          try {
            tg::parse_passes(v);
            return std::string();
          } catch (const std::invalid_argument& e) {
            return std::string(e.what());
          }
        }, "PASSES"));
    sub->add_option("--pass-options", pass_options_text,
                    "The passes' choices, key=value items joined by ',' over the defaults:\n" + tg::PassOptions::help())
        ->check(CLI::Validator([](std::string& v) {
          try {
            tg::PassOptions::from_string(v);
            return std::string();
          } catch (const std::invalid_argument& e) {
            return std::string(e.what());
          }
        }, "KEY=VALUE,..."));
  }
  app.add_subcommand("bench", "Run FILE with the static and the dynamic executor, report as tg-train does "
                              "(see 'tg-graph bench --help')");
  tg::tools::ImportArgs import_args;
  CLI::App* import = tg::tools::add_import_command(app, import_args);
  tg::tools::ModelArgs model_args;
  CLI::App* model = tg::tools::add_model_command(app, model_args);
  run->add_option("--seed", seed_text, "Seed for inputs and initial parameters, 0 to 2^64 - 1")
      ->capture_default_str()
      ->check(parsed_by(gt::parse_seed, "UINT64"));
  gt::RunFiles run_files;
  run->add_option("--weights", run_files.weights,
                  "Parameters from this safetensors file (as tg-graph import writes them), each under its name");
  run->add_option("--inputs", run_files.inputs,
                  "Inputs from this safetensors file (f32 tensors, each under its input's name; ids and labels as "
                  "numbers), instead of random ones");
  run->add_option("--outputs", run_files.outputs,
                  "Write the graph's outputs to this safetensors file, each under its name (atomically)");
  run->add_option("--max-mib", max_mib_text, "Refuse graphs whose values need more host memory than this")
      ->capture_default_str()
      ->check(parsed_by(gt::parse_mib, "MIB"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return print_help(app.help());
  } catch (const CLI::CallForAllHelp&) {
    return print_help(app.help("", CLI::AppFormatMode::All));
  } catch (const CLI::ParseError& e) {
    // CLI11 quotes the arguments raw; its complaint is one line.
    say(fmt::format("tg-graph: bad usage: {}. Run 'tg-graph --help' for the subcommands and an example.",
                    tg::printable_line(e.what())));
    return kExitUsage;
  }
  try {
    if (import->parsed()) return tg::tools::run_import(import_args);
    if (model->parsed()) return tg::tools::run_model(model_args);
    gt::require_stdout_open();
    std::string out;
    if (check->parsed()) {
      out = cmd_check(file);
    } else if (run->parsed()) {
      uint64_t seed = 0;
      double max_mib = 0;
      gt::parse_seed(seed_text, seed);  // both checked by CLI11 above
      gt::parse_mib(max_mib_text, max_mib);
      out = cmd_run(file, seed, max_mib, run_files);
    } else {
      tg::Precision precision = tg::Precision::fp32;
      tg::parse_precision(precision_text, precision);  // checked by CLI11 above
      const tg::Graph g =
          shown_graph(file, training, passes_text, tg::PassOptions::from_string(pass_options_text), precision);
      out = dot->parsed() ? tg::graph_to_dot(g, file) : tg::text_dump(g);
    }
    gt::write_stdout(out);
    return 0;
  } catch (const tg::GraphError& e) {
    say(std::string("tg-graph: error: ") + e.what());
    return kExitUsage;
  } catch (const gt::OutputError& e) {
    say(std::string("tg-graph: error: ") + e.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    say("tg-graph: internal error: out of memory");
    return kExitFailure;
  } catch (const std::exception& e) {
    say(std::string("tg-graph: internal error: ") + e.what());
    return kExitFailure;
  }
}
