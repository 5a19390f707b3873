#pragma once
// tg-train's measurements for one model configuration: the loss curves of both
// executors (asserted bitwise equal), then training steps and inference, static
// vs dynamic, each timed per iteration (host time after a synchronize).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dynamic/trainer.h"
#include "graph/precision.h"
#include "experiments/harness/harness.h"
#include "graph/models.h"
#include "graph/training.h"
#include "kernels/backend.h"
#include "static/passes/pass.h"

namespace tg::train {

struct Config {
  std::string model;   // "mlp", "transformer", "resnet", ... (the plot's model parameter)
  std::string sweep;   // which sweep it belongs to: "mlp_w256_d8", "mlp_w4096_d4", "transformer"
  int64_t batch = 0;
  harness::Params params;  // model, sweep, batch and the shape parameters
  ModelFn fn;        // with the loss: training
  ModelFn infer_fn;  // without: inference (both executors then run the same ops)
  int64_t rows = 0;  // rows of its GEMMs: batch (mlp), batch * seq (transformer)
  bool train = true;     // false: inference only (a graph file without a loss, tg-graph bench)
  int64_t classes = 10;  // labels are class indices in [0, classes)
  // Language models: the loss curve's batches are windows of graph/corpus.h's synthetic text
  // (ids and labels [batch, seq], the labels one token on), so that the curve shows learning;
  // 0: random ids and labels like every other model's data.
  int64_t corpus_seq = 0;
  Precision precision = Precision::fp32;  // both executors' (graph/precision.h)
  LossScaleOptions loss_scale = {};       // both executors' (graph/loss_scale.h); unset: on for fp16
  TrainOptions train_opt = {};            // both executors' update rule and clipping (graph/training.h)
  // Both executors' parameter initialization and dropout masks (CompileOptions::seed,
  // DynamicOptions::seed) and the data's seeds (data_seed): 0 gives the fixed seeds the
  // reports have always been made with.
  uint64_t seed = 0;
};

// The seed of one batch of c's data: `base` (which batch) moved by c.seed, `base` itself at seed 0.
inline uint64_t data_seed(const Config& c, uint64_t base) { return base + c.seed * 0x9e3779b97f4a7c15ULL; }

// The dynamic executor's options for c: its precision, loss scaling and update rule, inference or training.
DynamicOptions dynamic_options(const Config& c, bool inference = false);

// c trains with t in both executors; every row of c carries t's optimizer and clip_grad_norm
// params (what tg-graph bench's rows pair with).
void set_train_options(Config& c, const TrainOptions& t);

Config mlp_config(const std::string& sweep, int64_t batch, int64_t width, int depth);
Config transformer_config(int64_t batch, int64_t seq, int64_t d_model, int64_t heads);
// The convolutional models (graph/models.h): rows = batch * image * image, the rows of
// the convolutions as implicit GEMMs.
// GPT-2 (graph/models.h gpt2): rows batch * seq, labels in [0, vocab); its rows add tokens/s.
Config gpt2_config(const std::string& sweep, const Gpt2Config& g);
Config resnet_config(const std::string& sweep, const ResNetConfig& r);
// model: the row's model parameter ("vgg", or "vgg16" for the ImageNet network).
Config vgg_config(const std::string& sweep, const VggConfig& v, const std::string& model = "vgg");
// The ImageNet ResNets; model: "resnet18" or "resnet50", the row's model parameter.
Config resnet_imagenet_config(const std::string& model, const std::string& sweep, const ImageNetResNetConfig& r);

// Median seconds per iteration of each executor and mode; 0 where not measured.
struct Result {
  double static_train_s = 0, dynamic_train_s = 0, static_infer_s = 0, dynamic_infer_s = 0;
};

// loss_steps: steps of the loss-curve check (throws when the curves differ).
// Also what `tg-graph bench` runs for a graph file (tools/tg-graph/bench.cpp).
Result measure(harness::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c, int loss_steps);

// none, each pass alone, all (static/passes/pass.h).
std::vector<PassSet> pass_sweep();
// The graph passes on one configuration (passes_bench.cpp): pass_step and pass_replay per
// set (kernels per run, speedup over none, the options the plan and the backend ran with),
// the loss curve with every pass against none (throws beyond its tolerance), and on CUDA the
// gemm_floor row. Every plan is compiled with `opt`.
void measure_passes(harness::Experiment& e, const std::shared_ptr<Backend>& be, const Config& c,
                    const std::vector<PassSet>& sets, const PassOptions& opt, int loss_steps);

}  // namespace tg::train
