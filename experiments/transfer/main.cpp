// tg-transfer: what do transfers cost? Host<->device copies (pageable vs pinned,
// sync vs async), device-to-device copies, allocation costs, and a hand-staged
// pageable copy, against the PCIe link's and the device memory's theoretical rates.
// Without a GPU it measures what the host alone can (memcpy, malloc, first touch)
// and records every GPU part as skipped, with the reason.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "experiments/harness/harness.h"
#include "experiments/transfer/buffers.h"
#include "experiments/transfer/host_bench.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "experiments/transfer/cuda_bench.h"
#endif

namespace th = tg::harness;
namespace tt = tg::transfer;

namespace {

std::vector<size_t> filter_sizes(std::vector<size_t> sizes, size_t max_bytes) {
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](size_t s) { return s > max_bytes; }), sizes.end());
  return sizes;
}

void skip_gpu_parts(th::Report& r, const std::string& why) {
  r.skip("copy h2d/d2h/d2d (pageable, pinned; sync, async)", why);
  r.skip("image_batch_copy (32x224x224x3 as f32 and u8)", why);
  r.skip("alloc cudaMalloc/cudaFree/cudaMallocHost/cudaFreeHost", why);
  r.skip("alloc_sequence (four 1 KiB cudaMalloc, then four cudaFree)", why);
  r.skip("copy mode=staged (pageable through pinned chunks)", why);
  r.skip("cold_start (first CUDA calls of a fresh process)", why);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TWOGRAPH_HAVE_CUDA
  // A cold-start child (cold_start.h) must touch nothing before its own steps.
  if (auto rc = th::cold_start_child(argc, argv, tt::cold_start_steps)) return *rc;
#endif
  th::Experiment experiment("tg-transfer",
                    "What do transfers cost? Host<->device and device copies, pageable vs pinned, sync vs async, "
                    "allocation costs, and a staged pageable copy, against the link's theoretical rate",
                    "tg-transfer --device auto --quick --json transfer.json --csv transfer.csv");
  int64_t chunk_mib = 8;
  int copy_threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 4, 1, 8);
  int64_t max_mib = 1024;
  experiment.add_option("--chunk-mib", chunk_mib, "Staged copy: pinned chunk size in MiB", 1, 1024);
  experiment.add_option("--copy-threads", copy_threads, "Staged copy: CPU threads copying into/out of the pinned chunks",
                        1, 64);
  experiment.add_option("--max-mib", max_mib,
                        "Largest copy in MiB (sizes above it are dropped; 1 KiB, 1 MiB and 512 MiB are the sizes the "
                        "docs quote)",
                        1, 1024);
  return experiment.run(argc, argv, [&](th::Experiment& ex) {
    th::Report& r = ex.report();
    const auto sizes = filter_sizes(tt::sweep_sizes(ex.quick()), static_cast<size_t>(max_mib) * tt::MiB);
    const size_t chunk = static_cast<size_t>(chunk_mib) * tt::MiB;
    th::Progress bar(ex.on_gpu() ? 6 : 2, "tg-transfer");
    {
      TG_NVTX_RANGE("host_memcpy");
      tt::measure_host_memcpy(r, ex.loop(), sizes, {1, copy_threads});
      bar.tick("host memcpy");
    }
    {
      TG_NVTX_RANGE("host_alloc");
      tt::measure_host_alloc(r, ex.loop(), sizes);
      bar.tick("host alloc");
    }
#ifdef TWOGRAPH_HAVE_CUDA
    if (!ex.on_gpu()) {
      skip_gpu_parts(r, "no GPU selected (--device cpu, or --device auto found no CUDA device)");
      return;
    }
    const th::Metadata::Gpu* gpu = nullptr;
    for (const auto& g : r.meta.gpus)
      if (g.id == ex.device()) gpu = &g;
    const tt::LinkRates rates = gpu ? tt::link_rates(*gpu) : tt::LinkRates{};
    fmt::print(stderr, "tg-transfer: {}\ntg-transfer: {}\n", rates.pcie_text, rates.hbm_text);
    if (rates.pcie_GBps <= 0) r.skip("link_fraction (PCIe)", rates.pcie_text);
    if (rates.hbm_GBps <= 0) r.skip("hbm_fraction (D2D)", rates.hbm_text);
    {
      TG_NVTX_RANGE("device_copies");
      tt::measure_device_copies(r, ex.loop(), sizes, rates);
      tt::measure_image_batch(r, ex.loop(), rates);
      bar.tick("device copies");
    }
    {
      TG_NVTX_RANGE("device_alloc");
      tt::measure_device_alloc(r, ex.loop(), sizes);
      tt::measure_alloc_sequence(r, ex.loop());
      bar.tick("device alloc");
    }
    {
      TG_NVTX_RANGE("cold_start");
      th::measure_cold_start(r, th::self_cold_start_argv(ex.device()), ex.quick() ? 3 : 10);
      bar.tick("cold start");
    }
    {
      TG_NVTX_RANGE("staged");
      tt::measure_staged(r, ex.loop(), sizes, {chunk}, copy_threads, rates);
      // The chunk size's effect, at 512 MiB (or the largest size) only, outside --quick.
      std::vector<size_t> others;
      for (size_t c : {2 * tt::MiB, 4 * tt::MiB, 16 * tt::MiB, 32 * tt::MiB})
        if (c != chunk && !ex.quick()) others.push_back(c);
      const size_t at = std::find(sizes.begin(), sizes.end(), 512 * tt::MiB) != sizes.end() ? 512 * tt::MiB
                                                                                              : sizes.back();
      if (!others.empty()) tt::measure_staged(r, ex.loop(), {at}, others, copy_threads, rates);
      bar.tick("staged");
    }
#else
    (void)chunk;
    skip_gpu_parts(r, "built without CUDA (TWOGRAPH_CUDA=OFF or no nvcc found)");
#endif
  });
}
