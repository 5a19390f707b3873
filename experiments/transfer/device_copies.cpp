#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "experiments/transfer/buffers.h"
#include "experiments/transfer/cuda_bench.h"
#include "experiments/transfer/host_bench.h"
#include "kernels/cuda/raii.h"

namespace tg::transfer {

LinkRates link_rates(const harness::Metadata::Gpu& g) {
  LinkRates r;
  // Transfer rate per lane in GT/s by generation; one transfer moves one bit per lane.
  static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (g.pcie_gen >= 1 && g.pcie_gen <= 6 && g.pcie_width > 0) {
    r.pcie_GBps = gts[g.pcie_gen] * g.pcie_width / 8.0;
    r.pcie_text = fmt::format("PCIe Gen{} x{}: {:.0f} GB/s per direction in theory (before encoding and packet overhead)",
                              g.pcie_gen, g.pcie_width, r.pcie_GBps);
  } else {
    r.pcie_text = "PCIe link unknown (the driver/NVML did not report generation and width): "
                  "host<->device GB/s are not compared with the link";
  }
  if (g.mem_clock_khz > 0 && g.mem_bus_width_bits > 0) {
    r.hbm_GBps = 2.0 * g.mem_clock_khz * 1e3 * (g.mem_bus_width_bits / 8.0) / 1e9;
    r.hbm_text = fmt::format("device memory: {} MHz x 2 x {} bits = {:.0f} GB/s in theory", g.mem_clock_khz / 1000,
                             g.mem_bus_width_bits, r.hbm_GBps);
  } else {
    r.hbm_text = "device memory clock/bus width unknown: D2D is not compared with the memory's rate";
  }
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;

struct CopyCase {
  const char* direction;    // h2d, d2h, d2d
  const char* host_memory;  // pageable, pinned, device (d2d)
  const char* mode;         // sync, async
};

// Every buffer of one size. The device buffer `a` holds the pattern once the first
// h2d case has run; d2h and d2d read it from there.
struct Buffers {
  explicit Buffers(size_t n)
      : bytes(n), page_src(n), page_dst(n), pin_src(cuda::PinnedBuffer::allocate(n)),
        pin_dst(cuda::PinnedBuffer::allocate(n)), a(cuda::DeviceBuffer::allocate(n)),
        b(cuda::DeviceBuffer::allocate(n)) {
    page_src.touch();  // first-touch page faults must not be timed
    page_dst.touch();
  }
  size_t bytes;
  HostBuffer page_src, page_dst;
  cuda::PinnedBuffer pin_src, pin_dst;
  cuda::DeviceBuffer a, b;
};

struct Endpoints {
  void* dst;
  const void* src;
  cudaMemcpyKind kind;
};

Endpoints endpoints(Buffers& B, const CopyCase& c) {
  const std::string dir = c.direction, mem = c.host_memory;
  if (dir == "h2d") return {B.a.get(), mem == "pinned" ? B.pin_src.get() : B.page_src.data(), cudaMemcpyHostToDevice};
  if (dir == "d2h") return {mem == "pinned" ? B.pin_dst.get() : B.page_dst.data(), B.a.get(), cudaMemcpyDeviceToHost};
  return {B.b.get(), B.a.get(), cudaMemcpyDeviceToDevice};
}

// One copy with the case's API, then wait for it: used for verification.
void copy_once(const Endpoints& e, const CopyCase& c, cudaStream_t s, size_t bytes) {
  if (std::string(c.mode) == "sync") {
    TG_CUDA_CHECK(cudaMemcpy(e.dst, e.src, bytes, e.kind));
  } else {
    TG_CUDA_CHECK(cudaMemcpyAsync(e.dst, e.src, bytes, e.kind, s));
  }
  TG_CUDA_CHECK(cudaDeviceSynchronize());
}

void verify_case(Buffers& B, const CopyCase& c, cudaStream_t s, uint64_t seed) {
  const Endpoints e = endpoints(B, c);
  const std::string what = fmt::format("{} {} {}", c.direction, c.host_memory, c.mode);
  if (e.kind == cudaMemcpyDeviceToHost) {
    poison(e.dst, B.bytes);
    copy_once(e, c, s, B.bytes);
    verify_pattern(e.dst, B.bytes, seed, what);
    return;
  }
  // The destination is on the device: poison it, copy, read it back into a poisoned host buffer.
  TG_CUDA_CHECK(cudaMemset(e.dst, 0xA5, B.bytes));
  TG_CUDA_CHECK(cudaDeviceSynchronize());  // the memset runs on the legacy stream, the copy may not
  copy_once(e, c, s, B.bytes);
  poison(B.pin_dst.get(), B.bytes);
  TG_CUDA_CHECK(cudaMemcpy(B.pin_dst.get(), e.dst, B.bytes, cudaMemcpyDeviceToHost));
  verify_pattern(B.pin_dst.get(), B.bytes, seed, what);
}

}  // namespace

void measure_device_copies(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                           const LinkRates& rates, const char* name, const harness::Params& extra) {
  static const CopyCase cases[] = {
      {"h2d", "pageable", "sync"}, {"h2d", "pageable", "async"}, {"h2d", "pinned", "sync"}, {"h2d", "pinned", "async"},
      {"d2h", "pageable", "sync"}, {"d2h", "pageable", "async"}, {"d2h", "pinned", "sync"}, {"d2h", "pinned", "async"},
      {"d2d", "device", "async"}};
  auto stream = cuda::Stream::create();
  auto ev0 = cuda::Event::create(), ev1 = cuda::Event::create();
  for (size_t bytes : sizes) {
    Buffers B(bytes);
    const uint64_t seed = bytes;
    fill_pattern(B.page_src.data(), bytes, seed);
    fill_pattern(B.pin_src.get(), bytes, seed);
    for (const CopyCase& c : cases) {
      verify_case(B, c, stream.get(), seed);
      const Endpoints e = endpoints(B, c);
      std::vector<double> samples, call_s;
      std::string timer;
      if (std::string(c.mode) == "sync") {
        timer = "host";
        samples = harness::time_host(opt, [&] { TG_CUDA_CHECK(cudaMemcpy(e.dst, e.src, bytes, e.kind)); },
                                     [] { TG_CUDA_CHECK(cudaDeviceSynchronize()); });
      } else {
        timer = "gpu";
        samples = harness::run_loop(opt, [&] {
          ev0.record(stream.get());
          const auto t0 = Clock::now();
          TG_CUDA_CHECK(cudaMemcpyAsync(e.dst, e.src, bytes, e.kind, stream.get()));
          call_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          ev1.record(stream.get());
          ev1.synchronize();
          return ev1.elapsed_ms_since(ev0) * 1e-3;
        });
        keep_last(call_s, samples.size());
      }
      harness::Params p{{"size_bytes", bytes}, {"direction", c.direction}, {"memory", c.host_memory},
                        {"mode", c.mode}};
      p.insert(extra.begin(), extra.end());
      auto& m = r.add_time(name, p, std::move(samples), timer);
      const double gbps = static_cast<double>(bytes) / m.stats.median / 1e9;
      m.extra["GB/s"] = gbps;
      if (!call_s.empty()) m.extra["host_call_s"] = harness::summarize(call_s).median;
      if (e.kind == cudaMemcpyDeviceToDevice) {
        m.extra["GB/s_rw"] = 2 * gbps;  // a device copy reads and writes every byte
        if (rates.hbm_GBps > 0) m.extra["hbm_fraction"] = 2 * gbps / rates.hbm_GBps;
      } else if (rates.pcie_GBps > 0) {
        m.extra["link_fraction"] = gbps / rates.pcie_GBps;
      }
    }
  }
}

namespace {
// Times allocate() per sample and the matching release() on the side: {alloc, free}.
template <typename Alloc, typename Release>
std::pair<std::vector<double>, std::vector<double>> time_alloc_free(const harness::LoopOptions& opt, Alloc allocate,
                                                                    Release release) {
  std::vector<double> freed;
  auto allocated = harness::run_loop(opt, [&] {
    void* p = nullptr;
    auto t0 = Clock::now();
    allocate(&p);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    release(p);
    freed.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    return s;
  });
  keep_last(freed, allocated.size());
  return {std::move(allocated), std::move(freed)};
}
}  // namespace

void measure_image_batch(harness::Report& r, const harness::LoopOptions& opt, const LinkRates& rates) {
  constexpr size_t kElements = size_t{32} * 224 * 224 * 3;
  measure_device_copies(r, opt, {kElements * sizeof(float)}, rates, "image_batch_copy",
                        {{"batch", "32x224x224x3"}, {"dtype", "f32"}});
  measure_device_copies(r, opt, {kElements}, rates, "image_batch_copy", {{"batch", "32x224x224x3"}, {"dtype", "u8"}});
}

void measure_alloc_sequence(harness::Report& r, const harness::LoopOptions& opt) {
  constexpr int kCalls = 4;
  constexpr size_t kBytes = 1024;
  auto free_bytes = [] {
    size_t free = 0, total = 0;
    TG_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<double>(free);
  };
  std::vector<double> time_s[2][kCalls], taken[2][kCalls];
  // One sample is the whole sequence; run_loop's own samples only say how many were kept
  // after the warm-up.
  const size_t kept = harness::run_loop(opt, [&] {
    void* p[kCalls] = {};
    double before = free_bytes();
    for (int api = 0; api < 2; ++api)
      for (int i = 0; i < kCalls; ++i) {
        const auto t0 = Clock::now();
        if (api == 0) {
          TG_CUDA_CHECK(cudaMalloc(&p[i], kBytes));
        } else {
          TG_CUDA_CHECK(cudaFree(p[i]));
        }
        time_s[api][i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        const double after = free_bytes();
        taken[api][i].push_back(before - after);
        before = after;
      }
    return time_s[1][kCalls - 1].back();
  }).size();
  const char* apis[] = {"cudaMalloc", "cudaFree"};
  for (int api = 0; api < 2; ++api)
    for (int i = 0; i < kCalls; ++i) {
      keep_last(time_s[api][i], kept);
      keep_last(taken[api][i], kept);
      auto& m = r.add_time("alloc_sequence", {{"size_bytes", kBytes}, {"api", apis[api]}, {"index", i + 1}},
                           time_s[api][i]);
      m.extra["device_bytes_taken"] = harness::summarize(taken[api][i]).median;
    }
}

void measure_device_alloc(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes) {
  for (size_t bytes : sizes) {
    auto [dmalloc, dfree] = time_alloc_free(
        opt, [&](void** p) { TG_CUDA_CHECK(cudaMalloc(p, bytes)); }, [](void* p) { TG_CUDA_CHECK(cudaFree(p)); });
    auto [hmalloc, hfree] = time_alloc_free(
        opt, [&](void** p) { TG_CUDA_CHECK(cudaMallocHost(p, bytes)); },
        [](void* p) { TG_CUDA_CHECK(cudaFreeHost(p)); });
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "cudaMalloc"}}, std::move(dmalloc));
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "cudaFree"}}, std::move(dfree));
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "cudaMallocHost"}}, std::move(hmalloc));
    r.add_time("alloc", {{"size_bytes", bytes}, {"api", "cudaFreeHost"}}, std::move(hfree));
  }
}

}  // namespace tg::transfer
