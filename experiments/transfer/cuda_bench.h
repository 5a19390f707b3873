#pragma once
// The GPU parts of tg-transfer. Compiled only in CUDA builds (TWOGRAPH_HAVE_CUDA)
// and called only when a device was selected; main.cpp records a skip otherwise.
#include <cstddef>
#include <string>
#include <vector>

#include "experiments/harness/cold_start.h"
#include "experiments/harness/measure.h"
#include "experiments/harness/report.h"

namespace tg::transfer {

// Theoretical rates of the device's links, in GB/s (1e9 bytes/s); 0 = unknown.
struct LinkRates {
  double pcie_GBps = 0;  // per direction: GT/s per lane x lanes / 8 (Gen5 x16 = 64)
  double hbm_GBps = 0;   // memory clock x 2 (double data rate) x bus width / 8
  std::string pcie_text, hbm_text;  // "PCIe Gen5 x16: 64 GB/s" or why it is unknown
};
LinkRates link_rates(const harness::Metadata::Gpu& gpu);

// copy [size_bytes direction=h2d|d2h|d2d memory=pageable|pinned|device mode=sync|async]
//   sync: cudaMemcpy, steady_clock with a device synchronize around it (what the caller waits);
//   async: cudaMemcpyAsync on a non-blocking stream, CUDA-event time; extra host_call_s is
//   how long the call itself held the host (the whole copy, for pageable memory).
// `name` and `extra` label the rows: image_batch_copy rows carry the batch's shape and dtype.
void measure_device_copies(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                           const LinkRates& rates, const char* name = "copy", const harness::Params& extra = {});

// image_batch_copy [... batch=NxHxWxC dtype=f32|u8]: the data path of an image batch, the
// second seed's (32, 224, 224, 3), copied host to device as float32 and as uint8 with every
// copy case of `copy`, so the seed's PCIe estimate can be set beside a measurement.
void measure_image_batch(harness::Report& r, const harness::LoopOptions& opt, const LinkRates& rates);

// alloc_sequence [size_bytes=1024 api=cudaMalloc|cudaFree index=1..4]: four 1 KiB cudaMalloc in a
// row, then the four cudaFree in the same order, each call timed (steady_clock) and the device's
// free memory read (cudaMemGetInfo, outside the timed call) after it: extra device_bytes_taken is
// how much the call took from the device (negative: gave back). It shows how the runtime serves
// small allocations from a larger chunk, which is what separates a process's first and second
// cudaMalloc, and its first and last cudaFree.
void measure_alloc_sequence(harness::Report& r, const harness::LoopOptions& opt);

// alloc [size_bytes api=cudaMalloc|cudaFree|cudaMallocHost|cudaFreeHost], steady_clock.
void measure_device_alloc(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes);

// copy [... memory=pageable mode=staged chunk_bytes copy_threads]: the pageable copy
// done by hand through two pinned chunks (staged_copy.h), for each chunk size.
void measure_staged(harness::Report& r, const harness::LoopOptions& opt, const std::vector<size_t>& sizes,
                    const std::vector<size_t>& chunk_bytes, int copy_threads, const LinkRates& rates);

// The cold-start child's steps (cold_start_steps.cpp): runtime and context, then the
// first and second cudaMalloc, pageable H2D cudaMemcpy and cudaFree of 1 KiB.
std::vector<harness::ColdStep> cold_start_steps(int device);

}  // namespace tg::transfer
