// CPU-only build of tg-pipeline: the GPU half does not exist; main.cpp checks
// have_cuda_build() first and records skip notes instead.
#include <stdexcept>

#include "experiments/pipeline/gpu_pipeline.h"

namespace tg::pipeline {
bool have_cuda_build() { return false; }
struct GpuPipeline::Impl {};
GpuPipeline::GpuPipeline(const PipelineConfig&) { throw std::logic_error("tg-pipeline: built without CUDA"); }
GpuPipeline::~GpuPipeline() = default;
PassResult GpuPipeline::run(const std::vector<std::vector<float>>&, bool) { throw std::logic_error("tg-pipeline: built without CUDA"); }
}  // namespace tg::pipeline
