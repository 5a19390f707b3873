// tg-train: the whole loop. MLP and transformer block (and, with --models, the CIFAR
// ResNet, a VGG network and the ImageNet ResNet-18, ResNet-50 and VGG-16), a batch sweep, static vs
// dynamic iterations/s for training steps (SGD momentum, or --optimizer) and inference, loss
// curves asserted bitwise equal, and the batch where the run turns from
// overhead-bound to compute-bound.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/harness/exec_common.h"
#include "experiments/harness/ranks.h"
#include "experiments/train/data_parallel_bench.h"
#include "experiments/train/train_bench.h"

namespace th = tg::harness;
using namespace tg;

namespace {

// Below this static/dynamic speedup the executor's overhead no longer matters.
constexpr double kComputeBoundSpeedup = 1.1;

// The CNN sweeps: ResNet-20 (width 16) and VGG-11 (width 64) at CIFAR's 32 x 32; on the
// CPU with --quick, smaller ones (its convolutions are the reference loops).
void cnn_configs(const std::set<std::string>& models, bool quick, bool gpu, std::vector<train::Config>& cs) {
  const bool small = quick && !gpu;
  if (models.count("resnet")) {
    ResNetConfig r;
    if (small) {
      r.image = 16;
      r.width = 8;
      r.blocks = 1;
    }
    const std::string sweep = small ? "resnet8_w8_i16" : "resnet20_w16";
    for (int64_t b : small ? std::vector<int64_t>{4, 8} : quick ? std::vector<int64_t>{32, 128} : std::vector<int64_t>{32, 64, 128, 256}) {
      r.batch = b;
      cs.push_back(train::resnet_config(sweep, r));
    }
  }
  if (models.count("vgg")) {
    VggConfig v;
    v.stages = {1, 1, 2, 2, 2};
    if (small) {
      v.image = 16;
      v.width = 8;
      v.stages = {1, 1, 2, 2};
      v.fc = 64;
    }
    const std::string sweep = small ? "vgg_w8_i16" : "vgg11_w64";
    for (int64_t b : small ? std::vector<int64_t>{4, 8} : quick ? std::vector<int64_t>{32, 128} : std::vector<int64_t>{32, 64, 128, 256}) {
      v.batch = b;
      cs.push_back(train::vgg_config(sweep, v));
    }
  }
}

// The ImageNet networks at 224 x 224 on the GPU. The CPU's reference convolutions take
// minutes for one such training step, so there they run the same networks at 32 x 32, batch 2,
// without --quick, and are skipped with --quick.
void imagenet_configs(const std::set<std::string>& models, bool quick, bool gpu, std::vector<train::Config>& cs,
                      th::Report& rep) {
  const int64_t image = gpu ? 224 : 32;
  const std::vector<int64_t> batches = gpu ? (quick ? std::vector<int64_t>{32} : std::vector<int64_t>{32, 64})
                                           : std::vector<int64_t>{2};
  const std::string sweep_tail = fmt::format("_i{}", image);
  for (const char* model : {"resnet18", "resnet50", "vgg16"}) {
    if (!models.count(model)) continue;
    if (quick && !gpu) {
      rep.skip(fmt::format("{} image=224", model),
               "--quick on the CPU: the reference convolutions take minutes per training step of an ImageNet network; "
               "run on a GPU, or without --quick for the same network at 32 x 32, batch 2");
      continue;
    }
    for (int64_t b : batches) {
      const std::string m = model, sweep = m + sweep_tail;
      if (m == "vgg16")
        cs.push_back(train::vgg_config(sweep, at_size(vgg16_config(), b, image), m));
      else
        cs.push_back(train::resnet_imagenet_config(
            m, sweep, at_size(m == "resnet18" ? resnet18_config() : resnet50_config(), b, image)));
    }
  }
}

// GPT-2: on a GPU GPT-2 small (vocabulary 50257, 12 layers, d 768) at batch 4, sequence 256
// (and batch 8, sequence 1024 without --quick); on the CPU a two-layer GPT-2 of width 64 over
// 512 tokens, whose steps take milliseconds there.
void gpt2_configs(const std::set<std::string>& models, bool quick, bool gpu, float dropout,
                  std::vector<train::Config>& cs) {
  if (!models.count("gpt2")) return;
  if (!gpu) {
    Gpt2Config t = gpt2_tiny_config();
    t.dropout = dropout;
    cs.push_back(train::gpt2_config("gpt2_tiny", t));
    return;
  }
  struct S { int64_t batch, seq; };
  for (const S& s : quick ? std::vector<S>{{4, 256}} : std::vector<S>{{4, 256}, {8, 1024}}) {
    Gpt2Config g = gpt2_small_config();
    g.batch = s.batch;
    g.seq = s.seq;
    g.dropout = dropout;
    cs.push_back(train::gpt2_config("gpt2_small", g));
  }
}

std::vector<train::Config> configs(const std::set<std::string>& models, bool quick, bool gpu, int64_t max_rows,
                                   float gpt2_dropout, th::Report& rep) {
  std::vector<train::Config> cs;
  std::vector<int64_t> batches{32, 64, 128, 256, 512, 1024, 2048, 4096};
  if (quick) batches = gpu ? std::vector<int64_t>{32, 256, 1024, 4096} : std::vector<int64_t>{32, 256};
  if (models.count("mlp")) {
    for (int64_t b : batches) cs.push_back(train::mlp_config("mlp_w256_d8", b, 256, 8));
    if (quick && !gpu)
      rep.skip("mlp_w4096_d4 batch=1024", "--quick on the CPU: ~275 GFLOP per training step takes seconds here; run "
                                          "without --quick, or on a GPU");
    else
      cs.push_back(train::mlp_config("mlp_w4096_d4", 1024, 4096, 4));
  }
  struct T { int64_t batch, seq, d, heads; };
  std::vector<T> ts{{1, 64, 128, 4}, {8, 64, 128, 4}, {16, 128, 256, 8}, {32, 256, 512, 8}};
  if (quick) ts = gpu ? std::vector<T>{{1, 64, 128, 4}, {8, 64, 128, 4}, {32, 256, 512, 8}} : std::vector<T>{{1, 64, 128, 4}, {8, 64, 128, 4}};
  if (models.count("transformer"))
    for (const T& t : ts) cs.push_back(train::transformer_config(t.batch, t.seq, t.d, t.heads));
  cnn_configs(models, quick, gpu, cs);
  imagenet_configs(models, quick, gpu, cs, rep);
  gpt2_configs(models, quick, gpu, gpt2_dropout, cs);
  if (max_rows <= 0) return cs;
  std::vector<train::Config> kept;
  for (train::Config& c : cs) {
    if (c.rows <= max_rows) kept.push_back(std::move(c));
    else rep.skip(th::params_str(c.params), fmt::format("{} rows > --max-rows {}", c.rows, max_rows));
  }
  return kept;
}

// For each sweep and mode: the first batch (ascending) whose speedup falls below 1.1x.
void crossover(th::Experiment& e, const std::vector<train::Config>& cs, const std::vector<train::Result>& rs) {
  std::map<std::string, std::vector<size_t>> by_sweep;
  for (size_t i = 0; i < cs.size(); ++i) by_sweep[cs[i].sweep].push_back(i);
  for (const auto& [sweep, idx] : by_sweep) {
    if (idx.size() < 2) continue;  // one point is not a sweep
    for (const char* mode : {"train", "inference"}) {
      const bool train = std::string(mode) == "train";
      int64_t found = -1;
      double at = 0;
      for (size_t i : idx) {
        const double s = train ? rs[i].dynamic_train_s / rs[i].static_train_s
                               : rs[i].dynamic_infer_s / rs[i].static_infer_s;
        if (s < kComputeBoundSpeedup) {
          found = cs[i].batch;
          at = s;
          break;
        }
      }
      if (found < 0) {
        e.report().skip(fmt::format("compute_bound_batch sweep={} mode={}", sweep, mode),
                        fmt::format("static stays >= {:.1f}x faster up to batch {}: still overhead-bound at the "
                                    "largest batch swept", kComputeBoundSpeedup, cs[idx.back()].batch));
        continue;
      }
      auto& m = e.report().add_value("compute_bound_batch", {{"sweep", sweep}, {"mode", mode}},
                                     static_cast<double>(found), "batch", "lower");
      m.extra["speedup_at_batch"] = at;
      m.extra["threshold"] = kComputeBoundSpeedup;
    }
  }
}


// --passes: "sweep", "none" (no pass measurements), or one set (measured against none).
// A bad set is bad usage: the harness maps std::invalid_argument to exit 2.
std::vector<PassSet> pass_sets(const std::string& text) {
  if (text == "sweep") return train::pass_sweep();
  const PassSet one = bench::parse_passes_flag(text);
  if (one.empty()) return {};
  return {PassSet::none(), one};
}

// The configurations the passes are measured on: mlp width 256 at batch 32, and the largest
// configuration of every other sweep (the width-4096 mlp, the largest transformer, GPT-2,
// each CNN: the sizes their comparisons with PyTorch are made at); on the CPU in --quick,
// the smallest of each sweep (what the main job can run there).
bool is_pass_target(const train::Config& c, const std::vector<train::Config>& all, bool small) {
  int64_t lo = -1, hi = -1;
  for (const train::Config& o : all)
    if (o.sweep == c.sweep) {
      lo = lo < 0 ? o.rows : std::min(lo, o.rows);
      hi = std::max(hi, o.rows);
    }
  if (small) return c.rows == lo;
  if (c.sweep == "mlp_w256_d8") return c.batch == 32;
  return c.rows == hi;
}

}  // namespace

int main(int argc, char** argv) {
  // --gpus N: this process starts the N ranks and waits for them (experiments/harness/ranks.h).
  if (const std::optional<int> status = th::launch_gpu_ranks(argc, argv)) return *status;
  th::Experiment ex("tg-train", "The whole loop: static vs dynamic training steps and inference, MLP and transformer",
                    "tg-train --device auto --json docs/results/train.json --csv train.csv");
  int loss_steps = 20;
  int64_t max_rows = 0;
  std::string passes = "sweep";
  ex.add_option("--passes", passes,
                "The graph passes measured on mlp width 256 batch 32 and the largest configuration of every other "
                "model (the smallest of each model with --quick on the CPU): sweep (none, each pass of all alone, all), "
                "none (skip them), or one set such as all or linear,rows (measured against none)");
  std::string pass_options;
  bench::add_pass_options_flag(ex, pass_options);
  std::string precision_text = "fp32";
  ex.add_option("--precision", precision_text,
                "Both executors' precision: fp32, tf32 (the CUDA GEMMs in TF32; the graph stays f32), bf16 or fp16 "
                "(autocast: GEMMs in the low type on the tensor cores, softmax, layernorm, reductions and losses in f32, f32 "
                "master weights). Rows other than fp32 carry a precision parameter");
  std::string loss_scale_text = "auto";
  ex.add_option("--loss-scale", loss_scale_text,
                "Dynamic loss scaling (skip a step whose gradients hold an inf or a nan, grow or back off the scale, as "
                "torch.amp.GradScaler): auto (on for fp16 only), on or off. Its loss_curve rows give skipped_steps and "
                "the final loss_scale; on or off adds a loss_scale parameter to every row");
  std::string optimizer_text = "momentum";
  ex.add_option("--optimizer", optimizer_text,
                "Both executors' update rule: sgd, momentum (SGD with momentum 0.9) or adamw (torch.optim.AdamW's "
                "defaults: betas 0.9, 0.999, eps 1e-8, weight decay 0.01); lr 0.01. Every row carries it as the "
                "optimizer parameter");
  double clip_grad_norm = 0.0;
  ex.add_option("--clip-grad-norm", clip_grad_norm,
                "Clip the gradients to this global L2 norm before each update (torch.nn.utils.clip_grad_norm_); 0: "
                "no clipping. Every row carries it as the clip_grad_norm parameter", 0.0, 1e30);
  std::string models_text = "mlp,transformer";
  ex.add_option("--models", models_text,
                "The models to run, comma-separated: mlp, transformer, resnet (the CIFAR ResNet-20), vgg (VGG-11 at "
                "32 x 32), resnet18, resnet50, vgg16 (at 224 x 224 on a GPU; on the CPU at 32 x 32, batch 2, and "
                "skipped with --quick), gpt2 (GPT-2 small on a GPU, a two-layer one on the CPU; rows add tokens/s)");
  double dropout = 0.0;
  ex.add_option("--dropout", dropout,
                "GPT-2's dropout probability (graph/dropout.h: on the embeddings and on the attention and MLP outputs, "
                "as GPT-2 trains with 0.1); 0: none. Its rows carry it as the dropout parameter when > 0", 0.0, 0.99);
  int64_t seed = 0;
  ex.add_option("--seed", seed,
                "Both executors' parameter initialization and dropout masks, and the data's seeds; 0 (the default): the "
                "fixed seeds of every earlier report. Recorded in the report as run.options.train.seed",
                0, int64_t{1} << 62);
  ex.add_option("--loss-steps", loss_steps, "Training steps of the loss-curve check (both executors)", 1, 10000);
  train::DataParallelFlags dp_flags;
  train::add_data_parallel_flags(ex, dp_flags);
  ex.add_option("--max-rows", max_rows,
                "Skip the configurations whose GEMMs have more rows (batch, or batch*seq) than this; 0: none skipped "
                "(for slow tools such as compute-sanitizer)", 0, int64_t{1} << 40);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const PassOptions po = bench::resolve_pass_options(e, pass_options);
    const Precision precision = bench::precision_option(precision_text, e.device() >= 0);
    std::optional<bool> loss_scale;
    if (loss_scale_text == "on") loss_scale = true;
    else if (loss_scale_text == "off") loss_scale = false;
    else if (loss_scale_text != "auto")
      throw th::UsageError(fmt::format("--loss-scale: {} is not a choice; use auto, on or off", quote_name(loss_scale_text)));
    TrainOptions train_opt;
    if (!parse_optimizer(optimizer_text, train_opt))
      throw th::UsageError(fmt::format("--optimizer: {} is not an optimizer; use sgd, momentum or adamw",
                                       quote_name(optimizer_text)));
    train_opt.clip_grad_norm = static_cast<float>(clip_grad_norm);
    auto be = make_backend(e.device(), e.cuda_options(), precision == Precision::tf32);
    const bool gpu = be->kind() == DeviceKind::cuda;
    if (!gpu) {
      e.report().skip("static_plain", "CPU backend: no CUDA Graph, the static schedule runs as is (executor=static)");
      e.report().skip("feed", "CPU backend: no pinned staging, the feeds go straight into the input buffers");
    }
    const std::vector<PassSet> sets = pass_sets(passes);  // a bad set is refused before anything runs
    const std::set<std::string> models = bench::parse_models_flag(models_text, {"gpt2"});
    std::vector<train::Config> cs = configs(models, e.quick(), gpu, max_rows, static_cast<float>(dropout), e.report());
    for (train::Config& c : cs) {
      c.precision = precision;
      if (precision != Precision::fp32) c.params.emplace("precision", precision_name(precision));
      c.loss_scale.enabled = loss_scale;
      if (loss_scale) c.params.emplace("loss_scale", *loss_scale ? "on" : "off");
      train::set_train_options(c, train_opt);
      c.seed = static_cast<uint64_t>(seed);
    }
    e.record_options("train", {{"seed", seed}});
    if (const std::optional<train::DataParallelRun> run =
            train::data_parallel_run(e, dp_flags, gpu, precision == Precision::tf32)) {
      th::Progress bar(cs.size(), "tg-train data parallel");
      for (const train::Config& c : cs) {
        train::measure_data_parallel(e, c, *run);
        bar.tick(th::params_str(c.params));
      }
      return;
    }
    std::vector<train::Result> rs;
    th::Progress bar(cs.size(), "tg-train");
    for (const train::Config& c : cs) {
      rs.push_back(train::measure(e, be, c, loss_steps));
      if (!sets.empty() && is_pass_target(c, cs, e.quick() && !gpu))
        train::measure_passes(e, be, c, sets, po, loss_steps);
      bar.tick(th::params_str(c.params));
    }
    crossover(e, cs, rs);
    bench::report_conv_algorithms(e.report(), *be);
    bench::report_attention_engines(e.report(), *be);
  });
}
