#pragma once
// tg-pipeline's GPU half: host preprocess -> H2D -> compute -> D2H for a sequence
// of batches, serialized (one stream, synchronize per batch) or overlapped (a copy
// stream and a compute stream, pinned double buffers, events between them).
#include <cstdint>
#include <memory>
#include <vector>

#include "experiments/pipeline/host_stage.h"

namespace tg::pipeline {

struct PipelineConfig {
  int64_t elems = 0;  // floats per batch
  int64_t row = 1024; // row length for the augmentation
  int work = 0;       // fma steps per element in the compute stage
};

// One pass over all batches.
struct PassResult {
  std::vector<double> host_s, h2d_s, compute_s, d2h_s;  // per batch (GPU stages from CUDA events)
  double wall_s = 0;                                    // first preprocess to last metrics on the host
  std::vector<Metrics> metrics;                         // per batch, in order
};

bool have_cuda_build();
// Owns its streams, events and buffers across passes (allocation is not what is measured).
class GpuPipeline {
 public:
  GpuPipeline(const PipelineConfig& cfg);
  ~GpuPipeline();
  GpuPipeline(const GpuPipeline&) = delete;
  GpuPipeline& operator=(const GpuPipeline&) = delete;
  PassResult run(const std::vector<std::vector<float>>& raw, bool overlapped);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tg::pipeline
