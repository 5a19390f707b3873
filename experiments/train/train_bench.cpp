#include "experiments/train/train_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dynamic/trainer.h"
#include "experiments/harness/exec_common.h"
#include "graph/corpus.h"
#include "static/compiler.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace th = tg::harness;

namespace tg::train {

DynamicOptions dynamic_options(const Config& c, bool inference) {
  DynamicOptions o = dynamic_options_like(c.train_opt);
  o.precision = c.precision;
  o.loss_scale = c.loss_scale;
  o.inference = inference;
  o.seed = c.seed;
  return o;
}

void set_train_options(Config& c, const TrainOptions& t) {
  c.train_opt = t;
  c.params.insert_or_assign("optimizer", optimizer_name(t));
  // The float's shortest decimal (0.1, not 0.10000000149011612), as it was given.
  c.params.insert_or_assign("clip_grad_norm", std::stod(fmt::format("{}", t.clip_grad_norm)));
}

Config mlp_config(const std::string& sweep, int64_t batch, int64_t width, int depth) {
  MlpConfig m;
  m.batch = batch;
  m.in = width;
  m.width = width;
  m.depth = depth;
  m.out = 10;
  MlpConfig mi = m;
  mi.with_loss = false;
  Config c{"mlp", sweep, batch, {}, [m](Builder& b) { return mlp(b, m); }, [mi](Builder& b) { return mlp(b, mi); }};
  c.params = {{"model", "mlp"}, {"sweep", sweep}, {"batch", batch}, {"width", width}, {"depth", depth}};
  c.rows = batch;
  return c;
}

Config transformer_config(int64_t batch, int64_t seq, int64_t d_model, int64_t heads) {
  TransformerConfig t;
  t.batch = batch;
  t.seq = seq;
  t.d_model = d_model;
  t.heads = heads;
  TransformerConfig ti = t;
  ti.with_loss = false;
  Config c{"transformer", "transformer", batch, {}, [t](Builder& b) { return transformer_block(b, t); },
           [ti](Builder& b) { return transformer_block(b, ti); }};
  c.params = {{"model", "transformer"}, {"sweep", "transformer"}, {"batch", batch},
              {"seq", seq},             {"d_model", d_model},     {"heads", heads}};
  c.rows = batch * seq;
  return c;
}

Config gpt2_config(const std::string& sweep, const Gpt2Config& g) {
  Gpt2Config gi = g;
  gi.with_loss = false;
  Config c{"gpt2", sweep, g.batch, {}, [g](Builder& b) { return gpt2(b, g); }, [gi](Builder& b) { return gpt2(b, gi); }};
  c.params = {{"model", "gpt2"},      {"sweep", sweep},       {"batch", g.batch},  {"seq", g.seq},
              {"d_model", g.d_model}, {"layers", g.layers},   {"heads", g.heads},  {"vocab", g.vocab}};
  // The shortest decimal of the float, as clip_grad_norm: 0.1, not 0.10000000149.
  if (g.dropout > 0.0f) c.params.emplace("dropout", std::stod(fmt::format("{}", g.dropout)));
  c.rows = g.batch * g.seq;
  c.classes = g.vocab;
  c.corpus_seq = g.seq;
  return c;
}

Config resnet_config(const std::string& sweep, const ResNetConfig& r) {
  ResNetConfig ri = r;
  ri.with_loss = false;
  Config c{"resnet", sweep, r.batch, {}, [r](Builder& b) { return resnet_cifar(b, r); },
           [ri](Builder& b) { return resnet_cifar(b, ri); }};
  c.params = {{"model", "resnet"}, {"sweep", sweep},      {"batch", r.batch},
              {"image", r.image},  {"width", r.width},    {"blocks", r.blocks}};
  c.rows = r.batch * r.image * r.image;
  c.classes = r.classes;
  return c;
}

namespace {
// "2-2-3-3-3": a row's parameter for blocks or convs per stage.
std::string per_stage(const std::vector<int>& counts) {
  std::string text;
  for (int n : counts) text += (text.empty() ? "" : "-") + std::to_string(n);
  return text;
}
}  // namespace

Config vgg_config(const std::string& sweep, const VggConfig& v, const std::string& model) {
  VggConfig vi = v;
  vi.with_loss = false;
  Config c{model, sweep, v.batch, {}, [v](Builder& b) { return vgg(b, v); }, [vi](Builder& b) { return vgg(b, vi); }};
  c.params = {{"model", model},   {"sweep", sweep},   {"batch", v.batch},           {"image", v.image},
              {"width", v.width}, {"fc", v.fc},       {"stages", per_stage(v.stages)}};
  c.rows = v.batch * v.image * v.image;
  c.classes = v.classes;
  return c;
}

Config resnet_imagenet_config(const std::string& model, const std::string& sweep, const ImageNetResNetConfig& r) {
  ImageNetResNetConfig ri = r;
  ri.with_loss = false;
  Config c{model, sweep, r.batch, {}, [r](Builder& b) { return resnet_imagenet(b, r); },
           [ri](Builder& b) { return resnet_imagenet(b, ri); }};
  c.params = {{"model", model},   {"sweep", sweep},  {"batch", r.batch},
              {"image", r.image}, {"width", r.width}, {"blocks", per_stage(r.blocks)},
              {"block", r.bottleneck ? "bottleneck" : "basic"}};
  c.rows = r.batch * r.image * r.image;
  c.classes = r.classes;
  return c;
}

namespace {

th::Params with(th::Params p, const std::string& executor, const std::string& mode) {
  p.emplace("executor", executor);
  p.emplace("mode", mode);
  return p;
}

double record(th::Experiment& e, const Config& c, const std::string& executor, const std::string& mode,
              std::vector<double> samples, double compile_s = -1, const char* name = "iteration") {
  auto& m = e.report().add_time(name, with(c.params, executor, mode), std::move(samples));
  m.extra["iter/s"] = 1.0 / m.stats.median;
  m.extra["samples/s"] = static_cast<double>(c.batch) / m.stats.median;
  if (c.model == "gpt2") m.extra["tokens/s"] = static_cast<double>(c.rows) / m.stats.median;
  if (compile_s >= 0) m.extra["compile_ms"] = compile_s * 1e3;
  return m.stats.median;
}

// The static plan's device bytes: its arena (activations, gradients, workspace) and, in
// static_plan_bytes, the arena with what lives outside it (inputs, parameters, optimizer
// state): what PyTorch's peak allocated bytes of the same step counts.
void record_plan_bytes(th::Experiment& e, const Config& c, const std::string& mode, const CompiledPlan& p) {
  const MemoryPlan& m = p.memory();
  e.report().add_value("static_arena_bytes", with(c.params, "static", mode), static_cast<double>(m.arena_bytes), "B",
                       "lower");
  e.report().add_value("static_plan_bytes", with(c.params, "static", mode),
                       static_cast<double>(m.arena_bytes + m.external_bytes), "B", "lower");
}

CompiledPlan compile_for(const Config& c, const std::shared_ptr<Backend>& be, bool training, bool graph,
                         FeedCopy feed_copy = CompileOptions{}.feed_copy) {
  CompileOptions co;
  co.training = training;
  co.backend = be;
  co.use_cuda_graph = graph;
  co.feed_copy = feed_copy;
  co.precision = c.precision;
  co.train = c.train_opt;
  co.train.loss_scale = c.loss_scale;
  co.seed = c.seed;
  return compile(training ? c.fn : c.infer_fn, co);
}

size_t feed_bytes(const Feeds& f) {
  size_t n = 0;
  for (const auto& [name, data] : f) n += data.size() * sizeof(float);
  return n;
}

// The host half of a static iteration, per way of copying the feeds into pinned
// staging (FeedCopy, static/executable.h): `feed` alone, and `step_by_feed_copy`,
// the whole training step with that copy. The second shows what the first cannot:
// whether the GPU's read of staging (the graph's first nodes) depends on how the
// CPU wrote it (cached lines the DMA must snoop, or streamed to memory).
void measure_feed(th::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c, CompiledPlan& dflt,
                  const Feeds& feeds) {
  const double bytes = static_cast<double>(feed_bytes(feeds));
  auto sync = [&] { be->synchronize(); };
  for (FeedCopy fc : {FeedCopy::threads, FeedCopy::threads_streaming, FeedCopy::serial}) {
    CompiledPlan other;
    const bool is_default = fc == CompileOptions{}.feed_copy;
    if (!is_default) other = compile_for(c, be, true, true, fc);
    CompiledPlan& p = is_default ? dflt : other;
    th::Params params = with(c.params, "static", "train");
    params.emplace("feed_copy", feed_copy_name(fc));
    auto& m = e.report().add_time("feed", params, th::time_host(e.loop(), [&] { p.exec->feed(feeds); }, sync));
    m.extra["MiB"] = bytes / (1024.0 * 1024.0);
    m.extra["GB/s"] = bytes / m.stats.median * 1e-9;
    e.report().add_time("step_by_feed_copy", params, th::time_host(e.loop(), [&] { p.step(feeds); }, sync));
  }
}

// Whether the backend gives the same bits every run: not the CUDA backend with cuDNN's
// convolution algorithms that add with atomics allowed (--cuda-options conv_deterministic=0,
// what PyTorch's cudnn.benchmark picks among).
bool same_bits_every_run(const Backend& be) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (be.kind() == DeviceKind::cuda) {
    const CudaBackendOptions& o = static_cast<const CudaBackend&>(be).options();
    return o.conv_deterministic && o.attention_deterministic;
  }
#endif
  (void)be;
  return true;
}

// Both executors from the same initial parameters (c.seed), the same batch per
// step: the same kernels in the same order, so every loss has the same bits. Where the
// backend does not promise that (same_bits_every_run), a difference is reported, not thrown:
// bitwise_equal 0 and the largest relative difference of the two curves.
void loss_curves(th::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c, bool graph, int steps) {
  TG_NVTX_RANGE("loss_curves");
  CompiledPlan p = compile_for(c, be, true, graph);
  DynamicTrainer dyn(c.fn, *be, "caching", dynamic_options(c));
  std::vector<double> ls, ld;
  trace::LoopWindow window;
  const std::vector<int64_t> corpus =
      c.corpus_seq > 0 ? synthetic_corpus(corpus_tokens_for(c.batch, c.corpus_seq, steps), 1 + c.seed)
                       : std::vector<int64_t>{};
  for (int i = 0; i < steps; ++i) {
    window.before_sample(i);
    Feeds f = bench::model_feeds(c.fn, data_seed(c, 500 + static_cast<uint64_t>(i) * 7), c.classes);
    if (c.corpus_seq > 0)
      for (auto& [name, values] : corpus_batch(corpus, c.batch, c.corpus_seq, i)) f[name] = std::move(values);
    ls.push_back(p.step(f));
    ld.push_back(dyn.step(f));
  }
  const bool promised = same_bits_every_run(*be);
  bool equal = true;
  double max_rel = 0;
  for (int i = 0; i < steps; ++i) {
    const std::string d = bench::bitwise_diff({static_cast<float>(ls[i])}, {static_cast<float>(ld[i])});
    if (d.empty()) continue;
    if (promised)
      throw std::runtime_error(fmt::format("tg-train: loss curves differ at step {} for {}: static {:.9g}, dynamic "
                                           "{:.9g}", i, th::params_str(c.params), ls[i], ld[i]));
    equal = false;
    max_rel = std::max(max_rel, std::abs(ls[i] - ld[i]) / std::max(std::abs(ls[i]), 1e-30));
  }
  // With loss scaling, each executor's scaler after the curve: the steps it skipped (an inf
  // or a nan in the gradients) and the scale it ended with.
  const bool scaled = loss_scale_enabled(c.loss_scale, c.precision);
  LossScaleStatus scaler_static, scaler_dynamic;
  if (scaled) {
    scaler_static = loss_scale_status(p.read(kLossScalerName));
    scaler_dynamic = loss_scale_status(dyn.parameter(kLossScalerName));
  }
  for (auto [name, v, scaler] : {std::tuple<const char*, std::vector<double>*, LossScaleStatus*>{"static", &ls, &scaler_static},
                                 {"dynamic", &ld, &scaler_dynamic}}) {
    th::Measurement m;
    m.name = "loss_curve";
    m.params = with(c.params, name, "train");
    m.unit = "loss";
    m.timer = "value";
    m.samples = *v;  // per step, in order: the curve itself
    m.extra["steps"] = steps;
    m.extra["bitwise_equal"] = equal ? 1 : 0;
    if (!corpus.empty()) m.extra["corpus_tokens"] = static_cast<double>(corpus.size());  // graph/corpus.h's text
    if (!equal) m.extra["max_rel_diff"] = max_rel;
    if (scaled) {
      m.extra["skipped_steps"] = static_cast<double>(scaler->skipped_steps);
      m.extra["loss_scale"] = scaler->scale;
    }
    e.report().add(std::move(m));
  }
}

}  // namespace

Result measure(th::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c, int loss_steps) {
  const bool gpu = be->kind() == DeviceKind::cuda;
  Result r;
  auto sync = [&] { be->synchronize(); };
  if (c.train) {
    loss_curves(e, be, c, gpu, loss_steps);
    const Feeds feeds = bench::model_feeds(c.fn, data_seed(c, 42), c.classes);
    TG_NVTX_RANGE("train_steps");
    CompiledPlan p = compile_for(c, be, true, gpu);
    record_plan_bytes(e, c, "train", p);
    r.static_train_s = record(e, c, "static", "train", th::time_host(e.loop(), [&] { p.step(feeds); }, sync),
                              p.timings.total() * 1e-3);
    // The replay alone, as a CUDA Graph benchmark reports it: the inputs already in
    // staging, one cudaGraphLaunch (its first nodes copy them in), no loss read back.
    p.run(feeds);
    record(e, c, "static", "train", th::time_host(e.loop(), [&] { p.run(); }, sync), -1, "replay");
    if (gpu) {
      measure_feed(e, be, c, p, feeds);
      CompiledPlan plain = compile_for(c, be, true, false);
      record(e, c, "static_plain", "train", th::time_host(e.loop(), [&] { plain.step(feeds); }, sync),
             plain.timings.total() * 1e-3);
    }
    DynamicTrainer dyn(c.fn, *be, "caching", dynamic_options(c));
    r.dynamic_train_s = record(e, c, "dynamic", "train", th::time_host(e.loop(), [&] { dyn.step(feeds); }, sync));
  }
  {
    TG_NVTX_RANGE("inference");
    const Feeds infeeds = bench::model_feeds(c.infer_fn, data_seed(c, 43), c.classes);
    CompiledPlan p = compile_for(c, be, false, gpu);
    record_plan_bytes(e, c, "inference", p);
    DynamicTrainer dyn(c.infer_fn, *be, "caching", dynamic_options(c, true));
    p.run(infeeds);
    const std::string d = bench::bitwise_diff(p.read(p.prediction), dyn.run_inference(infeeds));
    if (!d.empty())
      throw std::runtime_error(fmt::format("tg-train: static and dynamic predictions differ for {}: {}",
                                           th::params_str(c.params), d));
    // Both iterations: feeds in, forward, the prediction back on the host, into a vector the
    // loop keeps (as a serving loop would) rather than fresh pages on every step.
    std::vector<float> prediction;
    r.static_infer_s = record(e, c, "static", "inference",
                              th::time_host(e.loop(), [&] { p.run(infeeds); p.read_into(p.prediction, prediction); }, sync),
                              p.timings.total() * 1e-3);
    record(e, c, "static", "inference", th::time_host(e.loop(), [&] { p.run(); }, sync), -1, "replay");
    r.dynamic_infer_s = record(e, c, "dynamic", "inference",
                               th::time_host(e.loop(), [&] { dyn.run_inference(infeeds, prediction); }, sync));
  }
  for (auto [mode, s, d] : {std::tuple<const char*, double, double>{"train", r.static_train_s, r.dynamic_train_s},
                            {"inference", r.static_infer_s, r.dynamic_infer_s}}) {
    if (s <= 0) continue;  // not measured
    th::Params p = c.params;
    p.emplace("mode", mode);
    e.report().add_value("speedup_static_over_dynamic", p, d / s, "x", "higher");
  }
  return r;
}

}  // namespace tg::train
