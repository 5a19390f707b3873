// tg-pipeline: the data path of a training step. Host preprocessing (normalize +
// augment a synthetic batch) -> H2D -> compute (a fixed kernel workload, see
// host_stage.h) -> D2H (loss and mean), run serialized (one stream, the host waits
// for every batch) and overlapped (copy + compute streams, pinned double buffers,
// events), with per-stage times and the GPU busy fraction (compute / wall time).
// Checked first: overlapped == serialized bitwise, and both against the CPU reference.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/pipeline/gpu_pipeline.h"
#include "experiments/pipeline/host_stage.h"

namespace th = tg::harness;
using namespace tg::pipeline;

namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

bool close(float a, float ref) { return std::fabs(a - ref) <= 1e-6f + 1e-4f * std::fabs(ref); }

void check_vs_cpu(const std::vector<std::vector<float>>& raw, const PassResult& r, const PipelineConfig& cfg) {
  std::vector<float> x(static_cast<size_t>(cfg.elems));
  for (size_t i = 0; i < std::min<size_t>(2, raw.size()); ++i) {
    preprocess(raw[i].data(), x.data(), cfg.elems, cfg.row, static_cast<int64_t>(i));
    const Metrics ref = compute_cpu(x.data(), cfg.elems, cfg.work);
    if (!close(r.metrics[i].loss, ref.loss) || !close(r.metrics[i].mean, ref.mean))
      throw std::runtime_error(fmt::format("tg-pipeline: GPU batch {} metrics (loss {:.9g}, mean {:.9g}) differ from the "
                                           "CPU reference ({:.9g}, {:.9g}) beyond atol 1e-6 + rtol 1e-4",
                                           i, r.metrics[i].loss, r.metrics[i].mean, ref.loss, ref.mean));
  }
}

void check_same(const PassResult& a, const PassResult& b) {
  for (size_t i = 0; i < a.metrics.size(); ++i)
    if (std::memcmp(&a.metrics[i], &b.metrics[i], sizeof(Metrics)) != 0)
      throw std::runtime_error(fmt::format("tg-pipeline: batch {}: overlapped (loss {:.9g}, mean {:.9g}) != serialized "
                                           "({:.9g}, {:.9g}) bitwise",
                                           i, b.metrics[i].loss, b.metrics[i].mean, a.metrics[i].loss, a.metrics[i].mean));
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

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-pipeline", "The data path of a training step: serialized vs overlapped",
                    "tg-pipeline --device auto --quick --json docs/results/pipeline.json");
  double batch_mib = 0;
  int work = 0, batches = 0, passes = 0;
  ex.add_option("--batch-mib", batch_mib, "MiB per batch (0: 16 on the GPU, 1 on the CPU)", 0.0, 4096.0);
  ex.add_option("--work", work, "fma steps per element in the compute stage (0: 2048 GPU, 16 CPU)", 0, 1000000);
  ex.add_option("--batches", batches, "Batches per pass (0: 32, 12 with --quick; >= 2 otherwise)", 0, 100000);
  ex.add_option("--passes", passes, "Timed passes per mode (0: 10, 3 with --quick)", 0, 10000);
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const bool gpu = e.on_gpu();
    if (batches == 1) throw th::UsageError("--batches must be >= 2: overlap needs a next batch to work on");
    PipelineConfig cfg;
    cfg.elems = static_cast<int64_t>((batch_mib > 0 ? batch_mib : (gpu ? 16.0 : 1.0)) * (1 << 20) / sizeof(float));
    if (cfg.elems < cfg.row) throw th::UsageError(fmt::format("--batch-mib {} is under one row ({} floats)", batch_mib, cfg.row));
    cfg.work = work > 0 ? work : (gpu ? 2048 : 16);
    const int nb = batches > 0 ? batches : (e.quick() ? 12 : 32);
    const int np = passes > 0 ? passes : (e.quick() ? 3 : 10);
    std::vector<std::vector<float>> raw;
    for (int i = 0; i < nb; ++i) raw.push_back(make_raw_batch(cfg.elems, 100 + static_cast<uint64_t>(i)));
    const th::Params base{{"batch_bytes", cfg.elems * int64_t{4}}, {"work", int64_t{cfg.work}}, {"batches", int64_t{nb}}};
    auto p = [&](const char* stage, const char* mode) { th::Params q = base; q.insert_or_assign("stage", th::Param(stage)); q.insert_or_assign("mode", th::Param(mode)); return q; };
    th::Progress bar(static_cast<size_t>(2 * np + 1), "tg-pipeline");

    if (!gpu) {
      // The CPU backend: there is no copy to overlap and no second engine to keep
      // busy; what is left is the host stage next to a compute stage on the same cores.
      e.report().skip("h2d, d2h", "no GPU: the CPU backend computes where the data already is, there is no transfer");
      e.report().skip("overlapped mode", "no GPU: overlap needs a copy engine and a compute device running while the host "
                                         "preprocesses; on the CPU both stages compete for the same cores");
      e.report().skip("gpu busy fraction", "no GPU");
      Collected c;
      std::vector<float> x(static_cast<size_t>(cfg.elems));
      for (int pass = 0; pass < np; ++pass) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < nb; ++i) {
          const auto th0 = std::chrono::steady_clock::now();
          preprocess(raw[static_cast<size_t>(i)].data(), x.data(), cfg.elems, cfg.row, i);
          const auto th1 = std::chrono::steady_clock::now();
          const Metrics m = compute_cpu(x.data(), cfg.elems, cfg.work);
          if (!std::isfinite(m.loss)) throw std::runtime_error("tg-pipeline: CPU compute produced a non-finite loss");
          c.host.push_back(std::chrono::duration<double>(th1 - th0).count());
          c.compute.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - th1).count());
        }
        c.total.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / nb);
        bar.tick("cpu");
      }
      e.report().add_time("pipeline_stage", p("host", "serialized"), c.host);
      e.report().add_time("pipeline_stage", p("compute", "serialized"), c.compute);
      e.report().add_time("pipeline_stage", p("total", "serialized"), c.total);
      return;
    }
    if (!have_cuda_build()) throw std::logic_error("tg-pipeline: a GPU was selected but this build has no CUDA");

    GpuPipeline pipe(cfg);
    // Warm-up pass of each mode, which is also the check.
    const PassResult ser0 = pipe.run(raw, false);
    const PassResult ovl0 = pipe.run(raw, true);
    check_vs_cpu(raw, ser0, cfg);
    check_same(ser0, ovl0);
    e.report().add_value("check_overlapped_equals_serialized", base, static_cast<double>(nb), "batches", "higher");
    bar.tick("checked");
    Collected cs, co;
    for (int pass = 0; pass < np; ++pass) {
      // Interleaved so that clock and thermal drift hit both modes alike.
      const PassResult s = pipe.run(raw, false);
      check_same(ser0, s);
      add(cs, s);
      bar.tick("serialized");
      const PassResult o = pipe.run(raw, true);
      check_same(ser0, o);
      add(co, o);
      bar.tick("overlapped");
    }
    for (auto [mode, c] : {std::pair<const char*, Collected*>{"serialized", &cs}, {"overlapped", &co}}) {
      e.report().add_time("pipeline_stage", p("host", mode), c->host);
      e.report().add_time("pipeline_stage", p("h2d", mode), c->h2d, "gpu").extra["GB/s"] =
          static_cast<double>(cfg.elems * 4) / th::summarize(c->h2d).median / 1e9;
      e.report().add_time("pipeline_stage", p("compute", mode), c->compute, "gpu");
      e.report().add_time("pipeline_stage", p("d2h", mode), c->d2h, "gpu");
      auto& t = e.report().add_time("pipeline_stage", p("total", mode), c->total);
      t.extra["gpu_busy_fraction"] = c->busy / np;
      th::Params q = base;
      q.insert_or_assign("mode", th::Param(mode));
      e.report().add_value("gpu_busy_fraction", q, c->busy / np, "fraction", "higher");
    }
    const double speedup = th::summarize(cs.total).median / th::summarize(co.total).median;
    e.report().add_value("overlap_speedup", base, speedup, "x", "higher");
  });
}
