// What the graph passes buy (static/passes): the same configuration compiled with each
// pass set, its training step and inference replay measured with the inputs resident on
// the device (the computation alone), the kernels each launches, and the speedup over
// passes=none, all in one run; the loss curve with every pass against the unfused one;
// and, on CUDA, the GEMM floor: cuBLASLt's fastest algorithm for each GEMM of the unfused
// step, run back to back on varied data (gemm_floor below), which no schedule of these
// GEMMs can beat.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/train/train_bench.h"
#include "static/compiler.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "experiments/harness/gpu_timing.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#endif

namespace th = tg::harness;

namespace tg::train {

std::vector<PassSet> pass_sweep() {
  std::vector<PassSet> s{PassSet::none()};
  for (int i = 0; i < kNumPasses; ++i)  // the passes of all(), each alone
    if (PassSet::all().has(static_cast<PassId>(i))) s.push_back(PassSet::only(static_cast<PassId>(i)));
  s.push_back(PassSet::all());
  // The layout option, alone and on top of all: NCHW against NHWC on the CNNs (the sweep
  // skips both on models without convolutions, only_convolution_passes).
  s.push_back(PassSet::only(PassId::channels_last));
  s.push_back(PassSet::all().with(PassId::channels_last));
  return s;
}

namespace {

th::Params pass_params(const Config& c, const std::string& mode, PassSet set) {
  th::Params p = c.params;
  p.emplace("executor", "static");
  p.emplace("mode", mode);
  p.emplace("passes", set.str());
  return p;
}

CompiledPlan compile_with(const Config& c, const std::shared_ptr<Backend>& be, bool training, PassSet set,
                          const PassOptions& opt) {
  CompileOptions co;
  co.training = training;
  co.backend = be;
  co.passes = set;
  co.pass_options = opt;
  co.inputs_in_graph = false;  // so that the replay can leave the inputs where they are
  co.precision = c.precision;
  co.train = c.train_opt;
  co.train.loss_scale = c.loss_scale;
  co.seed = c.seed;
  return compile(training ? c.fn : c.infer_fn, co);
}

// The replay with the inputs resident: GPU time per replay, replays back to back (CUDA);
// the schedule run as is on the CPU.
std::vector<double> time_replay(th::Experiment& e, const std::shared_ptr<Backend>& be, CompiledPlan& p) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (be->kind() == DeviceKind::cuda) {
    // Held (gpu_timing.h): the device's time per replay, as gemm_floor's GEMMs are timed
    // back to back, without the host's graph launch before each sample.
    th::LoopOptions loop = e.loop();
    loop.hold_gpu = true;
    return th::time_gpu(loop, [&](void*) { p.exec->replay_resident(); }, backend_stream(*be));
  }
#endif
  return th::time_host(e.loop(), [&] { p.run(); }, [&] { be->synchronize(); });
}

#ifdef TWOGRAPH_HAVE_CUDA
// The GEMM floor of a plan: cuBLASLt's fastest algorithm for each of its GEMMs (the
// product alone, no epilogue), each on its own operands of pseudo-random data.
//  - sequence_s: those GEMMs back to back in the plan's order, timed held like pass_replay:
//    what the step's GEMMs cost under the step's conditions (a long busy GPU settles at a
//    lower clock than a short burst). This is the floor the replay is compared with.
//  - isolated_s: each GEMM's best time alone (10 calls), summed;
//  - constant_s: the same on a constant fill, as the floor was once timed: a product of
//    constant data draws less power and runs faster, so it flatters the floor.
struct GemmFloor {
  double sequence_s = 0, isolated_s = 0, constant_s = 0;
  int gemms = 0;
};

GemmFloor gemm_floor(th::Experiment& e, const CompiledPlan& p, CudaBackend& be) {
  namespace kc = kernels::cuda;
  const kernels::CudaExecContext& ctx = be.context();
  const size_t ws = ctx.lt->max_workspace();
  GemmFloor f;
  std::vector<std::unique_ptr<kc::LtGemm>> gemms;
  std::vector<std::unique_ptr<kc::LtOperands>> operands;
  for (const ScheduledOp& op : p.exec->schedule()) {
    if (!op_in_family(op.call.op, "matmul")) continue;
    // The floor is of the unfused plan, whose GEMMs are one cuBLASLt call each.
    if (op.call.op == OpKind::matmul_heads)
      throw std::logic_error("gemm_floor: matmul_heads runs one GEMM per head; time the unfused plan");
    kc::LtKey k = kc::gemm_key(op.call, ctx);
    k.epilogue = kc::LtEpilogue::none;  // the product alone: what the floor is of
    k.accumulate = false;
    double alone = 0;
    gemms.push_back(kc::LtTuner::best(ctx.lt->handle(), k, ws, 16, ctx.stream, kc::LtOperandFill::random, &alone));
    f.isolated_s += alone;
    f.constant_s += kc::lt_best_seconds(ctx.lt->handle(), k, ws, 16, ctx.stream, kc::LtOperandFill::constant);
    operands.push_back(std::make_unique<kc::LtOperands>(k, gemms.back()->workspace_bytes(),
                                                        kc::LtOperandFill::random, ctx.stream));
    ++f.gemms;
  }
  th::LoopOptions loop = e.loop();
  loop.hold_gpu = true;
  const std::vector<double> samples = th::time_gpu(loop, [&](void* s) {
    for (size_t i = 0; i < gemms.size(); ++i) {
      const kc::LtOperands& x = *operands[i];
      gemms[i]->run(ctx.lt->handle(), x.a, x.b, x.c, x.d, x.bias, x.ws, x.ws_bytes, static_cast<cudaStream_t>(s));
    }
  }, ctx.stream);
  f.sequence_s = th::summarize(samples).median;
  return f;
}
#endif

}  // namespace

namespace {

// The CNN passes (bn_fold, conv, channels_last) and nothing else: alone they leave a model
// without convolutions as it is, so the sweep does not time them there. all with
// channels_last is all on such a model, which the sweep's all row has timed.
bool only_convolution_passes(const PassSet& set) {
  if (set == PassSet::all().with(PassId::channels_last)) return true;
  return PassSet::only(PassId::bn_fold).with(PassId::conv).with(PassId::channels_last).contains(set);
}

bool has_op(const Config& c, OpKind op) {
  Graph g;
  RecordingBuilder b(g);
  c.fn(b);
  for (const Node& n : g.nodes)
    if (n.op == op) return true;
  return false;
}

// The attention pass alone: it fuses the two forwards of a training step's fused attention
// (static/passes/attention.cpp); a model without the op, or inference, has nothing for it.
bool attention_pass_idle(const PassSet& set, bool training, bool fused_attention) {
  return set == PassSet::only(PassId::attention) && !(training && fused_attention);
}

}  // namespace

namespace {

// The loss curve of `set` against the unfused one (measure_passes), and the check that the
// fused step computes what the unfused step computes. The curves run free, each plan from
// its own weights: a network that amplifies small differences (ResNet-50 at 224, whose loss
// climbs at lr 0.01 on random data) carries one step's rounding into a drift of percents
// within twenty steps, which says how chaotic the dynamics are, not whether a pass is right.
// So the check starts both plans from the same parameters and optimizer state
// (ParameterStore::assign_from) and compares two steps: the first loss (the forward), and
// the second (the forward after one backward and update of each). `unchecked`: why the two
// runs' algorithms differ in more than the order of their sums (recorded, not held to the
// tolerance); empty where the difference must stay within it.
void loss_curve(th::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c, PassSet every,
                const PassOptions& opt, int loss_steps, const std::string& unchecked) {
  CompiledPlan none = compile_with(c, be, true, PassSet::none(), opt);
  CompiledPlan all = compile_with(c, be, true, every, opt);
  auto feeds = [&](int i) { return bench::model_feeds(c.fn, data_seed(c, 500 + static_cast<uint64_t>(i) * 7), c.classes); };
  auto rel = [](double a, double b) { return std::fabs(b - a) / std::max(std::fabs(a), 1e-30); };
  double drift = 0;
  std::vector<double> la;
  for (int i = 0; i < loss_steps; ++i) {
    const Feeds f = feeds(i);
    const double a = none.step(f), b = all.step(f);
    la.push_back(b);
    drift = std::max(drift, rel(a, b));
  }
  // Pairs of steps from the unfused plan's state along its curve: as many steps as the curve.
  double worst = 0;
  std::vector<std::string> unsynced;
  for (int i = 0; i < (loss_steps + 1) / 2 && unsynced.empty(); ++i) {
    unsynced = all.exec->parameters().assign_from(none.exec->parameters());
    for (int k = 0; k < 2 && unsynced.empty(); ++k) {
      const Feeds f = feeds(loss_steps + 2 * i + k);
      const double a = none.step(f), b = all.step(f);
      worst = std::max(worst, rel(a, b));
    }
  }
  // Relative, per step: fp32 GEMMs summed in another order; in bf16 and fp16 the unfused graph
  // also rounds each intermediate to 16 bits where a fused kernel keeps it in f32, so one
  // rounding of the dtype (2^-8, 2^-11) is allowed on top.
  const double kTolerance = c.precision == Precision::bf16   ? 0x1p-8
                            : c.precision == Precision::fp16 ? 1e-4 + 0x1p-11
                                                             : 1e-4;
  std::string why_unchecked = unchecked;
  if (why_unchecked.empty() && !unsynced.empty())
    why_unchecked = fmt::format("the plan with passes {} holds state the unfused one lacks ({}), so the two cannot "
                                "start a step from the same state", every.str(), unsynced.front());
  th::Measurement m;
  m.name = "loss_curve";
  m.params = pass_params(c, "train", every);
  m.unit = "loss";
  m.timer = "value";
  m.samples = la;
  m.extra["steps"] = loss_steps;
  m.extra["max_rel_diff_vs_none"] = drift;
  m.extra["max_step_rel_diff_vs_none"] = worst;
  m.extra["tolerance"] = kTolerance;
  m.extra["checked"] = why_unchecked.empty() ? 1 : 0;
  e.report().add(std::move(m));
  if (!why_unchecked.empty()) {
    e.report().skip(fmt::format("loss_curve check passes={} {}", every.str(), th::params_str(c.params)), why_unchecked);
    return;
  }
  if (worst > kTolerance)
    throw std::runtime_error(fmt::format("tg-train: with passes {} a training step of {} differs from the unfused "
                                         "one's, from the same weights, by {:.3g} (relative), more than {:.2g}",
                                         every.str(), th::params_str(c.params), worst, kTolerance));
}

}  // namespace

void measure_passes(th::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c,
                    const std::vector<PassSet>& sets, const PassOptions& opt, int loss_steps) {
  TG_NVTX_RANGE("passes");
  const bool cuda = be->kind() == DeviceKind::cuda;
  // The model recorded once, not per pass set and mode.
  const bool convolutions = has_op(c, OpKind::conv2d), fused_attention = has_op(c, OpKind::attention);
  for (const char* mode : {"train", "inference"}) {
    const bool training = std::string(mode) == "train";
    if (training && !c.train) continue;
    const Feeds feeds = bench::model_feeds(training ? c.fn : c.infer_fn, data_seed(c, 42), c.classes);
    double none_step = 0, none_replay = 0;
    for (const PassSet& set : sets) {
      if (!set.empty() && only_convolution_passes(set) && !convolutions) {
        if (training || !c.train)
          e.report().skip(fmt::format("pass_step passes={} model={}", set.str(), c.model),
                          "these passes rewrite convolutions and batch norms; this model has none");
        continue;
      }
      if (attention_pass_idle(set, training, fused_attention)) {
        e.report().skip(fmt::format("pass_step passes={} model={} mode={}", set.str(), c.model, mode),
                        "the attention pass fuses a training step's attention and attention_lse; this graph has none");
        continue;
      }
      CompiledPlan p = compile_with(c, be, training, set, opt);
      const th::Params params = pass_params(c, mode, set);
      auto sync = [&] { be->synchronize(); };
      const int kernels = p.exec->kernels_per_run();
      // The whole iteration: the feeds copied in, the graph, the loss (or the prediction) back
      // into a vector kept from step to step.
      std::vector<float> prediction;
      auto& step = e.report().add_time("pass_step", params,
                                       th::time_host(e.loop(), [&] {
                                         if (training) p.step(feeds);
                                         else { p.run(feeds); p.read_into(p.prediction, prediction); }
                                       }, sync));
      p.run(feeds);
      auto& replay = e.report().add_time("pass_replay", params, time_replay(e, be, p), cuda ? "gpu" : "host");
      std::vector<th::Measurement*> rows = {&step, &replay};
      // On CUDA also the replay as a framework's user times it (launch, then wait, the inputs
      // already on the device), what PyTorch's CUDA Graph replay is timed as
      // (experiments/peers/torch_baseline.py replays its graph on its static input tensors).
      if (cuda)
        rows.push_back(&e.report().add_time(
            "pass_replay_host", params, th::time_host(e.loop(), [&] { p.exec->replay_resident(); }, sync)));
      for (th::Measurement* m : rows) {
        m->extra["kernels"] = kernels;
        m->extra["nodes"] = static_cast<double>(p.graph->nodes.size());
        // The casts the precision put in the plan (none in fp32 and tf32): the row's graph is
        // the one its precision parameter names.
        m->extra["casts"] = static_cast<double>(std::count_if(
            p.graph->nodes.begin(), p.graph->nodes.end(), [](const Node& n) { return n.op == OpKind::cast; }));
        m->extra["passes_ms"] = p.timings.passes;
        // What the numbers are of: the plan's pass options and, on CUDA, which kernels the
        // backend chose from (docs/architecture.md, Configuration).
        bench::add_option_extras(*m, "pass", p.pass_options.values());
#ifdef TWOGRAPH_HAVE_CUDA
        if (cuda) bench::add_option_extras(*m, "cuda", static_cast<const CudaBackend&>(*be).options().values());
#endif
      }
      if (set.empty()) {
        none_step = step.stats.median;
        none_replay = replay.stats.median;
      } else if (none_step > 0) {
        step.extra["speedup_vs_none"] = none_step / step.stats.median;
        replay.extra["speedup_vs_none"] = none_replay / replay.stats.median;
      }
#ifdef TWOGRAPH_HAVE_CUDA
      if (cuda && set.empty()) {
        const GemmFloor floor = gemm_floor(e, p, static_cast<CudaBackend&>(*be));
        th::Params fp = params;
        fp.erase("passes");
        auto& f = e.report().add_value("gemm_floor", fp, floor.sequence_s, "s", "lower");
        f.extra["gemms"] = floor.gemms;
        f.extra["replay_over_floor"] = none_replay / floor.sequence_s;
        f.extra["isolated_sum_s"] = floor.isolated_s;
        f.extra["constant_data_sum_s"] = floor.constant_s;
      }
#endif
    }
  }
  if (!c.train) return;
  // The loss curve with every pass measured (all, or all with heads) against the unfused
  // one, from the same weights and batches; the layout option (channels_last) on a curve
  // of its own, every pass with it, so that the all row stays the fusion passes'. On the
  // CPU the fused kernels compute what the ops they replace compute (the same bits); on
  // CUDA the GEMM epilogues round differently, within the tolerance. Not held to it: runs
  // whose convolutions sum with atomics, and on cuDNN the NHWC curve, whose algorithms differ
  // (ResNet-50 at 224 drifts by about 1% in two steps; the curves are recorded).
  PassSet every = PassSet::none();
  for (const PassSet& set : sets) every = every | set;
  const bool layout = every.has(PassId::channels_last);
  PassSet fusion = PassSet::none();
  for (int i = 0; i < kNumPasses; ++i)
    if (every.has(static_cast<PassId>(i)) && static_cast<PassId>(i) != PassId::channels_last)
      fusion = fusion.with(static_cast<PassId>(i));
  std::string atomics, nhwc;
#ifdef TWOGRAPH_HAVE_CUDA
  if (cuda) {
    const CudaBackendOptions& o = static_cast<const CudaBackend&>(*be).options();
    if ((convolutions && !o.conv_deterministic) || (fused_attention && !o.attention_deterministic))
      atomics = "conv_deterministic=0 or attention_deterministic=0: kernels that sum with atomics, whose bits vary "
                "from run to run";
    if (convolutions && o.conv_cudnn)
      nhwc = "cuDNN chooses other algorithms for NHWC than for NCHW (other sums, not only another order)";
  }
#endif
  if (!fusion.empty()) loss_curve(e, be, c, fusion, opt, loss_steps, atomics);
  if (layout && convolutions)
    loss_curve(e, be, c, fusion.with(PassId::channels_last), opt, loss_steps, atomics.empty() ? nhwc : atomics);
}

}  // namespace tg::train
