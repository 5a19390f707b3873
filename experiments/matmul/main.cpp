// tg-matmul: when does the GPU win? Square sgemm C = A B for n = 0..5000 on the CPU
// (OpenBLAS, all cores) and on the GPU (cuBLAS fp32 and TF32; bf16 and fp16 through cuBLASLt
// on the tensor cores, as the backend runs them), the GPU with and without the transfers of
// A, B and C, and the crossover n where the GPU first wins.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/harness/device_peaks.h"
#include "experiments/harness/harness.h"
#include "experiments/matmul/matrices.h"
#include "graph/float_formats.h"
#include "graph/quote.h"
#include "kernels/cpu/cpu_kernels.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "experiments/matmul/gpu_gemm.h"
#endif

namespace th = tg::harness;
namespace tgm = tg::matmul;

namespace {

double tflops(int64_t n, double seconds) {
  return n == 0 ? 0.0 : 2.0 * static_cast<double>(n) * n * n / seconds / 1e12;
}

// Medians by n for one series, for the crossover.
using Series = std::map<int64_t, double>;

void report_crossover(th::Report& r, const Series& cpu, const Series& gpu, const std::string& precision,
                      bool with_transfers) {
  const std::string label = fmt::format("crossover precision={} transfers={}", precision, with_transfers);
  for (const auto& [n, t] : gpu) {
    if (n == 0) continue;  // the no-op: nobody "wins" an empty product
    if (auto it = cpu.find(n); it != cpu.end() && t < it->second) {
      r.add_value("crossover_n", {{"precision", precision}, {"transfers", with_transfers}},
                  static_cast<double>(n), "n");
      return;
    }
  }
  r.skip(label, "the GPU never beat the CPU in this sweep (the crossover, if any, lies above the largest n)");
}

// One precision of the sweep: its name in the rows, and how the GPU computes it.
struct Precision {
  std::string name;
  tgm::GemmType type;
};
const Precision kPrecisions[] = {{"fp32", {tg::DType::F32, false}},
                                 {"tf32", {tg::DType::F32, true}},
                                 {"bf16", {tg::DType::BF16, false}},
                                 {"fp16", {tg::DType::F16, false}}};

// --precision: all, or a comma-separated list of distinct precisions.
std::vector<Precision> parse_precisions(const std::string& text) {
  if (text == "all") return {std::begin(kPrecisions), std::end(kPrecisions)};
  std::vector<Precision> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    if (item == "all")
      throw th::UsageError(fmt::format("--precision: all stands alone; give all, or a list such as fp32,bf16 "
                                       "(got {})", tg::quote_name(text)));
    const auto known = std::find_if(std::begin(kPrecisions), std::end(kPrecisions),
                                    [&](const Precision& p) { return p.name == item; });
    if (known == std::end(kPrecisions))
      throw th::UsageError(fmt::format("--precision: '{}' is not a precision; give all, or a comma-separated list "
                                       "of fp32, tf32, bf16 and fp16", item));
    if (std::any_of(out.begin(), out.end(), [&](const Precision& p) { return p.name == item; }))
      throw th::UsageError(fmt::format("--precision: {} is given twice; name each precision once", item));
    out.push_back(*known);
    at = end + 1;
  }
  return out;
}

// The names of ps, joined by ", ".
std::string names_of(const std::vector<Precision>& ps) {
  std::string s;
  for (const Precision& p : ps) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// x rounded to dt (a 16-bit precision's inputs, as the GPU receives them) and back to f32.
std::vector<float> rounded(const std::vector<float>& x, tg::DType dt) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = tg::round_to_dtype(x[i], dt);
  return r;
}

#ifdef TWOGRAPH_HAVE_CUDA
// The dense peak of GPU `device` in each precision (device_peaks.h), for the rows'
// pct_of_peak; a note names the precisions without one.
std::map<std::string, double> known_peaks(th::Report& r, int device, const std::vector<Precision>& precisions) {
  std::map<std::string, double> peaks;
  std::vector<Precision> unknown;
  const th::Metadata::Gpu* g = th::gpu_entry(r.meta, device);
  for (const Precision& p : precisions) {
    const double peak = g ? th::dense_peak_flops(*g, p.name) : 0.0;
    if (peak > 0) peaks[p.name] = peak;
    else unknown.push_back(p);
  }
  if (!unknown.empty())
    r.skip(fmt::format("pct_of_peak precision={}", names_of(unknown)),
           fmt::format("no dense peak known for this GPU (compute capability {}): "
                       "experiments/harness/device_peaks.h lists the architectures whose figures are certain",
                       g ? fmt::format("{}.{}", g->cc_major, g->cc_minor) : std::string("unknown")));
  return peaks;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  th::Experiment experiment("tg-matmul",
                    "When does the GPU win? Square sgemm on the CPU (OpenBLAS) and the GPU (cuBLAS fp32, TF32; "
                    "cuBLASLt bf16, fp16), with and without transfers, and the crossover n",
                    "tg-matmul --device auto --quick --json matmul.json --csv matmul.csv");
  int64_t max_n = 5000, step = 500;
  experiment.add_option("--max-n", max_n, "Largest n", 0, 20000);
  experiment.add_option("--step", step, "Step of n (not in --quick, which runs 0, 500, 1000, 2000, 5000)", 1, 20000);
  std::string precision_text = "fp32,tf32,bf16,fp16";
  experiment.add_option("--precision", precision_text,
                        "The GPU's precisions, all or comma-separated: fp32 (cuBLAS SGEMM), tf32 (the same on the "
                        "tensor cores), bf16 and fp16 (cuBLASLt on the tensor cores: 16-bit A, B and C, f32 "
                        "accumulation, as the backend runs them). Each row records its precision and its percent of "
                        "the device's dense peak in that precision; the CPU runs fp32");
  std::vector<Precision> precisions;
  experiment.check_flags([&] { precisions = parse_precisions(precision_text); });
  return experiment.run(argc, argv, [&](th::Experiment& ex) {
    th::Report& r = ex.report();
    std::vector<int64_t> sizes;
    if (ex.quick()) {
      for (int64_t n : {0, 500, 1000, 2000, 5000})
        if (n <= max_n) sizes.push_back(n);
    } else {
      for (int64_t n = 0; n <= max_n; n += step) sizes.push_back(n);
    }
    const int cpu_threads = tg::kernels::cpu_blas_threads();
    fmt::print(stderr, "tg-matmul: CPU: OpenBLAS with {} threads\n", cpu_threads);
    r.add_value("cpu_threads", {{"backend", "cpu"}}, cpu_threads, "threads", "higher");
    r.skip("TFLOP/s and result check at n=0", "n = 0 is an empty product, a defined no-op: its rows time "
                                              "the call alone and report 0 TFLOP/s");
    std::vector<Precision> low;
    for (const Precision& p : precisions)
      if (p.type.dtype != tg::DType::F32) low.push_back(p);
    if (!low.empty())
      r.skip(fmt::format("matmul backend=cpu precision={}", names_of(low)),
             "the CPU backend computes 16-bit products by widening them to f32 (kernels/cpu/widen.cpp): the fp32 "
             "row's time and the conversions, no 16-bit kernel of its own to measure");
    const std::string gpu_rows =
        fmt::format("matmul backend=gpu ({}; with and without transfers) and crossover_n", names_of(precisions));
#ifdef TWOGRAPH_HAVE_CUDA
    std::unique_ptr<tgm::GpuGemm> gpu;
    std::map<std::string, double> peaks;  // the device's dense FLOP/s by precision, where known
    if (ex.on_gpu()) {
      gpu = std::make_unique<tgm::GpuGemm>(sizes.empty() ? 0 : sizes.back(), ex.cuda_options().gemm_autotune);
      peaks = known_peaks(r, ex.device(), precisions);
    } else {
      r.skip(gpu_rows, "no GPU selected (--device cpu, or --device auto found no CUDA device)");
    }
#else
    r.skip(gpu_rows, "built without CUDA (TWOGRAPH_CUDA=OFF or no nvcc found)");
#endif
    Series cpu_med;
    std::map<std::pair<std::string, bool>, Series> gpu_med;
    th::Progress bar(sizes.size(), "tg-matmul");
    for (int64_t n : sizes) {
      TG_NVTX_RANGE("matmul_n");
      const size_t count = static_cast<size_t>(n * n);
      std::vector<float> a(count), b(count), c(count);
      tgm::fill_uniform(a.data(), count, 2 * static_cast<uint64_t>(n) + 1);
      tgm::fill_uniform(b.data(), count, 2 * static_cast<uint64_t>(n) + 2);
      tgm::poison_nan(c.data(), count);
      auto cpu_call = [&] { tg::kernels::cpu_sgemm(false, false, n, n, n, a.data(), n, b.data(), n, c.data(), n); };
      cpu_call();
      tgm::spot_check(a.data(), b.data(), c.data(), n, "CPU (OpenBLAS) sgemm");
      {
        auto& m = r.add_time("matmul", {{"n", n}, {"backend", "cpu"}, {"precision", "fp32"},
                                        {"transfers", false}, {"threads", cpu_threads}},
                             th::time_host(ex.loop(), cpu_call));
        m.extra["TFLOP/s"] = tflops(n, m.stats.median);
        cpu_med[n] = m.stats.median;
      }
#ifdef TWOGRAPH_HAVE_CUDA
      if (gpu) {
        // The CPU's f32 product of the inputs rounded to each 16-bit dtype: what a GPU that
        // accumulates in f32 and rounds once must match.
        std::map<tg::DType, std::vector<float>> refs;
        for (const Precision& prec : precisions) {
          const std::string& precision = prec.name;
          const tgm::GemmType p = prec.type;
          const tg::DType dt = p.dtype;
          const std::vector<float>* ref = &c;
          if (dt != tg::DType::F32) {
            std::vector<float>& rc = refs[dt];
            if (rc.empty()) {
              const std::vector<float> ar = rounded(a, dt), br = rounded(b, dt);
              rc.assign(count, 0.0f);
              tg::kernels::cpu_sgemm(false, false, n, n, n, ar.data(), n, br.data(), n, rc.data(), n);
            }
            ref = &rc;
          }
          // Check first: poisoned C on both sides, one full run, every element against the CPU.
          gpu->load_host(a.data(), b.data(), n, p);
          gpu->poison_c(n);
          gpu->run_with_transfers(n, p);
          const std::vector<float> got = gpu->host_result(n, p);
          const auto cmp = tgm::compare(ref->data(), got.data(), n, tgm::tolerance(precision, n));
          if (cmp.mismatches)
            throw std::runtime_error(fmt::format("cuBLAS {} n={}: {} of {} elements differ from the CPU beyond "
                                                 "the tolerance; first:\n{}", precision, n, cmp.mismatches, count,
                                                 cmp.first));
          for (const bool with_transfers : {false, true}) {
            auto samples = with_transfers ? gpu->time_with_transfers(ex.loop(), n, p)
                                          : gpu->time_compute(ex.loop(), n, p);
            auto& m = r.add_time("matmul", {{"n", n}, {"backend", "gpu"}, {"precision", precision},
                                            {"transfers", with_transfers}},
                                 std::move(samples), with_transfers ? "host" : "gpu");
            m.extra["TFLOP/s"] = tflops(n, m.stats.median);
            m.extra["max_abs_err"] = cmp.max_abs_err;
            if (const auto peak = peaks.find(precision); peak != peaks.end())
              m.extra["pct_of_peak"] = 100.0 * m.extra["TFLOP/s"] * 1e12 / peak->second;
            if (cpu_med[n] > 0) m.extra["speedup_vs_cpu"] = cpu_med[n] / m.stats.median;
            gpu_med[{precision, with_transfers}][n] = m.stats.median;
          }
        }
      }
#endif
      bar.tick(fmt::format("n={}", n));
    }
    for (const auto& [key, series] : gpu_med) report_crossover(r, cpu_med, series, key.first, key.second);
  });
}
