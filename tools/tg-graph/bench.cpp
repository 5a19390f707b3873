// tg-graph bench: a graph file run by both executors with tg-train's own
// measurements (experiments/train/train_bench.h: iteration, replay, feeds, loss
// curves and predictions checked bitwise), plus the compile phases and the memory
// by role. Rows carry tg-train's names and parameters ({model, batch, executor,
// mode} and whatever --params adds), so `tg-report compare` matches them with
// tg-train's and with the PyTorch baseline's (docs/bring-your-own-model.md).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/harness/harness.h"
#include "experiments/harness/output.h"
#include "experiments/harness/ranks.h"
#include "experiments/memory/measure.h"
#include "experiments/train/data_parallel_bench.h"
#include "experiments/train/train_bench.h"
#include "graph/errors.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/quote.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "graph/weights.h"
#include "tools/tg-graph/commands.h"

namespace th = tg::harness;

namespace tg::tools {

namespace {

// A value of --params: integer, real or boolean when it reads as one (so that
// batch=32 matches tg-train's integer 32), else a string.
th::Param param_value(const std::string& v) {
  if (v == "true" || v == "false") return th::Param(v == "true");
  char* end = nullptr;
  const long long i = std::strtoll(v.c_str(), &end, 10);
  if (!v.empty() && *end == '\0') return th::Param(i);
  const double d = std::strtod(v.c_str(), &end);
  if (!v.empty() && *end == '\0') return th::Param(d);
  return th::Param(v);
}

th::Params parse_params(const std::string& spec) {
  th::Params p;
  std::set<std::string> seen;
  size_t at = 0;
  while (at < spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string kv = spec.substr(at, comma - at);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw th::UsageError(
          fmt::format("--params: {} is not KEY=VALUE; give e.g. --params model=mlp,width=256", quote_name(kv)));
    const std::string key = kv.substr(0, eq);
    for (const char* reserved :
         {"batch", "executor", "mode", "role", "feed_copy", "optimizer", "clip_grad_norm", "precision"})
      if (key == reserved)
        throw th::UsageError(fmt::format("--params: {} is set by the bench itself; choose another key{}",
                                         quote_name(key), key == "precision" ? " (--precision sets it)" : ""));
    if (!seen.insert(key).second)
      throw th::UsageError(fmt::format("--params: key {} is given twice; give each key once", quote_name(key)));
    p.insert_or_assign(key, param_value(kv.substr(eq + 1)));
    at = comma + 1;
  }
  return p;
}

// The bench runs both executors on f32 and integer values and invents every input: an
// integer input must be ids an embedding reads, labels a cross_entropy reads, key lengths an
// attention reads, whose valid range the graph tells, or a mask a where reads (all ones). Low-precision values come from --precision on an f32 graph.
void require_bench_values(const Graph& g) {
  const bench::IndexValues iv = bench::index_values(g);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& vi = g.values[v];
    if (vi.dtype == DType::BF16 || vi.dtype == DType::F16)
      graph_error("tg-graph bench: value {} is {}; the bench runs f32 graphs and makes them {} with --precision {}: "
                  "give the graph f32 values",
                  quote_name(vi.name), dtype_name(vi.dtype), dtype_name(vi.dtype),
                  vi.dtype == DType::BF16 ? "bf16" : "fp16");
    if (dtype_is_int(vi.dtype) && vi.role == Role::input && !iv.labels[v] && iv.id_rows[v] == 0 && iv.seq_of[v] == 0 &&
        !iv.masks[v])
      graph_error("tg-graph bench: input {} is {} but no embedding reads it as ids, no cross_entropy as labels, no "
                  "attention as key lengths and no where as its condition, so the bench cannot tell which values are "
                  "valid; feed it with tg-graph run --inputs instead",
                  quote_name(vi.name), dtype_name(vi.dtype));
  }
}

Graph load_checked(const std::string& file, const std::string& weights) {
  try {
    Graph g = load_graph_file(file);
    validate(g);
    require_bench_values(g);
    if (!weights.empty()) attach_weights(g, load_weights_file(weights), th::shown_path(weights));
    return g;
  } catch (const GraphError& e) {
    throw th::UsageError(e.what());
  }
}

th::Params with(th::Params p, const std::string& executor, const std::string& mode) {
  p.emplace("executor", executor);
  p.emplace("mode", mode);
  return p;
}

// Compile phases (a few compiles) and the bytes per role of both executors, per mode.
void measure_compile_and_memory(th::Experiment& e, const std::shared_ptr<Backend>& be, const train::Config& c) {
  const bool gpu = be->kind() == DeviceKind::cuda;
  for (const bool training : {true, false}) {
    if (training && !c.train) continue;
    const std::string mode = training ? "train" : "inference";
    const ModelFn& fn = training ? c.fn : c.infer_fn;
    CompileOptions co;
    co.training = training;
    co.backend = be;
    co.use_cuda_graph = gpu;
    co.precision = c.precision;
    co.train = c.train_opt;
    co.train.loss_scale = c.loss_scale;
    std::vector<CompileTimings> ts;
    CompiledPlan plan;
    for (int r = 0; r < (e.quick() ? 3 : 5); ++r) {
      plan = compile(fn, co);
      ts.push_back(plan.timings);
    }
    bench::report_compile_phases(e.report(), ts, with(c.params, "static", mode));

    const DynamicOptions o = train::dynamic_options(c, !training);
    const memory::DynamicMeasured dyn =
        memory::measure_dynamic(fn, *be, "caching", o, 3, bench::model_feeds(fn, 44, c.classes));
    const memory::RoleBytes st = memory::plan_role_bytes(plan.memory());
    for (int i = 0; i < memory::kNumMemRoles; ++i) {
      const char* role = memory::mem_role_name(static_cast<memory::MemRole>(i));
      for (const auto& [executor, bytes] : {std::pair<const char*, int64_t>{"static", st[static_cast<size_t>(i)]},
                                            {"dynamic", dyn.role_peak[static_cast<size_t>(i)]}}) {
        th::Params p = with(c.params, executor, mode);
        p.emplace("role", role);
        e.report().add_value("role_bytes", p, static_cast<double>(bytes), "B");
      }
    }
    e.report().add_value("peak_bytes", with(c.params, "static", mode),
                         static_cast<double>(plan.memory().arena_bytes + plan.memory().external_bytes), "B");
    e.report().add_value("peak_bytes", with(c.params, "dynamic", mode), static_cast<double>(dyn.stats.peak), "B");
  }
}

}  // namespace

int bench_main(int argc, char** argv) {
  // --gpus N: this process starts the N ranks and waits for them (experiments/harness/ranks.h).
  if (const std::optional<int> status = th::launch_gpu_ranks(argc, argv)) return *status;
  const std::string command_line = th::join_command_line(argc, argv);
  th::Experiment ex("tg-graph bench",
                    "Run a graph file with the static and the dynamic executor: inference, and a training step (SGD "
                    "momentum) when the file has a loss among its outputs; tg-train's measurements and report",
                    "tg-graph bench tests/onnx/mlp.json --weights tests/onnx/mlp.safetensors --device auto --json "
                    "bench.json");
  std::string file, weights, params_spec;
  std::vector<int> batches;
  bool train = false, no_train = false;
  int loss_steps = 20;
  ex.add_input("FILE", file, "Graph file (.json): a forward graph; an output made by a loss op makes it train");
  ex.add_input("--weights", weights, "Weights for the parameters (.safetensors, as tg-graph import writes them)");
  ex.add_option("--batch", batches,
                "Batches to run (default: the file's). Each input whose dim 0 is the file's batch gets the new one, "
                "and every reshape infers its dim 0", 1, 1 << 24);
  ex.add_flag("--train", train, "Require the training step: exit 2 when the file has no loss");
  ex.add_flag("--no-train", no_train, "Inference only, even when the file has a loss");
  ex.add_option("--params", params_spec,
                "KEY=VALUE,... added to every row's params, e.g. model=mlp,sweep=mlp_w256_d8,width=256,depth=8 to "
                "match tg-train's rows (default: model=<file name without .json>)");
  ex.add_option("--loss-steps", loss_steps, "Training steps of the loss-curve check (both executors)", 1, 10000);
  std::string precision_text = "fp32";
  ex.add_option("--precision", precision_text,
                "Both executors' precision, as tg-train's: fp32, tf32 (the CUDA GEMMs in TF32; the graph stays f32), "
                "bf16 or fp16 (autocast: GEMMs in the low type, softmax, layernorm, reductions and losses in f32, f32 "
                "master weights; fp16 with dynamic loss scaling). Rows other than fp32 carry a precision parameter");
  train::DataParallelFlags dp_flags;
  train::add_data_parallel_flags(ex, dp_flags);
  th::Params labels;
  // Every flag is checked before the graph is read or anything measured: a bad
  // --batch list must not cost a whole run first.
  ex.check_flags([&] {
    if (file.empty()) throw th::UsageError("give the graph file: tg-graph bench FILE [--weights W] ...");
    if (train && no_train) throw th::UsageError("--train and --no-train exclude each other");
    labels = {{"model", std::filesystem::path(file).stem().string()}};
    for (auto& [k, v] : parse_params(params_spec)) labels.insert_or_assign(k, v);
    std::set<int> seen;
    for (int b : batches)
      if (!seen.insert(b).second)
        throw th::UsageError(fmt::format("--batch {} is given twice; list each batch once", b));
  });
  return ex.run(argc - 1, argv + 1, [&](th::Experiment& e) {
    e.report().meta.command_line = command_line;
    // Before the graph is read: a bad --precision must not cost the loading first.
    const Precision precision = bench::precision_option(precision_text, e.on_gpu());
    const std::string shown_file = th::shown_path(file);
    const Graph g = load_checked(file, weights);
    const int64_t file_batch = graph_batch(g);
    if (batches.empty()) batches.push_back(static_cast<int>(file_batch));

    // Every batch is checked (rebatched, its loss and training step built) before the
    // first is measured: a --batch the shapes cannot follow must not cost the runs before it.
    std::vector<train::Config> configs;
    for (int batch : batches) {
      GraphModel gm;
      try {
        gm = graph_model(batch == file_batch ? g : rebatch(g, batch));
      } catch (const GraphError& err) {
        throw th::UsageError(batch == file_batch
                                 ? fmt::format("{}: {}", shown_file, err.what())
                                 : fmt::format("{}: --batch {}: the shapes do not follow the inputs' dim 0 ({}): {}",
                                               shown_file, batch, file_batch, err.what()));
      }
      for (const Node& n : gm.graph->nodes)
        if (n.op == OpKind::padded_mse_loss)
          throw th::UsageError(fmt::format("{}: node {} is a padded_mse_loss, whose count input the bench cannot "
                                           "invent; use mse_loss", shown_file, quote_name(n.name)));
      if (train && gm.loss.empty())
        throw th::UsageError(fmt::format("{}: --train, but no output is a loss (mse_loss, cross_entropy); add one "
                                         "(tg-graph import --loss mse) or drop --train", shown_file));
      for (const std::string& o : gm.other_outputs)
        e.report().skip("output " + o, fmt::format("the bench runs the prediction ({}){}; other outputs are not "
                                                   "timed", quote_name(gm.prediction),
                                                   gm.loss.empty() ? "" : " and the loss"));
      train::Config c;
      c.model = labels.at("model").str();
      c.sweep = labels.count("sweep") ? labels.at("sweep").str() : c.model;
      c.batch = batch;
      c.params = labels;
      c.params.insert_or_assign("batch", th::Param(static_cast<long long>(batch)));
      train::set_train_options(c, TrainOptions{});  // tg-train's default, as its rows say
      c.precision = precision;
      if (precision != Precision::fp32) c.params.emplace("precision", precision_name(precision));
      c.fn = gm.fn;
      c.infer_fn = gm.infer_fn;
      c.rows = batch;
      c.train = !gm.loss.empty() && !no_train;
      if (gm.classes > 0) c.classes = gm.classes;
      if (c.train) {
        try {
          (void)build_training_graph(c.fn);  // a parameter the loss does not reach is the file's problem
        } catch (const GraphError& err) {
          throw th::UsageError(fmt::format("{}: cannot train it: {}", shown_file, err.what()));
        }
      } else {
        e.report().skip(fmt::format("train batch={}", batch),
                        gm.loss.empty() ? "the file has no loss output: inference only" : "--no-train");
      }
      configs.push_back(std::move(c));
    }

    auto be = make_backend(e.device(), e.cuda_options(), precision == Precision::tf32);
    if (be->kind() != DeviceKind::cuda) {
      e.report().skip("static_plain", "CPU backend: no CUDA Graph, the static schedule runs as is (executor=static)");
      e.report().skip("feed", "CPU backend: no pinned staging, the feeds go straight into the input buffers");
    }
    if (const std::optional<train::DataParallelRun> run =
            train::data_parallel_run(e, dp_flags, be->kind() == DeviceKind::cuda, precision == Precision::tf32)) {
      th::Progress bar(configs.size(), "tg-graph bench data parallel");
      for (const train::Config& c : configs) {
        if (!c.train) throw th::UsageError("--ranks and --gpus train the graph: the file needs a loss output");
        train::measure_data_parallel(e, c, *run);
        bar.tick(fmt::format("batch {}", c.batch));
      }
      return;
    }
    th::Progress bar(configs.size(), "tg-graph bench");
    for (const train::Config& c : configs) {
      train::measure(e, be, c, loss_steps);
      measure_compile_and_memory(e, be, c);
      bar.tick(fmt::format("batch {}", c.batch));
    }
    bench::report_conv_algorithms(e.report(), *be);
    bench::report_attention_engines(e.report(), *be);
  });
}

}  // namespace tg::tools
