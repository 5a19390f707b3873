#include "experiments/transfer/staged_copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "experiments/transfer/buffers.h"
#include "experiments/transfer/cuda_bench.h"

namespace tg::transfer {

StagedCopier::StagedCopier(size_t chunk_bytes, int copy_threads) : chunk_(chunk_bytes), memcpy_(copy_threads, kCopyThreadsMinBytes) {
  if (chunk_bytes == 0) throw std::invalid_argument("StagedCopier: the chunk size must be > 0");
  for (int i = 0; i < 2; ++i) {
    stage_[i] = cuda::PinnedBuffer::allocate(chunk_bytes);
    stream_[i] = cuda::Stream::create();
    // Timing off: these events only order work, and timing-capable events cost more.
    dma_done_[i] = cuda::Event::create(cudaEventDisableTiming);
  }
}

void StagedCopier::h2d(void* device_dst, const void* host_src, size_t bytes) {
  auto* dst = static_cast<char*>(device_dst);
  const auto* src = static_cast<const char*>(host_src);
  size_t i = 0;
  for (size_t off = 0; off < bytes; off += chunk_, ++i) {
    const size_t b = i & 1, len = std::min(chunk_, bytes - off);
    // Stage b may still be read by the DMA of chunk i-2; wait for it (a no-op the first time).
    dma_done_[b].synchronize();
    memcpy_.copy(stage_[b].get(), src + off, len);  // overlaps the DMA of chunk i-1 from the other stage
    TG_CUDA_CHECK(cudaMemcpyAsync(dst + off, stage_[b].get(), len, cudaMemcpyHostToDevice, stream_[b].get()));
    dma_done_[b].record(stream_[b].get());
  }
  stream_[0].synchronize();
  stream_[1].synchronize();
}

void StagedCopier::d2h(void* host_dst, const void* device_src, size_t bytes) {
  auto* dst = static_cast<char*>(host_dst);
  const auto* src = static_cast<const char*>(device_src);
  const size_t chunks = (bytes + chunk_ - 1) / chunk_;
  auto enqueue = [&](size_t i) {
    const size_t b = i & 1, off = i * chunk_, len = std::min(chunk_, bytes - off);
    TG_CUDA_CHECK(cudaMemcpyAsync(stage_[b].get(), src + off, len, cudaMemcpyDeviceToHost, stream_[b].get()));
    dma_done_[b].record(stream_[b].get());
  };
  if (chunks) enqueue(0);
  for (size_t i = 0; i < chunks; ++i) {
    // Stage (i+1)&1 held chunk i-1, whose copy-out finished in the previous iteration.
    if (i + 1 < chunks) enqueue(i + 1);
    const size_t b = i & 1, off = i * chunk_, len = std::min(chunk_, bytes - off);
    dma_done_[b].synchronize();
    memcpy_.copy(dst + off, stage_[b].get(), len);  // overlaps the DMA of chunk i+1
  }
}

void measure_staged(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                    const std::vector<size_t>& chunk_bytes, int copy_threads, const LinkRates& rates) {
  for (size_t chunk : chunk_bytes) {
    StagedCopier copier(chunk, copy_threads);
    for (size_t bytes : sizes) {
      HostBuffer host_src(bytes), host_dst(bytes);
      host_src.touch();  // first-touch page faults belong to allocation, not to the copy
      host_dst.touch();
      auto dev = cuda::DeviceBuffer::allocate(bytes);
      const uint64_t seed = bytes ^ 0x57A6ED;
      fill_pattern(host_src.data(), bytes, seed);
      for (const char* dir : {"h2d", "d2h"}) {
        const bool up = std::string(dir) == "h2d";
        // Verify once before timing: h2d is read back with a plain cudaMemcpy; d2h
        // copies back what the h2d left on the device.
        poison(host_dst.data(), bytes);
        if (up) {
          TG_CUDA_CHECK(cudaMemset(dev.get(), 0xA5, bytes));
          TG_CUDA_CHECK(cudaDeviceSynchronize());  // legacy-stream memset vs the copier's own streams
          copier.h2d(dev.get(), host_src.data(), bytes);
          TG_CUDA_CHECK(cudaMemcpy(host_dst.data(), dev.get(), bytes, cudaMemcpyDeviceToHost));
        } else {
          copier.d2h(host_dst.data(), dev.get(), bytes);
        }
        verify_pattern(host_dst.data(), bytes, seed, fmt::format("staged {} copy, chunk {}", dir, size_label(chunk)));
        auto samples = harness::time_host(opt, [&] {
          if (up)
            copier.h2d(dev.get(), host_src.data(), bytes);
          else
            copier.d2h(host_dst.data(), dev.get(), bytes);
        });
        harness::Params p{{"size_bytes", bytes}, {"direction", dir},          {"memory", "pageable"},
                          {"mode", "staged"},    {"chunk_bytes", chunk}, {"copy_threads", copier.copy_threads()}};
        auto& m = r.add_time("copy", p, std::move(samples));
        const double gbps = static_cast<double>(bytes) / m.stats.median / 1e9;
        m.extra["GB/s"] = gbps;
        if (rates.pcie_GBps > 0) m.extra["link_fraction"] = gbps / rates.pcie_GBps;
        // Against the driver's own staging: the plain pageable cudaMemcpy of the same size.
        if (const auto* plain = r.find("copy", {{"size_bytes", bytes}, {"direction", dir},
                                                {"memory", "pageable"}, {"mode", "sync"}}))
          m.extra["speedup_vs_pageable"] = plain->stats.median / m.stats.median;
      }
    }
  }
}

}  // namespace tg::transfer
