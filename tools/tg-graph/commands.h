#pragma once
// The tg-graph subcommands that live outside main.cpp: `bench` (both executors on
// a graph file, under the experiments' harness), `import` (ONNX -> graph file and
// weights) and `model` (a built-in model -> graph file).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tg::tools {

// `tg-graph bench FILE ...` (argv[1] is "bench"): the harness parses the rest
// (--device, --json, --quick, ...) and returns its exit status.
int bench_main(int argc, char** argv);

struct ImportArgs {
  std::string model, out, weights, loss = "none";
  int64_t max_fold_mib = 4096;  // onnx::ImportOptions::max_fold_bytes, in MiB
  std::vector<std::string> dims;  // NAME=N
};
// Registers `import` on app; run_import runs it once parsed. Exit 0, or 2 for a
// model that cannot be imported (the message names the node and why).
CLI::App* add_import_command(CLI::App& app, ImportArgs& args);
int run_import(const ImportArgs& args);

struct ModelArgs {
  std::string name, out;
  int64_t batch = 0, seq = 0, image = 0;  // 0: the model's own
  bool no_loss = false;
};
// Registers `model` on app: a built-in model (graph/models.h) written as a graph file.
CLI::App* add_model_command(CLI::App& app, ModelArgs& args);
int run_model(const ModelArgs& args);

}  // namespace tg::tools
