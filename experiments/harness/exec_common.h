#pragma once
// What the executor experiments (tg-launch, tg-train, tg-memory, tg-shapes) and tg-graph
// bench share: feeds for a model's inputs, a bitwise comparison, and the compile phases as
// report rows. The backend for --device is tg::make_backend (kernels/backend.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "experiments/harness/experiment.h"
#include "experiments/harness/report.h"
#include "graph/builder.h"
#include "graph/init.h"
#include "graph/models.h"
#include "graph/quote.h"
#include "kernels/backend.h"
#include "kernels/attention_engines.h"
#include "kernels/conv_algorithms.h"
#include "static/compiler.h"
#include "static/executable.h"

namespace tg::bench {

// Random feeds for every input the model declares (recorded once to learn the
// shapes); "labels", and any input a cross_entropy reads as its labels, gets class
// indices in [0, classes); an input an embedding reads as its ids gets ids in [0, the
// table's rows); an input an attention reads as its key lengths gets lengths in [1, seq];
// an integer input a where reads as its condition (an imported attention mask) gets ones,
// every token attended.
// The values a graph reads as class labels (cross_entropy's second input), as ids (an
// embedding's: id_rows, the table's rows), as key lengths (an attention's: seq_of, the
// sequence length) or as a condition (where's first input: masks), followed back through
// reshapes to the inputs.
struct IndexValues {
  std::vector<bool> labels;
  std::vector<int64_t> id_rows;  // 0: not ids
  std::vector<int64_t> seq_of;   // 0: not key lengths
  std::vector<bool> masks;
};
inline IndexValues index_values(const Graph& g) {
  const size_t nv = g.values.size();
  IndexValues iv{std::vector<bool>(nv, false), std::vector<int64_t>(nv, 0), std::vector<int64_t>(nv, 0),
                 std::vector<bool>(nv, false)};
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::where) iv.masks[static_cast<size_t>(n.inputs[0])] = true;
    if (op_has_key_lengths(n.op, static_cast<int>(n.inputs.size())))
      iv.seq_of[static_cast<size_t>(n.inputs.back())] = g.values[static_cast<size_t>(n.inputs[0])].shape[1];
    if (n.op == OpKind::cross_entropy) iv.labels[static_cast<size_t>(n.inputs[1])] = true;
    if (n.op == OpKind::embedding)
      iv.id_rows[static_cast<size_t>(n.inputs[1])] = g.values[static_cast<size_t>(n.inputs[0])].shape[0];
  }
  for (auto n = g.nodes.rbegin(); n != g.nodes.rend(); ++n) {
    if (n->op != OpKind::reshape) continue;
    const auto in = static_cast<size_t>(n->inputs[0]), out = static_cast<size_t>(n->outputs[0]);
    iv.labels[in] = iv.labels[in] || iv.labels[out];
    iv.masks[in] = iv.masks[in] || iv.masks[out];
    if (iv.id_rows[in] == 0) iv.id_rows[in] = iv.id_rows[out];
    if (iv.seq_of[in] == 0) iv.seq_of[in] = iv.seq_of[out];
  }
  return iv;
}

inline Feeds model_feeds(const ModelFn& model, uint64_t seed, int64_t classes = 0) {
  Graph g;
  {
    RecordingBuilder rb(g);
    model(rb);
  }
  const IndexValues iv = index_values(g);
  const std::vector<bool>& labels = iv.labels;
  const std::vector<int64_t>& id_rows = iv.id_rows;
  const std::vector<int64_t>& seq_of = iv.seq_of;
  Feeds f;
  uint64_t salt = 0;
  for (int id : g.values_with_role(Role::input)) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    std::vector<float> data(static_cast<size_t>(v.shape.numel()));
    if (seq_of[static_cast<size_t>(id)] > 0) {
      random_labels(data, seed + salt++, seq_of[static_cast<size_t>(id)]);
      for (float& x : data) x += 1.0f;
    } else if (id_rows[static_cast<size_t>(id)] > 0) {
      random_labels(data, seed + salt++, id_rows[static_cast<size_t>(id)]);
    } else if (v.name == "labels" || labels[static_cast<size_t>(id)]) {
      random_labels(data, seed + salt++, classes);
    } else if (dtype_is_int(v.dtype) && iv.masks[static_cast<size_t>(id)]) {
      std::fill(data.begin(), data.end(), 1.0f);
    } else {
      random_fill(data, seed + salt++);
    }
    f[v.name] = std::move(data);
  }
  return f;
}

// "" when a and b hold the same bits; else the size difference or the first mismatches.
inline std::string bitwise_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return fmt::format("sizes differ: {} vs {}", a.size(), b.size());
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < a.size() && shown < 5; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      out += fmt::format("[{}] {:.9g} != {:.9g}; ", i, a[i], b[i]);
      ++shown;
    }
  }
  return out;
}

// A --passes value (static/passes/pass.h: none, all, or a comma list of passes); a bad
// one is bad usage (exit 2), named with the flag.
inline PassSet parse_passes_flag(const std::string& text, const char* flag = "--passes") {
  try {
    return parse_passes(text);
  } catch (const std::invalid_argument& e) {
    throw harness::UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

// A --precision value (graph/precision.h) for a run on the GPU or the CPU; bad usage
// (exit 2), named with the flag, when it is no precision or the device cannot run it:
// tf32 is a mode of the CUDA GEMMs. Whether a 16-bit graph runs on the GPU is the
// executors' to say (Backend::runs, node by node).
inline Precision precision_option(const std::string& text, bool on_gpu, const char* flag = "--precision") {
  Precision p = Precision::fp32;
  if (!parse_precision(text, p))
    throw harness::UsageError(
        fmt::format("{}: {} is not a precision; use fp32, tf32, bf16 or fp16", flag, quote_name(text)));
  if (p == Precision::tf32 && !on_gpu)
    throw harness::UsageError(
        fmt::format("{} tf32 is a mode of the CUDA GEMMs; the CPU computes in f32: use fp32 there", flag));
  return p;
}

// The models tg-train's and tg-memory's --models choose from: the MLP, the transformer
// block, the CIFAR-sized CNNs (resnet: ResNet-20, vgg: VGG-11) and the ImageNet ones at
// 224 x 224 (graph/models.h's resnet18_config, resnet50_config, vgg16_config).
inline const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"mlp", "transformer", "resnet", "vgg", "resnet18", "resnet50", "vgg16"};
  return names;
}

// A --models value: a comma list of model_names() and `more` (the models of one tool
// alone); another name is bad usage (exit 2).
inline std::set<std::string> parse_models_flag(const std::string& text, const std::vector<std::string>& more = {}) {
  std::vector<std::string> known = model_names();
  known.insert(known.end(), more.begin(), more.end());
  std::string list;
  for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
  std::set<std::string> models;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string m = text.substr(at, comma - at);
    if (std::find(known.begin(), known.end(), m) == known.end())
      throw harness::UsageError(
          fmt::format("--models: {} is not a model; give a comma-separated list of {}", quote_name(m), list));
    models.insert(m);
    at = comma + 1;
  }
  return models;
}

// The --pass-options flag of the experiments that compile with passes (tg-train, tg-launch,
// tg-shapes): add it before Experiment::run, resolve it in the body.
inline void add_pass_options_flag(harness::Experiment& e, std::string& text) {
  e.add_option("--pass-options", text,
               "The graph passes' choices, key=value items joined by ',' over these defaults (recorded in the report "
               "as run.options.passes):\n" +
                   PassOptions::help());
}
// The flag's options (a bad item is bad usage, exit 2), recorded in the report's metadata.
inline PassOptions resolve_pass_options(harness::Experiment& e, const std::string& text) {
  try {
    const PassOptions o = PassOptions::from_string(text);
    e.record_options("passes", o.values());
    return o;
  } catch (const std::invalid_argument& x) {
    throw harness::UsageError(fmt::format("--pass-options={}: {}", quote_name(text), x.what()));
  }
}

// A row's extras "PREFIX.KEY" for every option of a group (a switch 1 or 0): what the row's
// plan or backend ran with, for rows compared across runs.
inline void add_option_extras(harness::Measurement& m, const std::string& prefix,
                              const std::vector<OptionValue>& values) {
  for (const OptionValue& v : values) m.extra[prefix + "." + v.key] = static_cast<double>(v.value);
}

// The params of a static measurement with passes: unchanged for none (the rows of runs
// without passes keep matching), with passes=SET otherwise.
inline harness::Params with_passes(harness::Params p, PassSet set) {
  if (!set.empty()) p.emplace("passes", set.str());
  return p;
}

// compile_<phase> and compile_total rows (seconds, one sample per compile) with
// params `base`: record, autodiff, passes, validate, plan, schedule, capture, instantiate.
inline void report_compile_phases(harness::Report& r, const std::vector<CompileTimings>& ts,
                                  const harness::Params& base) {
  const std::pair<const char*, double CompileTimings::*> phases[] = {
      {"record", &CompileTimings::record},     {"autodiff", &CompileTimings::autodiff},
      {"passes", &CompileTimings::passes},     {"validate", &CompileTimings::validate},
      {"plan", &CompileTimings::plan},
      {"schedule", &CompileTimings::schedule}, {"capture", &CompileTimings::capture},
      {"instantiate", &CompileTimings::instantiate}};
  for (const auto& [name, field] : phases) {
    std::vector<double> s;
    for (const CompileTimings& t : ts) s.push_back(t.*field * 1e-3);  // ms -> s
    r.add_time(fmt::format("compile_{}", name), base, std::move(s), "host");
  }
  std::vector<double> total;
  for (const CompileTimings& t : ts) total.push_back(t.total() * 1e-3);
  r.add_time("compile_total", base, std::move(total), "host");
}

// One conv_algorithm row per convolution shape the backend chose an algorithm for
// (kernels/conv_algorithms.h): params op, dtype, geometry, algo and how it was chosen
// (chosen_by = benchmark or heuristic), value the host time the choice cost the shape's first
// call (seconds), extras the workspace, cuDNN's time of the algorithm when timed, whether it
// is deterministic, the offers cuDNN made and how many ahead of the chosen one each rule
// passed over (passed_nondeterministic, passed_transform, passed_workspace with the least
// workspace among those). None on the CPU or with conv_cudnn off.
inline void report_conv_algorithms(harness::Report& r, const Backend& be) {
  for (const ConvAlgorithm& a : conv_algorithms(be)) {
    auto& m = r.add_value("conv_algorithm",
                          {{"op", a.op},
                           {"dtype", a.dtype},
                           {"geometry", a.geometry},
                           {"algo", a.algo},
                           {"chosen_by", a.benchmarked ? "benchmark" : "heuristic"}},
                          a.choose_ms * 1e-3, "s");
    m.extra["workspace_bytes"] = static_cast<double>(a.workspace_bytes);
    m.extra["deterministic"] = a.deterministic ? 1 : 0;
    if (a.benchmarked) m.extra["algo_s"] = a.algo_ms * 1e-3;
    m.extra["offers"] = a.offers;
    m.extra["passed_nondeterministic"] = a.passed_nondeterministic;
    m.extra["passed_transform"] = a.passed_transform;
    m.extra["passed_workspace"] = a.passed_workspace;
    if (a.passed_workspace > 0) m.extra["passed_workspace_least_bytes"] = static_cast<double>(a.passed_workspace_least);
  }
}

// One attention_engine row per fused attention shape the backend met
// (kernels/attention_engines.h): params op, dtype, geometry, engine (cuDNN's plan name, or
// "own" for the project's kernels) and why_own ("-" when cuDNN runs it), value the host time
// the shape's first call paid for building cuDNN's graph (seconds), extras the workspace.
// None on the CPU or with attention_cudnn off.
inline void report_attention_engines(harness::Report& r, const Backend& be) {
  for (const AttentionEngine& a : attention_engines(be)) {
    auto& m = r.add_value("attention_engine",
                          {{"op", a.op}, {"dtype", a.dtype}, {"geometry", a.geometry}, {"engine", a.engine},
                           {"why_own", a.why.empty() ? std::string("-") : a.why}},
                          a.build_ms * 1e-3, "s");
    m.extra["workspace_bytes"] = static_cast<double>(a.workspace_bytes);
  }
}

}  // namespace tg::bench
