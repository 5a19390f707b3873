// tg-graph model: a built-in model of graph/models.h written as a graph file, so that
// the tools that take files (check, print, dot, run, bench) take the built-in models too
// and a user can start from one.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "experiments/harness/output.h"
#include "experiments/harness/report_io.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/models.h"
#include "graph/quote.h"
#include "tools/tg-graph/commands.h"
#include "tools/tg-graph/output.h"

namespace tg::tools {

namespace {

namespace th = tg::harness;

constexpr int kExitUsage = 2;

// Which of --batch, --seq and --image a model takes, and its graph at the sizes given.
struct BuiltIn {
  const char* what;
  bool takes_seq, takes_image;
  std::function<ModelFn(const ModelArgs&)> make;
};

template <class Config>
Config sized(Config c, const ModelArgs& a) {
  if (a.batch > 0) c.batch = a.batch;
  if constexpr (std::is_same_v<Config, TransformerConfig> || std::is_same_v<Config, Gpt2Config>) {
    if (a.seq > 0) c.seq = a.seq;
  }
  if constexpr (std::is_same_v<Config, ResNetConfig> || std::is_same_v<Config, VggConfig> ||
                std::is_same_v<Config, ImageNetResNetConfig>) {
    if (a.image > 0) c.image = a.image;
  }
  c.with_loss = !a.no_loss;
  return c;
}

template <class Config>
std::function<ModelFn(const ModelArgs&)> maker(Config base, ModelOutputs (*build)(Builder&, const Config&)) {
  return [base, build](const ModelArgs& a) -> ModelFn {
    const Config c = sized(base, a);
    return [c, build](Builder& b) { return build(b, c); };
  };
}

const std::map<std::string, BuiltIn>& built_ins() {
  static const std::map<std::string, BuiltIn> m = [] {
    VggConfig vgg11;
    vgg11.stages = {1, 1, 2, 2, 2};
    TransformerConfig fused;
    fused.fused_attention = true;
    fused.causal = true;
    return std::map<std::string, BuiltIn>{
        {"mlp", {"MLP: batch 32, 8 Linear layers of width 256, mse loss", false, false, maker(MlpConfig{}, mlp)}},
        {"transformer",
         {"one pre-LN transformer block: batch 8, sequence 64, d 128, 4 heads", true, false,
          maker(TransformerConfig{}, transformer_block)}},
        {"transformer_fused",
         {"the same block with the fused causal attention op", true, false, maker(fused, transformer_block)}},
        {"resnet20", {"CIFAR ResNet-20 at 32 x 32, batch 32", false, true, maker(ResNetConfig{}, resnet_cifar)}},
        {"vgg11", {"VGG-11 at 32 x 32, batch 32, fc 512", false, true, maker(vgg11, vgg)}},
        {"resnet18", {"ResNet-18 at 224 x 224, batch 32", false, true, maker(resnet18_config(), resnet_imagenet)}},
        {"resnet50", {"ResNet-50 at 224 x 224, batch 32", false, true, maker(resnet50_config(), resnet_imagenet)}},
        {"vgg16", {"VGG-16 at 224 x 224, batch 32", false, true, maker(vgg16_config(), vgg)}},
        {"gpt2_tiny",
         {"GPT-2 of two layers, d 64, vocabulary 512: batch 4, sequence 32", true, false,
          maker(gpt2_tiny_config(), gpt2)}},
        {"gpt2_small",
         {"GPT-2 small (124M parameters): batch 8, sequence 128", true, false, maker(gpt2_small_config(), gpt2)}},
    };
  }();
  return m;
}

std::string names() {
  std::string s;
  for (const auto& [name, b] : built_ins()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

Graph model_graph(const ModelFn& fn) {
  Graph g;
  RecordingBuilder rb(g);
  const ModelOutputs out = fn(rb);
  rb.mark_output(out.prediction);
  if (out.loss.valid()) rb.mark_output(out.loss);
  return g;
}

std::string command_of(const ModelArgs& a) {
  std::string s = "tg-graph model " + a.name;
  if (a.batch > 0) s += fmt::format(" --batch {}", a.batch);
  if (a.seq > 0) s += fmt::format(" --seq {}", a.seq);
  if (a.image > 0) s += fmt::format(" --image {}", a.image);
  if (a.no_loss) s += " --no-loss";
  return s;
}

int model_checked(const ModelArgs& a) {
  const auto it = built_ins().find(a.name);
  if (it == built_ins().end())
    graph_error("{} is not a built-in model; choose one of {}", quote_name(a.name), names());
  const BuiltIn& m = it->second;
  if (a.seq > 0 && !m.takes_seq)
    graph_error("--seq: {} has no sequence; --seq is for transformer, transformer_fused, gpt2_tiny and gpt2_small",
                a.name);
  if (a.image > 0 && !m.takes_image)
    graph_error("--image: {} takes no images; --image is for resnet20, vgg11, resnet18, resnet50 and vgg16", a.name);
  std::string write;
  if (!a.out.empty())
    if (const std::string why = th::output_path_problem("-o", a.out, &write); !why.empty()) graph_error("{}", why);
  graph_tool::require_stdout_open();
  Graph g = model_graph(m.make(a));
  const std::string json =
      graph_tool::with_description(save_graph_json(g), fmt::format("{} (written by {})", m.what, command_of(a)));
  (void)load_graph_json(json, a.name);  // what is written loads back
  if (a.out.empty()) {
    graph_tool::write_stdout(json);
    return 0;
  }
  th::write_files_atomic({{write, json}});
  graph_tool::write_stdout(fmt::format("wrote {}: {} nodes, {} values\nnext: tg-graph bench {} --device auto\n",
                                       th::shown_path(a.out), g.nodes.size(), g.values.size(),
                                       th::shown_path(a.out)));
  return 0;
}

}  // namespace

CLI::App* add_model_command(CLI::App& app, ModelArgs& a) {
  CLI::App* sub = app.add_subcommand(
      "model", "Write a built-in model (tg-train's and tg-memory's) as a graph file, with its loss among the outputs");
  sub->add_option("NAME", a.name, "One of " + names())->required();
  sub->add_option("-o,--output", a.out, "Graph file to write (.json); default: stdout");
  sub->add_option("--batch", a.batch, "Batch (default: the model's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--seq", a.seq, "Sequence length of the transformers and GPT-2 models")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--image", a.image, "Image side of the convolutional networks")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_flag("--no-loss", a.no_loss, "Only the prediction: an inference graph");
  return sub;
}

int run_model(const ModelArgs& a) {
  try {
    return model_checked(a);
  } catch (const GraphError& e) {
    th::say_line("tg-graph", std::string("error: ") + e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    th::say_line("tg-graph", std::string("error: ") + e.what());
    return kExitUsage;
  } catch (const graph_tool::OutputError&) {
    throw;  // main's: exit 1, the model was fine
  } catch (const std::runtime_error& e) {
    th::say_line("tg-graph", std::string("error: ") + e.what() + "; check the path");
    return kExitUsage;
  }
}

}  // namespace tg::tools
