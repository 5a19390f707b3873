// tg-memory: where does memory go in training vs inference? Every role's bytes
// are predicted by a closed formula (formulas.cpp) and measured: by the static
// planner's count of the graph's values, and from real allocations (measure.h)
// of the dynamic executor (per-role peaks) and of the static executor (its
// device buffers and arena), plus the allocators' peaks and (GPU) the
// cudaMemGetInfo delta of compiling a plan. Per precision (--precision), the same
// comparisons by role and dtype at the main batches (precision_roles.h). On the GPU, the
// memory a process holds before any tensor: the CUDA context, its modules and the cuBLAS
// handles and workspace, read through NVML in a child process (context_memory.h).
// agreement.h judges every role against the 5% target.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/harness/exec_common.h"
#include "experiments/memory/agreement.h"
#include "experiments/memory/context_memory.h"
#include "experiments/memory/formulas.h"
#include "experiments/memory/measure.h"
#include "experiments/memory/precision_roles.h"
#include "experiments/memory/vgg_layers.h"
#include "graph/training.h"
#include "kernels/out_of_memory.h"

namespace th = tg::harness;
using namespace tg;
using namespace tg::memory;

namespace {

struct Case {
  std::string model;  // "mlp", "transformer", "resnet" or "vgg"
  int64_t batch = 0;
  ModelFn fn;        // with its loss: training
  ModelFn infer_fn;  // without: what inference runs (no target is fed)
  Predicted train_mom, train_sgd, infer;
  std::function<PrecisionPredicted(Precision, bool training, bool momentum)> predict_precision;
};

// One case of a model: `build` records it (mlp, transformer_block, resnet_cifar, vgg) and
// `predict` is its closed formula (predict_mlp, predict_transformer, ...).
template <typename Config, typename BuildFn, typename PredictFn>
Case make_case(const char* model, Config c, BuildFn build, PredictFn predict) {
  Case k;
  k.model = model;
  k.batch = c.batch;
  k.fn = [c, build](Builder& b) { return build(b, c); };
  k.train_mom = predict(c, true, true);
  k.train_sgd = predict(c, true, false);
  c.with_loss = false;
  k.infer_fn = [c, build](Builder& b) { return build(b, c); };
  k.infer = predict(c, false, false);
  return k;
}
// The models with a formula by role and dtype (predict_*_precision) get the per-precision rows.
template <typename Config, typename PrecisionFn>
Case with_precision_formula(Case k, Config c, PrecisionFn predict_precision) {
  k.predict_precision = [c, predict_precision](Precision p, bool training, bool momentum) {
    return predict_precision(c, p, training, momentum);
  };
  return k;
}
Case mlp_case(const MlpConfig& c) {
  return with_precision_formula(make_case("mlp", c, [](Builder& b, const MlpConfig& m) { return mlp(b, m); }, predict_mlp),
                                c, predict_mlp_precision);
}
Case transformer_case(const TransformerConfig& c) {
  return with_precision_formula(
      make_case("transformer", c, [](Builder& b, const TransformerConfig& t) { return transformer_block(b, t); },
                predict_transformer),
      c, predict_transformer_precision);
}
Case resnet_case(const ResNetConfig& c) {
  return make_case("resnet", c, [](Builder& b, const ResNetConfig& r) { return resnet_cifar(b, r); }, predict_resnet);
}
Case vgg_case(const VggConfig& c, const char* model = "vgg") {
  return make_case(model, c, [](Builder& b, const VggConfig& v) { return vgg(b, v); }, predict_vgg);
}
Case resnet_imagenet_case(const ImageNetResNetConfig& c, const char* model) {
  return make_case(
      model, c, [](Builder& b, const ImageNetResNetConfig& r) { return resnet_imagenet(b, r); },
      predict_resnet_imagenet);
}

Case gpt2_case(const Gpt2Config& c) {
  return make_case("gpt2", c, [](Builder& b, const Gpt2Config& g) { return gpt2(b, g); }, predict_gpt2);
}

// --models gpt2: GPT-2 small at sequence 256 on a GPU, gpt2_tiny (graph/models.h) on the CPU, over a
// batch sweep whose main batch is the second.
void gpt2_cases(const std::set<std::string>& models, bool quick, bool gpu, std::vector<Case>& cases,
                std::map<std::string, int64_t>& main_batch) {
  if (!models.count("gpt2")) return;
  Gpt2Config g = gpu ? gpt2_small_config() : gpt2_tiny_config();
  if (gpu) g.seq = 256;
  const std::vector<int64_t> batches =
      gpu ? (quick ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{2, 4, 8}) : std::vector<int64_t>{2, 4, 8};
  for (int64_t b : batches) cases.push_back(gpt2_case((g.batch = b, g)));
  main_batch["gpt2"] = batches[1];
}

// --models: the CIFAR ResNet-20 and VGG-11 at 32 x 32 (--quick: smaller ones at 16 x 16,
// which the CPU's reference convolutions run in seconds), each over a batch sweep whose
// main batch is the second.
void cnn_cases(const std::set<std::string>& models, bool quick, std::vector<Case>& cases,
               std::map<std::string, int64_t>& main_batch) {
  const std::vector<int64_t> batches = quick ? std::vector<int64_t>{2, 4, 8} : std::vector<int64_t>{8, 32, 128};
  if (models.count("resnet")) {
    ResNetConfig r;
    if (quick) r.image = 16, r.width = 8, r.blocks = 1;
    for (int64_t b : batches) cases.push_back(resnet_case((r.batch = b, r)));
    main_batch["resnet"] = batches[1];
  }
  if (models.count("vgg")) {
    VggConfig v;
    v.stages = {1, 1, 2, 2, 2};
    if (quick) v.image = 16, v.width = 8, v.stages = {1, 1, 2, 2}, v.fc = 64;
    for (int64_t b : batches) cases.push_back(vgg_case((v.batch = b, v)));
    main_batch["vgg"] = batches[1];
  }
}

// --models resnet18, resnet50, vgg16: the ImageNet networks at `image` (224 on a GPU, 32 on
// the CPU, whose reference convolutions take minutes per step at 224), over batches 8, 32 and,
// without --quick, 64 on a GPU (32 the main one, the seed's image batch), 2 and 4 on the CPU (batch norm
// needs two values a channel: at 32 x 32 the last stage is 1 x 1).
void imagenet_cases(const std::set<std::string>& models, bool quick, bool gpu, int64_t image,
                    std::vector<Case>& cases, std::map<std::string, int64_t>& main_batch) {
  const std::vector<int64_t> batches =
      gpu ? (quick ? std::vector<int64_t>{8, 32} : std::vector<int64_t>{8, 32, 64}) : std::vector<int64_t>{2, 4};
  for (const char* model : {"resnet18", "resnet50", "vgg16"}) {
    if (!models.count(model)) continue;
    const std::string m = model;
    for (int64_t b : batches) {
      if (m == "vgg16") {
        cases.push_back(vgg_case(at_size(vgg16_config(), b, image), model));
        continue;
      }
      cases.push_back(resnet_imagenet_case(at_size(m == "resnet18" ? resnet18_config() : resnet50_config(), b, image),
                                           model));
    }
    main_batch[m] = batches[1];
  }
}

// The three modes every case can run in.
struct Mode {
  const char* name;
  bool training, momentum;
};
constexpr Mode kTrainMomentum{"train_momentum", true, true}, kTrainSgd{"train_sgd", true, false},
    kInference{"inference", false, false};

const Predicted& predicted(const Case& k, const Mode& m) {
  return !m.training ? k.infer : m.momentum ? k.train_mom : k.train_sgd;
}
const ModelFn& fn_of(const Case& k, const Mode& m) { return m.training ? k.fn : k.infer_fn; }
// The graph both executors run under precision p (what compile() records).
// The memory rows are of the step without dynamic loss scaling, fp16's included: the formulas
// by dtype count autocast's values, and the scaler adds a [3] state, an unscaled f32 copy of
// every gradient and a few one-element values on top (the rows say loss_scale=off).
constexpr bool kLossScaling = false;
Graph graph_of(const Case& k, const Mode& m, Precision p = Precision::fp32) {
  if (!m.training) return build_inference_graph(with_precision(k.infer_fn, p));
  TrainOptions t;
  t.use_momentum = m.momentum;
  t.loss_scale.enabled = kLossScaling;
  return build_training_graph(with_precision(k.fn, p), t);
}
DynamicOptions dynamic_options(const Mode& m, bool free_early, Precision p = Precision::fp32) {
  DynamicOptions o;
  o.use_momentum = m.momentum;
  o.inference = !m.training;
  o.free_early = free_early;
  o.precision = p;
  o.loss_scale.enabled = kLossScaling;
  return o;
}
CompileOptions compile_options(const Mode& m, PlanMode pm, Precision p = Precision::fp32) {
  CompileOptions co;
  co.training = m.training;
  co.train.use_momentum = m.momentum;
  co.plan.mode = pm;
  co.precision = p;
  co.train.loss_scale.enabled = kLossScaling;
  return co;
}

std::vector<int> node_order(const Graph& g) {
  std::vector<int> s(g.nodes.size());
  std::iota(s.begin(), s.end(), 0);  // nodes are appended in a valid order
  return s;
}

MemoryPlan plan(const Graph& g, PlanMode mode, InPlacePolicy ip = InPlacePolicy::elementwise) {
  PlanOptions o;
  o.mode = mode;
  o.in_place = ip;
  return plan_memory(g, node_order(g), o);
}

// --explain: every value that owns storage, so a formula can be checked line by line.
void explain(const Graph& g, const MemoryPlan& p, const std::string& what) {
  // Through the harness: a closed pipe stops the listing, a full disk is an error.
  std::string text = fmt::format("-- {}: {} values, {}\n", what, g.values.size(), p.summary());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& vi = g.values[v];
    const bool root = p.storage[v] == static_cast<int>(v) && p.placement[v] != Placement::unused;
    text += fmt::format("  {:4} {:<11} {:<4} {:>10} B {:<5} {}\n", v, role_name(vi.role), dtype_name(vi.dtype),
                        vi.bytes(), root ? "own" : "-", vi.name);
  }
  th::print_stdout(text);
}

th::Params where(const Case& k, const Mode& m) { return {{"model", k.model}, {"batch", k.batch}, {"mode", m.name}}; }

void arenas(th::Experiment& e, const Case& k, const Mode& m, const Graph& g) {
  for (PlanMode pm : {PlanMode::naive, PlanMode::planned}) {
    const MemoryPlan p = plan(g, pm);
    th::Params q = where(k, m);
    q.emplace("plan", plan_mode_name(pm));
    auto& a = e.report().add_value("arena_bytes", q, static_cast<double>(p.arena_bytes), "B");
    a.extra["lower_bound_B"] = static_cast<double>(p.lower_bound);
    a.extra["external_B"] = static_cast<double>(p.external_bytes);
    if (pm == PlanMode::planned)
      e.report().add_value("arena_lower_bound", where(k, m), static_cast<double>(p.lower_bound), "B");
  }
}

// What every (case, mode) point measures: the planner's count, the dynamic
// executor with nothing freed early, the static executor's naive plan.
struct Ctx {
  th::Experiment& e;
  std::shared_ptr<Backend> be;
  std::shared_ptr<AllocationLog> log;
  Agreement& agree;
  bool explain_values;
};

void measure_point(Ctx& c, const Case& k, const Mode& m) {
  const Predicted& pred = predicted(k, m);
  const Graph g = graph_of(k, m);
  const MemoryPlan naive = plan(g, PlanMode::naive);
  if (c.explain_values) explain(g, naive, fmt::format("{} b{} {}", k.model, k.batch, m.name));
  c.agree.roles(c.e.report(), k.model, k.batch, m.name, "planner", pred.bytes, plan_role_bytes(naive));
  arenas(c.e, k, m, g);
  const Feeds feeds = bench::model_feeds(fn_of(k, m), 17, 10);

  // Dynamic, nothing freed early: every tensor of the iteration is live at its end,
  // so each role's peak is the sum of its tensors: all of the formula.
  const DynamicMeasured d = measure_dynamic(fn_of(k, m), *c.be, "caching", dynamic_options(m, false), 1, feeds);
  c.agree.roles(c.e.report(), k.model, k.batch, m.name, "dynamic_keep_all", pred.bytes, d.role_peak);
  auto& keep = c.e.report().add_value("dynamic_peak_keep_all", where(k, m), static_cast<double>(d.stats.peak), "B");
  keep.extra["predicted_B"] = static_cast<double>(pred.total());
  keep.extra["measured/predicted"] = static_cast<double>(d.stats.peak) / static_cast<double>(pred.total());

  // Static, naive plan: what compiling and one step took from the device, by role.
  const StaticMeasured s = measure_static(fn_of(k, m), compile_options(m, PlanMode::naive), c.be, *c.log, feeds);
  c.agree.roles(c.e.report(), k.model, k.batch, m.name, "static", pred.bytes, s.roles);
  th::Params q = where(k, m);
  q.emplace("plan", "naive");
  auto& a = c.e.report().add_value("static_arena_alloc", q, static_cast<double>(s.arena_alloc_B), "B");
  const int64_t in_arena = pred.at(MemRole::gradients) + pred.at(MemRole::activations) + pred.at(MemRole::workspace);
  a.extra["planner_B"] = static_cast<double>(s.planner_arena_B);
  a.extra["measured/planner"] = static_cast<double>(s.arena_alloc_B) / static_cast<double>(s.planner_arena_B);
  a.extra["formula_B"] = static_cast<double>(in_arena);
  a.extra["measured/formula"] = static_cast<double>(s.arena_alloc_B) / static_cast<double>(in_arena);
  a.extra["all_allocs_B"] = static_cast<double>(s.new_allocs_B);
  a.extra["num_allocs"] = s.num_allocs;
  a.extra["unattributed_B"] = static_cast<double>(s.unattributed_B);
}

// The planned arena's device allocation against the planner's arena_bytes.
void planned_arena(Ctx& c, const Case& k, const Mode& m) {
  const Feeds feeds = bench::model_feeds(fn_of(k, m), 17, 10);
  const StaticMeasured s = measure_static(fn_of(k, m), compile_options(m, PlanMode::planned), c.be, *c.log, feeds);
  th::Params q = where(k, m);
  q.emplace("plan", "planned");
  auto& a = c.e.report().add_value("static_arena_alloc", q, static_cast<double>(s.arena_alloc_B), "B");
  a.extra["planner_B"] = static_cast<double>(s.planner_arena_B);
  a.extra["measured/planner"] = static_cast<double>(s.arena_alloc_B) / static_cast<double>(s.planner_arena_B);
  a.extra["unattributed_B"] = static_cast<double>(s.unattributed_B);
}

constexpr int kSteps = 3;  // the first learns the free plan; the later ones use it

// Per precision (graph/precision.h), at the main batch of each model: bytes by role and
// dtype from the formula, the planner (naive: the sum of the values) and the static
// executor's allocations; the dynamic executor's per-role peaks with nothing freed early
// (weight copies under the graph role they take) and its allocator's peaks, with and
// without early frees; the planned arena. tf32 records the f32 graph: its bytes are fp32's.
void precision_point(Ctx& c, const Case& k, const Mode& m, Precision p) {
  const PrecisionPredicted pred = k.predict_precision(p, m.training, m.momentum);
  const Graph g = graph_of(k, m, p);
  const MemoryPlan naive = plan(g, PlanMode::naive);
  const std::string label = fmt::format("{} b{} {} {}", k.model, k.batch, m.name, precision_name(p));
  if (c.explain_values) explain(g, naive, label);
  const DtypeRoleBytes planner = plan_dtype_role_bytes(g, naive);
  const Feeds feeds = bench::model_feeds(fn_of(k, m), 17, 10);
  const StaticMeasured st = measure_static(fn_of(k, m), compile_options(m, PlanMode::naive, p), c.be, *c.log, feeds);
  // With the low_copies pass (training under autocast) the weight copies leave the step's
  // arena for the parameter store, written by the updates: the same bytes by (role, dtype),
  // now persistent (the rows' persistent_B).
  const bool copies = m.training && precision_dtype(p) != DType::F32;
  StaticMeasured low;
  if (copies) {
    CompileOptions co = compile_options(m, PlanMode::naive, p);
    co.passes = PassSet::only(PassId::low_copies);
    low = measure_static(fn_of(k, m), co, c.be, *c.log, feeds);
  }
  th::Params base = where(k, m);
  base.emplace("precision", precision_name(p));
  if (p == Precision::fp16) base.emplace("loss_scale", "off");
  for (int r = 0; r < kNumPrecRoles; ++r)
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      const PrecRole role = static_cast<PrecRole>(r);
      const int64_t want = pred.bytes.at(role, dt);
      if (want == 0 && planner.at(role, dt) == 0 && st.by_dtype.at(role, dt) == 0 && low.by_dtype.at(role, dt) == 0)
        continue;
      th::Params q = base;
      q.emplace("role", prec_role_name(role));
      q.emplace("dtype", dtype_name(dt));
      q.emplace("source", "predicted");
      c.e.report().add_value("precision_role_bytes", q, static_cast<double>(want), "B");
      const std::string at = fmt::format("{} {} {}", label, prec_role_name(role), dtype_name(dt));
      struct Source {
        const char* name;
        int64_t got;
        const StaticMeasured* measured;  // null: the planner's count
      };
      std::vector<Source> sources = {{"planner", planner.at(role, dt), nullptr}, {"static", st.by_dtype.at(role, dt), &st}};
      if (copies) sources.push_back({"static_low_copies", low.by_dtype.at(role, dt), &low});
      for (const Source& src : sources) {
        q.erase("source");
        q.emplace("source", src.name);
        auto& row = c.e.report().add_value("precision_role_bytes", q, static_cast<double>(src.got), "B");
        row.extra["predicted_B"] = static_cast<double>(want);
        if (src.measured) row.extra["persistent_B"] = static_cast<double>(src.measured->persistent.at(role, dt));
        c.agree.check(std::string("precision_") + src.name, at, want, src.got);
      }
    }

  // The dynamic executor labels tensors by the graph's roles only (a weight copy is an
  // activation when backward reads it): checked per role against graph_roles, and its
  // allocator's peak with nothing freed early against the formula's total.
  const DynamicMeasured keep = measure_dynamic(fn_of(k, m), *c.be, "caching", dynamic_options(m, false, p), 1, feeds);
  for (int r = 0; r < kNumMemRoles; ++r) {
    const MemRole role = static_cast<MemRole>(r);
    th::Params q = base;
    q.emplace("role", mem_role_name(role));
    q.emplace("source", "dynamic_keep_all");
    const int64_t want = pred.graph_roles.at(role), got = keep.role_peak[static_cast<size_t>(r)];
    auto& row = c.e.report().add_value("precision_dynamic_role_bytes", q, static_cast<double>(got), "B");
    row.extra["predicted_B"] = static_cast<double>(want);
    c.agree.check("precision_dynamic_keep_all", fmt::format("{} {}", label, mem_role_name(role)), want, got);
  }
  const DynamicMeasured early = measure_dynamic(fn_of(k, m), *c.be, "caching", dynamic_options(m, true, p), kSteps, feeds);
  for (const auto& [free_early, d] : {std::pair<bool, const DynamicMeasured*>{false, &keep}, {true, &early}}) {
    th::Params q = base;
    q.emplace("free_early", free_early);
    auto& row = c.e.report().add_value("precision_allocator_peak", q, static_cast<double>(d->stats.peak), "B");
    row.extra["peak_reserved_B"] = static_cast<double>(d->stats.peak_reserved);
    if (free_early) continue;
    row.extra["predicted_B"] = static_cast<double>(pred.bytes.total());
    c.agree.check("precision_dynamic_keep_all", label + " allocator peak", pred.bytes.total(), d->stats.peak);
  }
  const MemoryPlan planned = plan(g, PlanMode::planned);
  auto& a = c.e.report().add_value("precision_arena_bytes", base, static_cast<double>(planned.arena_bytes), "B");
  a.extra["lower_bound_B"] = static_cast<double>(planned.lower_bound);
  a.extra["external_B"] = static_cast<double>(planned.external_bytes);
  a.extra["naive_arena_B"] = static_cast<double>(naive.arena_bytes);
}

// --precision: "all" (every precision this device runs) or a comma list, each checked
// as tg-train checks its one (bench::precision_option).
std::vector<Precision> precision_list(const std::string& text, bool on_gpu) {
  std::vector<Precision> out;
  if (text == "all") {
    for (const char* name : {"fp32", "tf32", "bf16", "fp16"}) {
      try {
        out.push_back(bench::precision_option(name, on_gpu));
      } catch (const th::UsageError&) {  // not on this device
      }
    }
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const Precision p = bench::precision_option(text.substr(start, comma - start), on_gpu);
    if (std::find(out.begin(), out.end(), p) != out.end())
      throw th::UsageError(fmt::format("--precision: {} is listed twice", precision_name(p)));
    out.push_back(p);
    start = comma + 1;
  }
  return out;
}

void add_stats(th::Experiment& e, th::Params p, const AllocatorStats& s) {
  auto& m = e.report().add_value("allocator_peak", p, static_cast<double>(s.peak), "B");
  m.extra["raw_allocs"] = static_cast<double>(s.raw_allocs);
  m.extra["allocs"] = static_cast<double>(s.allocs);
  e.report().add_value("allocator_peak_reserved", p, static_cast<double>(s.peak_reserved), "B");
}

constexpr unsigned kAllButWorkspace = 0x3fu & ~(1u << static_cast<int>(MemRole::workspace));

// Dynamic executor with early frees (steady state): the allocators' peaks, and
// per role -- all of a role but workspace is live at one moment (the end of
// forward, or of backward for gradients), so those roles still peak at the
// formula; workspace dies early and is reported, not checked.
void dynamic_part(Ctx& c, const Case& k, const Mode& m) {
  const Feeds feeds = bench::model_feeds(fn_of(k, m), 17, 10);
  std::vector<std::string> allocs{"caching"};
  if (m.training && m.momentum) {
    allocs.insert(allocs.begin(), "raw");
    if (c.be->kind() == DeviceKind::cuda) allocs.push_back("pool");
  }
  for (const auto& a : allocs) {
    const DynamicMeasured d = measure_dynamic(fn_of(k, m), *c.be, a, dynamic_options(m, true), kSteps, feeds);
    th::Params p = where(k, m);
    p.emplace("allocator", a);
    if (!m.training || m.momentum) add_stats(c.e, p, d.stats);  // train_sgd: per role only
    if (a == "caching")
      c.agree.roles(c.e.report(), k.model, k.batch, m.name, "dynamic", predicted(k, m).bytes, d.role_peak,
                    kAllButWorkspace);
  }
}

// GPU only: what compiling a naive training plan takes from cudaMemGetInfo's free
// memory, against the formula total (every role; naive = nothing shared).
void meminfo_part(Ctx& c, const Case& k) {
  size_t free0 = 0, free1 = 0, total = 0;
  c.be->synchronize();
  device_memory_info(*c.be, free0, total);
  CompileOptions co;
  co.backend = c.be;
  co.plan.mode = PlanMode::naive;
  CompiledPlan p = compile(k.fn, co);
  p.step(bench::model_feeds(k.fn, 17, 10));
  c.be->synchronize();
  device_memory_info(*c.be, free1, total);
  const double delta = static_cast<double>(free0) - static_cast<double>(free1);
  auto& m = c.e.report().add_value("meminfo_delta", {{"model", k.model}, {"batch", k.batch}, {"plan", "naive"}},
                                   delta, "B");
  m.extra["predicted_B"] = static_cast<double>(k.train_mom.total());
  m.extra["measured/predicted"] = delta / static_cast<double>(k.train_mom.total());
}

// In-place ReLU (mlp): the flag changes nothing unless the planner honours it.
void inplace_part(Ctx& c, const MlpConfig& mc) {
  for (bool ip : {false, true}) {
    MlpConfig cfg = mc;
    cfg.in_place_relu = ip;
    const Graph g = build_training_graph([cfg](Builder& b) { return mlp(b, cfg); });
    const Graph gi = build_inference_graph([cfg](Builder& b) { return mlp(b, cfg); });
    for (const auto& [mode, gr] : {std::pair<const char*, const Graph*>{"train_momentum", &g}, {"inference", &gi}}) {
      const MemoryPlan p = plan(*gr, PlanMode::planned, InPlacePolicy::flagged);
      auto& m = c.e.report().add_value("inplace_relu_arena",
                                       {{"model", "mlp"}, {"batch", cfg.batch}, {"mode", mode}, {"in_place_relu", ip}},
                                       static_cast<double>(p.arena_bytes), "B");
      m.extra["lower_bound_B"] = static_cast<double>(p.lower_bound);
      m.extra["num_in_place"] = p.num_in_place;
    }
    const Case k = mlp_case(cfg);
    const Feeds feeds = bench::model_feeds(k.fn, 17, 10);
    for (bool early : {true, false}) {
      DynamicOptions o = dynamic_options(kTrainMomentum, early);
      o.in_place_relu = ip;
      const DynamicMeasured d = measure_dynamic(k.fn, *c.be, "caching", o, early ? kSteps : 1, feeds);
      c.e.report().add_value("inplace_relu_dynamic_peak",
                             {{"model", "mlp"}, {"batch", cfg.batch}, {"in_place_relu", ip}, {"free_early", early}},
                             static_cast<double>(d.stats.peak), "B");
    }
  }
}

// --models vgg16: the VGG table layer by layer (vgg_layers.h) at the main batch, training
// with momentum and inference, in-place ReLU off and on. Each layer's bytes predicted and from
// the planner's storage (a planned plan, in-place policy flagged: the ReLUs flagged in place
// take their input's buffer), every quantity checked against kLayerTargetPct; and, from real
// allocations, the dynamic executor's allocated peak with nothing freed early (every buffer of
// the step live at its end) against the formula's total less the buffers in-place ReLUs share.
constexpr double kLayerTargetPct = 2.0;

void layer_table(Ctx& c, VggConfig v) {
  c.agree.set_target("layers", kLayerTargetPct);
  c.agree.set_target("layers_dynamic_keep_all", kLayerTargetPct);
  for (const Mode& m : {kTrainMomentum, kInference})
    for (bool ip : {false, true}) {
      v.in_place_relu = ip;
      v.with_loss = m.training;
      const ModelFn fn = [v](Builder& b) { return vgg(b, v); };
      Case k;
      k.model = "vgg16";
      k.batch = v.batch;
      k.fn = k.infer_fn = fn;
      const Graph g = graph_of(k, m);
      const std::vector<LayerBytes> want = predict_vgg_layers(v, m.training, m.momentum);
      const std::vector<LayerBytes> got = measure_vgg_layers(g, plan(g, PlanMode::planned, InPlacePolicy::flagged));
      if (got.size() != want.size())
        throw std::runtime_error(fmt::format("tg-memory: the vgg16 graph has {} layers, the formula {}", got.size(),
                                             want.size()));
      th::Params base{{"model", "vgg16"}, {"batch", v.batch}, {"image", v.image}, {"mode", m.name},
                      {"in_place_relu", ip}};
      const std::string label = fmt::format("vgg16 b{} {} in_place_relu={}", v.batch, m.name, ip ? "on" : "off");
      int64_t forward_on = 0, forward_off = 0;  // the formula's, summed: what in-place ReLUs share
      VggConfig off = v;
      off.in_place_relu = false;
      for (const LayerBytes& l : predict_vgg_layers(off, m.training, m.momentum)) forward_off += l.forward;
      for (size_t i = 0; i < got.size(); ++i) {
        if (got[i].layer != want[i].layer)
          throw std::runtime_error(fmt::format("tg-memory: vgg16 layer {} is {} in the graph, {} in the formula", i,
                                               got[i].layer, want[i].layer));
        th::Params q = base;
        q.emplace("layer", got[i].layer);
        q.emplace("kind", got[i].kind);
        auto& row = c.e.report().add_value("layer_bytes", q, static_cast<double>(got[i].forward), "B");
        for (const char* quantity : kLayerQuantities) {
          const int64_t w = layer_quantity(want[i], quantity), h = layer_quantity(got[i], quantity);
          row.extra[std::string(quantity) + "_B"] = static_cast<double>(h);
          row.extra[std::string(quantity) + "_predicted_B"] = static_cast<double>(w);
          c.agree.check("layers", fmt::format("{} {} {}", label, got[i].layer, quantity), w, h);
        }
        for (const char* per_image : {"output", "forward", "saved"})
          row.extra[std::string(per_image) + "_per_image_B"] =
              static_cast<double>(layer_quantity(got[i], per_image)) / static_cast<double>(v.batch);
        forward_on += want[i].forward;
      }
      const Feeds feeds = bench::model_feeds(fn, 17, 10);
      const DynamicMeasured d = measure_dynamic(fn, *c.be, "caching", dynamic_options(m, false), 1, feeds);
      const int64_t predicted = predict_vgg(off, m.training, m.momentum).total() - (forward_off - forward_on);
      auto& peak = c.e.report().add_value("layer_table_dynamic_peak", base, static_cast<double>(d.stats.peak), "B");
      peak.extra["predicted_B"] = static_cast<double>(predicted);
      c.agree.check("layers_dynamic_keep_all", label + " allocator peak", predicted, d.stats.peak);
    }
}

// --models gpt2: activations and workspace by sequence length at the main batch, training with
// momentum, formula against the planner's count (naive plan: every value its own buffer).
// Beside them, the S x S bytes attention without the fused op would hold: the transformer block's
// terms (predict_transformer, checked on that model), per layer: the saved softmax and, not
// saved, the scores and their scaled copy forward and three S x S gradients backward.
void gpt2_by_seq(Ctx& c, Gpt2Config g) {
  for (int64_t seq = g.context / 8; seq <= g.context; seq *= 2) {
    g.seq = seq;
    Case k = gpt2_case(g);
    const Graph graph = graph_of(k, kTrainMomentum);
    const RoleBytes got = plan_role_bytes(plan(graph, PlanMode::naive));
    const Predicted& want = k.train_mom;
    th::Params base{{"model", "gpt2"}, {"batch", g.batch}, {"seq", seq}, {"mode", kTrainMomentum.name}};
    for (MemRole role : {MemRole::activations, MemRole::workspace}) {
      th::Params q = base;
      q.emplace("role", mem_role_name(role));
      auto& row = c.e.report().add_value("seq_role_bytes", q, static_cast<double>(got[static_cast<size_t>(role)]), "B");
      row.extra["predicted_B"] = static_cast<double>(want.at(role));
      c.agree.check("planner_by_seq", fmt::format("gpt2 b{} s{} {}", g.batch, seq, mem_role_name(role)),
                    want.at(role), got[static_cast<size_t>(role)]);
    }
    const int64_t scores = g.batch * g.heads * seq * seq * 4;  // one [B H, S, S] f32
    th::Params u = base;
    u.emplace("source", "predicted");
    auto& row = c.e.report().add_value("unfused_attention_scores_bytes", u, static_cast<double>(g.layers * 6 * scores), "B");
    row.extra["saved_B"] = static_cast<double>(g.layers * scores);
    row.extra["not_saved_B"] = static_cast<double>(g.layers * 5 * scores);
  }
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TWOGRAPH_HAVE_CUDA
  // The context-memory child (context_memory.h) must touch nothing before its own steps.
  if (auto rc = context_memory_child(argc, argv)) return *rc;
#endif
  th::Experiment ex("tg-memory",
                    "Where does memory go? Bytes per role: closed formula vs planner, dynamic and static "
                    "executors' allocations, allocators, device",
                    "tg-memory --device auto --quick --json docs/results/memory.json");
  bool explain_values = false;
  ex.add_flag("--explain", explain_values,
              "Print every value of each graph at the main batch (role, dtype, bytes, owns storage)");
  std::string precision_text = "all";
  ex.add_option("--precision", precision_text,
                "The precisions of the per-precision rows (bytes by role and dtype at the main batch of each model): "
                "all (every precision this device runs: fp32, bf16 and fp16 on the CPU; fp32, tf32, bf16 and fp16 on "
                "the GPU) or a comma list of fp32, tf32, bf16, fp16. The other rows are fp32");
  std::string models = "mlp,transformer";
  ex.add_option("--models", models,
                "The models to measure, comma-separated: mlp, transformer, resnet (the CIFAR ResNet-20), vgg (VGG-11 "
                "at 32 x 32), resnet18, resnet50, vgg16 (the ImageNet networks at --image; vgg16 adds its table layer "
                "by layer), gpt2 (GPT-2 small at sequence 256 on a GPU, a two-layer one on the CPU; with its "
                "activations by sequence length)");
  int64_t image = 0;
  ex.add_option("--image", image,
                "Image side of resnet18, resnet50 and vgg16, a multiple of 32 (0: 224 on a GPU, 32 on the CPU, whose "
                "reference convolutions take minutes per step at 224)",
                0, 4096);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const std::vector<Precision> precisions = precision_list(precision_text, e.device() >= 0);
    const bool q = e.quick();
    MlpConfig mc;
    mc.batch = q ? 32 : 256;
    mc.in = mc.width = q ? 128 : 1024;
    mc.depth = q ? 4 : 8;
    TransformerConfig tc;
    tc.batch = q ? 2 : 8;
    tc.seq = q ? 32 : 256;
    tc.d_model = q ? 64 : 512;
    tc.heads = q ? 4 : 8;
    // The main batch of each model is in its sweep: the modes, allocators and
    // device checks run there.
    const std::vector<int64_t> mlp_batches = q ? std::vector<int64_t>{8, 32, 128} : std::vector<int64_t>{32, 128, 256, 512, 2048};
    const std::vector<int64_t> tf_batches = q ? std::vector<int64_t>{1, 2, 4} : std::vector<int64_t>{1, 4, 8, 16};
    for (const auto& [main_b, sweep] : {std::pair<int64_t, const std::vector<int64_t>*>{mc.batch, &mlp_batches},
                                        {tc.batch, &tf_batches}})
      if (std::find(sweep->begin(), sweep->end(), main_b) == sweep->end())
        throw std::logic_error(fmt::format("tg-memory: main batch {} is not in its sweep", main_b));

    const std::set<std::string> listed = bench::parse_models_flag(models, {"gpt2"});
    std::vector<Case> cases;
    std::map<std::string, int64_t> main_batch{{"mlp", mc.batch}, {"transformer", tc.batch}};
    if (listed.count("mlp"))
      for (int64_t b : mlp_batches) { MlpConfig c = mc; c.batch = b; cases.push_back(mlp_case(c)); }
    if (listed.count("transformer"))
      for (int64_t b : tf_batches) { TransformerConfig c = tc; c.batch = b; cases.push_back(transformer_case(c)); }
    cnn_cases(listed, q, cases, main_batch);
    if (image % 32 != 0)
      throw th::UsageError(fmt::format("--image {} is not a multiple of 32; the ImageNet networks halve it five times "
                                       "(give 0 for the default)", image));
    const int64_t side = image > 0 ? image : (e.on_gpu() ? 224 : 32);
    imagenet_cases(listed, q, e.on_gpu(), side, cases, main_batch);
    gpt2_cases(listed, q, e.on_gpu(), cases, main_batch);

    if (e.on_gpu()) {
      TG_NVTX_RANGE("tg-memory context");
      measure_context_memory(e.report(), th::self_child_argv(kContextMemoryChildFlag, e.device()));
    } else {
#ifdef TWOGRAPH_HAVE_CUDA
      e.report().skip("context_memory", "the CUDA context's memory needs a GPU (CPU backend: no context is created)");
#else
      e.report().skip("context_memory", "built without CUDA (TWOGRAPH_CUDA=OFF or no nvcc found)");
#endif
    }
    auto log = std::make_shared<AllocationLog>();
    Agreement agree;
    Ctx c{e, make_recording_backend(e.device(), log, e.cuda_options()), log, agree, false};
    th::Progress bar(cases.size() + 1, "tg-memory");
    for (const Case& k : cases) {
      TG_NVTX_RANGE("tg-memory case");
      const bool main_point = k.batch == main_batch.at(k.model);
      c.explain_values = explain_values && main_point;
      measure_point(c, k, kTrainMomentum);
      if (main_point) {  // the other modes and the allocator and device checks at one batch per model
        measure_point(c, k, kTrainSgd);
        measure_point(c, k, kInference);
        for (const Mode& m : {kTrainMomentum, kTrainSgd, kInference}) {
          dynamic_part(c, k, m);
          planned_arena(c, k, m);
        }
        if (e.on_gpu()) meminfo_part(c, k);
        if (k.predict_precision)  // the CNNs have no formula by dtype yet: their rows are fp32's
          for (Precision p : precisions)
            for (const Mode& m : {kTrainMomentum, kInference}) precision_point(c, k, m, p);
      }
      bar.tick(k.model);
    }
    inplace_part(c, mc);
    bar.tick("in-place relu");
    if (listed.count("vgg16")) layer_table(c, at_size(vgg16_config(), main_batch.at("vgg16"), side));
    if (listed.count("gpt2")) {
      Gpt2Config g = e.on_gpu() ? gpt2_small_config() : gpt2_tiny_config();
      g.batch = main_batch.at("gpt2");
      gpt2_by_seq(c, g);
    }
    if (!e.on_gpu()) {
      e.report().skip("meminfo_delta", "cudaMemGetInfo needs a GPU (CPU backend: host memory is shared with "
                                       "everything else on the machine, so a delta means nothing)");
      e.report().skip("allocator=pool", "the pool allocator is CUDA's cudaMallocAsync: GPU only");
    }
    agree.finish(e.report());
  });
}
