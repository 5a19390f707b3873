// tg-pipeline: the data path of a training step. Host preprocessing (normalize +
// augment a synthetic batch) -> H2D -> compute (a fixed kernel workload, see
// host_stage.h) -> D2H (loss and mean), run serialized (one stream, the host waits
// for every batch) and overlapped (copy + compute streams, pinned double buffers,
// events), with per-stage times and the GPU busy fraction (compute / wall time),
// at each compute work level of a sweep from input-bound to compute-bound.
// Checked first: overlapped == serialized bitwise, and against the CPU reference.
// With --images, instead: the seed's image batch into a CNN's training step (image_run.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/pipeline/gpu_pipeline.h"
#include "experiments/pipeline/host_stage.h"
#include "experiments/pipeline/image_run.h"
#include "experiments/harness/exec_common.h"

namespace th = tg::harness;
using namespace tg::pipeline;

namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double mean(const std::vector<double>& v) { return v.empty() ? 0.0 : sum(v) / static_cast<double>(v.size()); }

bool close(float a, float ref) { return std::fabs(a - ref) <= 1e-6f + 1e-4f * std::fabs(ref); }

void check_vs_cpu(const std::vector<std::vector<float>>& raw, const PassResult& r, const PipelineConfig& cfg) {
  std::vector<float> x(static_cast<size_t>(cfg.elems));
  for (size_t i = 0; i < std::min<size_t>(2, raw.size()); ++i) {
    preprocess(raw[i].data(), x.data(), cfg.elems, cfg.row, static_cast<int64_t>(i));
    const Metrics ref = compute_cpu(x.data(), cfg.elems, cfg.work);
    if (!close(r.metrics[i].loss, ref.loss) || !close(r.metrics[i].mean, ref.mean))
      throw std::runtime_error(fmt::format("tg-pipeline: GPU batch {} metrics (loss {:.9g}, mean {:.9g}) differ from the "
                                           "CPU reference ({:.9g}, {:.9g}) beyond atol 1e-6 + rtol 1e-4 (--work {})",
                                           i, r.metrics[i].loss, r.metrics[i].mean, ref.loss, ref.mean, cfg.work));
  }
}

void check_same(const PassResult& a, const PassResult& b, int work) {
  for (size_t i = 0; i < a.metrics.size(); ++i)
    if (std::memcmp(&a.metrics[i], &b.metrics[i], sizeof(Metrics)) != 0)
      throw std::runtime_error(fmt::format("tg-pipeline: --work {} batch {}: overlapped (loss {:.9g}, mean {:.9g}) != "
                                           "serialized ({:.9g}, {:.9g}) bitwise",
                                           work, i, b.metrics[i].loss, b.metrics[i].mean, a.metrics[i].loss,
                                           a.metrics[i].mean));
}

struct Collected {
  std::vector<double> host, h2d, compute, d2h, total;
  double busy = 0;  // mean over passes of sum(compute) / wall
};

void add(Collected& c, const PassResult& r) {
  c.host.insert(c.host.end(), r.host_s.begin(), r.host_s.end());
  c.h2d.insert(c.h2d.end(), r.h2d_s.begin(), r.h2d_s.end());
  c.compute.insert(c.compute.end(), r.compute_s.begin(), r.compute_s.end());
  c.d2h.insert(c.d2h.end(), r.d2h_s.begin(), r.d2h_s.end());
  c.total.push_back(r.wall_s / static_cast<double>(r.host_s.size()));
  c.busy += sum(r.compute_s) / r.wall_s;
}

struct Level {
  th::Experiment& e;
  const std::vector<std::vector<float>>& raw;
  PipelineConfig cfg;
  int passes;
  th::Params base;
  th::Params at(const char* stage, const char* mode) const {
    th::Params q = base;
    q.insert_or_assign("stage", th::Param(stage));
    q.insert_or_assign("mode", th::Param(mode));
    return q;
  }
};

// The CPU backend: no copy to overlap and no second engine to keep busy; what is
// left is the host stage next to a compute stage on the same cores.
void cpu_level(Level& l, th::Progress& bar) {
  Collected c;
  const int nb = static_cast<int>(l.raw.size());
  std::vector<float> x(static_cast<size_t>(l.cfg.elems));
  tg::trace::LoopWindow window;
  for (int pass = 0; pass < l.passes; ++pass) {
    window.before_sample(pass);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < nb; ++i) {
      th::throw_if_interrupted();  // a batch takes up to ~0.3 s at the highest work level
      const auto th0 = std::chrono::steady_clock::now();
      preprocess(l.raw[static_cast<size_t>(i)].data(), x.data(), l.cfg.elems, l.cfg.row, i);
      const auto th1 = std::chrono::steady_clock::now();
      const Metrics m = compute_cpu(x.data(), l.cfg.elems, l.cfg.work);
      if (!std::isfinite(m.loss)) throw std::runtime_error("tg-pipeline: CPU compute produced a non-finite loss");
      c.host.push_back(std::chrono::duration<double>(th1 - th0).count());
      c.compute.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - th1).count());
    }
    c.total.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / nb);
    bar.tick(fmt::format("cpu work {}", l.cfg.work));
  }
  l.e.report().add_time("pipeline_stage", l.at("host", "serialized"), c.host);
  l.e.report().add_time("pipeline_stage", l.at("compute", "serialized"), c.compute);
  l.e.report().add_time("pipeline_stage", l.at("total", "serialized"), c.total);
}

void gpu_level(Level& l, th::Progress& bar, bool check_cpu) {
  const int nb = static_cast<int>(l.raw.size());
  GpuPipeline pipe(l.cfg);
  // Warm-up pass of each mode, which is also the check.
  const PassResult ser0 = pipe.run(l.raw, false);
  const PassResult ovl0 = pipe.run(l.raw, true);
  if (check_cpu) check_vs_cpu(l.raw, ser0, l.cfg);
  check_same(ser0, ovl0, l.cfg.work);
  auto& chk = l.e.report().add_value("check_overlapped_equals_serialized", l.base, static_cast<double>(nb), "batches",
                                     "higher");
  chk.extra["vs_cpu_reference"] = check_cpu ? 1 : 0;
  bar.tick("checked");
  Collected cs, co;
  tg::trace::LoopWindow window;
  for (int pass = 0; pass < l.passes; ++pass) {
    th::throw_if_interrupted();
    window.before_sample(pass);
    // Interleaved so that clock and thermal drift hit both modes alike.
    const PassResult s = pipe.run(l.raw, false);
    check_same(ser0, s, l.cfg.work);
    add(cs, s);
    bar.tick(fmt::format("work {} serialized", l.cfg.work));
    const PassResult o = pipe.run(l.raw, true);
    check_same(ser0, o, l.cfg.work);
    add(co, o);
    bar.tick(fmt::format("work {} overlapped", l.cfg.work));
  }
  for (auto [mode, c] : {std::pair<const char*, Collected*>{"serialized", &cs}, {"overlapped", &co}}) {
    l.e.report().add_time("pipeline_stage", l.at("host", mode), c->host);
    l.e.report().add_time("pipeline_stage", l.at("h2d", mode), c->h2d, "gpu").extra["GB/s"] =
        static_cast<double>(l.cfg.elems * 4) / th::summarize(c->h2d).median / 1e9;
    l.e.report().add_time("pipeline_stage", l.at("compute", mode), c->compute, "gpu");
    l.e.report().add_time("pipeline_stage", l.at("d2h", mode), c->d2h, "gpu");
    auto& t = l.e.report().add_time("pipeline_stage", l.at("total", mode), c->total);
    t.extra["gpu_busy_fraction"] = c->busy / l.passes;
    th::Params q = l.base;
    q.insert_or_assign("mode", th::Param(mode));
    l.e.report().add_value("gpu_busy_fraction", q, c->busy / l.passes, "fraction", "higher");
  }
  // Perfect overlap costs the slowest stage; serialized the sum (stage means, serialized).
  const double stages[] = {mean(cs.host), mean(cs.h2d), mean(cs.compute), mean(cs.d2h)};
  const double slowest = *std::max_element(std::begin(stages), std::end(stages));
  const double speedup = th::summarize(cs.total).median / th::summarize(co.total).median;
  auto& s = l.e.report().add_value("overlap_speedup", l.base, speedup, "x", "higher");
  s.extra["ideal_x"] = (stages[0] + stages[1] + stages[2] + stages[3]) / slowest;
  s.extra["compute/host"] = stages[2] / stages[0];
}

// The CPU reference costs elements x work fma calls on one host thread (~4 ns
// each: over half a minute for two 16 MiB batches at --work 2048), so the
// always-on check uses a small pipeline of its own: 600,000 floats (more than
// two per GPU thread, so the grid-stride loop iterates; a partial last row) at a
// small work, both modes against the CPU reference. The same kernels then run the
// timed batches, where every pass is checked bitwise against the first.
void small_cpu_check(th::Experiment& e, const PipelineConfig& timed, int smallest_work) {
  PipelineConfig c = timed;
  c.elems = 600000;
  c.work = std::min(smallest_work, 64);
  std::vector<std::vector<float>> raw;
  for (int i = 0; i < 2; ++i) raw.push_back(make_raw_batch(c.elems, 7 + static_cast<uint64_t>(i)));
  GpuPipeline pipe(c);
  const PassResult ser = pipe.run(raw, false);
  const PassResult ovl = pipe.run(raw, true);
  check_vs_cpu(raw, ser, c);
  check_vs_cpu(raw, ovl, c);
  check_same(ser, ovl, c.work);
  e.report().add_value("check_vs_cpu_reference",
                       {{"batch_bytes", c.elems * int64_t{4}}, {"work", int64_t{c.work}}, {"batches", int64_t{2}}}, 2,
                       "batches", "higher");
}

// The default sweep spans input-bound to compute-bound on a data-center GPU, where a
// 16 MiB batch's fma step costs a few tenths of a microsecond against milliseconds of
// host preprocessing: 2048 steps are input-bound, 32768 about balanced (where overlap
// pays most) and 131072 compute-bound.
std::vector<int> default_works(bool gpu, bool quick) {
  if (!gpu) return quick ? std::vector<int>{16} : std::vector<int>{16, 64};
  return quick ? std::vector<int>{2048, 32768, 131072} : std::vector<int>{2048, 8192, 32768, 131072};
}

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-pipeline", "The data path of a training step: serialized vs overlapped, over a compute sweep",
                    "tg-pipeline --device auto --quick --json docs/results/pipeline.json");
  double batch_mib = 0;
  std::vector<int> works;
  int batches = 0, passes = 0;
  ex.add_option("--batch-mib", batch_mib, "MiB per batch (0: 16 on the GPU, 1 on the CPU)", 0.0, 4096.0);
  ex.add_option("--work", works,
                "fma steps per element in the compute stage, one or more values: the sweep (default GPU 2048 8192 "
                "32768 131072, --quick 2048 32768 131072; CPU 16 64, --quick 16)",
                1, 10000000);
  ex.add_option("--batches", batches, "Batches per pass (0: 32, 12 with --quick; >= 2 otherwise)", 0, 100000);
  ex.add_option("--passes", passes, "Timed passes per mode and work level (0: 10, 3 with --quick)", 0, 10000);
  bool images = false;
  int64_t image_batch = 0, image_size = 0;
  std::string models_text;
  double link_gbps = kSeedPcieGBps;
  ex.add_flag("--images", images,
              "Feed image batches instead of the synthetic sweep: uint8 NHWC pixels normalized on the GPU against f32 "
              "normalized on the host, each copied over PCIe, optionally into a CNN's training step (--models)");
  ex.add_option("--image-batch", image_batch,
                "Images per batch with --images (0: 32; on the CPU with --models, 2)", 0, 4096);
  ex.add_option("--image-size", image_size,
                "Height = width of the images with --images (0: 224; on the CPU with --models, 32)", 0, 4096);
  ex.add_option("--models", models_text,
                "With --images, the networks whose training step reads the batch, comma-separated, as tg-train spells "
                "them: resnet (the CIFAR ResNet-20), vgg (VGG-11), resnet18, resnet50, vgg16; unset: the input path alone");
  ex.add_option("--link-gbps", link_gbps,
                "With --images, the link rate (GB/s) the copy estimates assume (default: PCIe 3.0 x16, the seed's)", 0.001,
                1e6);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const bool gpu = e.on_gpu();
    if (!images && (image_batch || image_size || !models_text.empty()))
      throw th::UsageError("--image-batch, --image-size and --models take effect with --images only; add --images");
    if (images) {
      if (gpu && !have_cuda_build()) throw std::logic_error("tg-pipeline: a GPU was selected but this build has no CUDA");
      ImageRunOptions o;
      if (!models_text.empty()) {
        o.models = tg::bench::parse_models_flag(models_text);
        for (const char* m : {"mlp", "transformer"})
          if (o.models.count(m))
            throw th::UsageError(fmt::format("--models {}: not a network that reads images; use resnet, vgg, resnet18, "
                                             "resnet50 or vgg16", m));
      }
      const bool small = !gpu && !o.models.empty();
      o.shape.n = image_batch > 0 ? image_batch : (small ? 2 : 32);
      o.shape.h = o.shape.w = image_size > 0 ? image_size : (small ? 32 : 224);
      for (const std::string& m : o.models)
        if (const std::string why = image_model_problem(m, o.shape); !why.empty()) throw th::UsageError(why);
      o.batches = batches > 0 ? batches : 4;
      o.passes = passes > 0 ? passes : (e.quick() ? 3 : 10);
      o.link_gbps = link_gbps;
      run_images(e, o);
      return;
    }
    if (batches == 1) throw th::UsageError("--batches must be >= 2: overlap needs a next batch to work on");
    PipelineConfig cfg;
    cfg.elems = static_cast<int64_t>((batch_mib > 0 ? batch_mib : (gpu ? 16.0 : 1.0)) * (1 << 20) / sizeof(float));
    if (cfg.elems < cfg.row) throw th::UsageError(fmt::format("--batch-mib {} is under one row ({} floats)", batch_mib, cfg.row));
    if (works.empty()) works = default_works(gpu, e.quick());
    for (size_t i = 0; i < works.size(); ++i)
      if (std::count(works.begin(), works.end(), works[i]) > 1)
        throw th::UsageError(fmt::format("--work {} is given twice; list each work level once", works[i]));
    const int nb = batches > 0 ? batches : (e.quick() ? 12 : 32);
    const int np = passes > 0 ? passes : (e.quick() ? 3 : 10);
    std::vector<std::vector<float>> raw;
    for (int i = 0; i < nb; ++i) raw.push_back(make_raw_batch(cfg.elems, 100 + static_cast<uint64_t>(i)));
    const size_t ticks_per_level = gpu ? static_cast<size_t>(2 * np + 1) : static_cast<size_t>(np);
    th::Progress bar(works.size() * ticks_per_level, "tg-pipeline");
    if (!gpu) {
      e.report().skip("h2d, d2h", "no GPU: the CPU backend computes where the data already is, there is no transfer");
      e.report().skip("overlapped mode", "no GPU: overlap needs a copy engine and a compute device running while the host "
                                         "preprocesses; on the CPU both stages compete for the same cores");
      e.report().skip("gpu busy fraction", "no GPU");
    } else if (!have_cuda_build()) {
      throw std::logic_error("tg-pipeline: a GPU was selected but this build has no CUDA");
    }
    // Full mode also checks the timed batches against the CPU reference, at the
    // smallest work level only (minutes at the largest).
    const int smallest = *std::min_element(works.begin(), works.end());
    if (gpu) small_cpu_check(e, cfg, smallest);
    bool cpu_checked = e.quick();
    for (int w : works) {
      cfg.work = w;
      Level l{e, raw, cfg, np,
              {{"batch_bytes", cfg.elems * int64_t{4}}, {"work", int64_t{w}}, {"batches", int64_t{nb}}}};
      if (gpu) {
        const bool check = w == smallest && !cpu_checked;
        gpu_level(l, bar, check);
        cpu_checked = cpu_checked || check;
      } else {
        cpu_level(l, bar);
      }
    }
  });
}
