// tg-matmul: when does the GPU win? Square sgemm C = A B for n = 0..5000 on the CPU
// (OpenBLAS, all cores) and on the GPU (cuBLAS fp32 and TF32), the GPU with and
// without the transfers of A, B and C, and the crossover n where the GPU first wins.
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "experiments/harness/harness.h"
#include "experiments/matmul/matrices.h"
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

}  // namespace

int main(int argc, char** argv) {
  th::Experiment experiment("tg-matmul",
                    "When does the GPU win? Square sgemm on the CPU (OpenBLAS) and the GPU (cuBLAS fp32, TF32), "
                    "with and without transfers, and the crossover n",
                    "tg-matmul --device auto --quick --json matmul.json --csv matmul.csv");
  int64_t max_n = 5000, step = 500;
  experiment.add_option("--max-n", max_n, "Largest n", 0, 20000);
  experiment.add_option("--step", step, "Step of n (not in --quick, which runs 0, 500, 1000, 2000, 5000)", 1, 20000);
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
#ifdef TWOGRAPH_HAVE_CUDA
    std::unique_ptr<tgm::GpuGemm> gpu;
    if (ex.on_gpu()) gpu = std::make_unique<tgm::GpuGemm>(sizes.empty() ? 0 : sizes.back());
    else r.skip("matmul backend=gpu (fp32, tf32; with and without transfers) and crossover_n",
                "no GPU selected (--device cpu, or --device auto found no CUDA device)");
#else
    r.skip("matmul backend=gpu (fp32, tf32; with and without transfers) and crossover_n",
           "built without CUDA (TWOGRAPH_CUDA=OFF or no nvcc found)");
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
        std::memcpy(gpu->host_a(), a.data(), count * sizeof(float));
        std::memcpy(gpu->host_b(), b.data(), count * sizeof(float));
        for (const bool tf32 : {false, true}) {
          const std::string precision = tf32 ? "tf32" : "fp32";
          // Check first: poisoned C on both sides, one full run, every element against the CPU.
          tgm::poison_nan(gpu->host_c(), count);
          gpu->poison_device_c(n);
          gpu->run_with_transfers(n, tf32);
          const auto cmp = tgm::compare(c.data(), gpu->host_c(), n, tgm::tolerance(precision, n));
          if (cmp.mismatches)
            throw std::runtime_error(fmt::format("cuBLAS {} n={}: {} of {} elements differ from the CPU beyond "
                                                 "the tolerance; first:\n{}", precision, n, cmp.mismatches, count,
                                                 cmp.first));
          for (const bool with_transfers : {false, true}) {
            auto samples = with_transfers ? gpu->time_with_transfers(ex.loop(), n, tf32)
                                          : gpu->time_compute(ex.loop(), n, tf32);
            auto& m = r.add_time("matmul", {{"n", n}, {"backend", "gpu"}, {"precision", precision},
                                            {"transfers", with_transfers}},
                                 std::move(samples), with_transfers ? "host" : "gpu");
            m.extra["TFLOP/s"] = tflops(n, m.stats.median);
            m.extra["max_abs_err"] = cmp.max_abs_err;
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
