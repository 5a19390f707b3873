// The GPU half of tg-pipeline. The compute kernel is the fma contraction of
// host_stage.h; its metrics are reduced deterministically (fixed tree per block,
// then one thread sums the block partials in order), so serialized and overlapped
// runs of the same batch give the same bits.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "experiments/pipeline/gpu_pipeline.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/raii.h"

namespace tg::pipeline {

namespace {

constexpr int kThreads = 256;
constexpr int kBlocks = 1024;  // grid-stride: a fixed partial count for any batch size

__global__ void compute_kernel(const float* __restrict__ x, int64_t n, int work, float* __restrict__ partials) {
  __shared__ float s2[kThreads], s1[kThreads];
  float a2 = 0, a1 = 0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{kBlocks} * kThreads) {
    const float c = kGain * x[i];
    float y = x[i];
    for (int k = 0; k < work; ++k) y = fmaf(y, kDecay, c);
    a2 = fmaf(y, y, a2);
    a1 += y;
  }
  s2[threadIdx.x] = a2;
  s1[threadIdx.x] = a1;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s2[threadIdx.x] += s2[threadIdx.x + w];
      s1[threadIdx.x] += s1[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s2[0];
    partials[kBlocks + blockIdx.x] = s1[0];
  }
}

__global__ void finish_kernel(const float* __restrict__ partials, int64_t n, float* __restrict__ metrics) {
  if (threadIdx.x != 0) return;
  double s2 = 0, s1 = 0;
  for (int b = 0; b < kBlocks; ++b) {
    s2 += partials[b];
    s1 += partials[kBlocks + b];
  }
  metrics[0] = static_cast<float>(s2 / static_cast<double>(n));
  metrics[1] = static_cast<float>(s1 / static_cast<double>(n));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool have_cuda_build() { return true; }

struct GpuPipeline::Impl {
  PipelineConfig cfg;
  cuda::Stream copy, compute;
  cuda::PinnedBuffer pin_in[2], pin_out[2];   // double buffers: host fills one while the GPU reads the other
  cuda::DeviceBuffer dev_in[2], partials[2], metrics[2];
  cuda::Event h2d_start[2], h2d_end[2], comp_start[2], comp_end[2], d2h_end[2];

  explicit Impl(const PipelineConfig& c) : cfg(c) {
    copy = cuda::Stream::create();
    compute = cuda::Stream::create();
    const size_t bytes = static_cast<size_t>(c.elems) * sizeof(float);
    for (int s = 0; s < 2; ++s) {
      pin_in[s] = cuda::PinnedBuffer::allocate(bytes);
      pin_out[s] = cuda::PinnedBuffer::allocate(2 * sizeof(float));
      dev_in[s] = cuda::DeviceBuffer::allocate(bytes);
      partials[s] = cuda::DeviceBuffer::allocate(2 * kBlocks * sizeof(float));
      metrics[s] = cuda::DeviceBuffer::allocate(2 * sizeof(float));
      for (cuda::Event* e : {&h2d_start[s], &h2d_end[s], &comp_start[s], &comp_end[s], &d2h_end[s]})
        *e = cuda::Event::create();
    }
  }

  // Batch i into slot s: H2D on h2d_stream, kernels + D2H on the compute stream.
  void enqueue(int s, cudaStream_t h2d_stream) {
    const size_t bytes = static_cast<size_t>(cfg.elems) * sizeof(float);
    h2d_start[s].record(h2d_stream);
    TG_CUDA_CHECK(cudaMemcpyAsync(dev_in[s].get(), pin_in[s].get(), bytes, cudaMemcpyHostToDevice, h2d_stream));
    h2d_end[s].record(h2d_stream);
    if (h2d_stream != compute.get()) TG_CUDA_CHECK(cudaStreamWaitEvent(compute.get(), h2d_end[s].get(), 0));
    comp_start[s].record(compute.get());
    compute_kernel<<<kBlocks, kThreads, 0, compute.get()>>>(dev_in[s].as<float>(), cfg.elems, cfg.work, partials[s].as<float>());
    TG_LAUNCH_CHECK();
    finish_kernel<<<1, 32, 0, compute.get()>>>(partials[s].as<float>(), cfg.elems, metrics[s].as<float>());
    TG_LAUNCH_CHECK();
    comp_end[s].record(compute.get());
    TG_CUDA_CHECK(cudaMemcpyAsync(pin_out[s].get(), metrics[s].get(), 2 * sizeof(float), cudaMemcpyDeviceToHost,
                                  compute.get()));
    d2h_end[s].record(compute.get());
  }

  // Waits for slot s's batch and records its stage times and metrics.
  void collect(int s, PassResult& r) {
    d2h_end[s].synchronize();
    r.h2d_s.push_back(h2d_end[s].elapsed_ms_since(h2d_start[s]) * 1e-3);
    r.compute_s.push_back(comp_end[s].elapsed_ms_since(comp_start[s]) * 1e-3);
    r.d2h_s.push_back(d2h_end[s].elapsed_ms_since(comp_end[s]) * 1e-3);
    const float* m = pin_out[s].as<float>();
    r.metrics.push_back({m[0], m[1]});
  }

  void poison() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int s = 0; s < 2; ++s) {
      pin_out[s].as<float>()[0] = pin_out[s].as<float>()[1] = nan;
      TG_CUDA_CHECK(cudaMemset(metrics[s].get(), 0xff, 2 * sizeof(float)));  // all-ones bits: a NaN
    }
    TG_CUDA_CHECK(cudaDeviceSynchronize());
  }
};

GpuPipeline::GpuPipeline(const PipelineConfig& cfg) : impl_(std::make_unique<Impl>(cfg)) {}
GpuPipeline::~GpuPipeline() = default;

PassResult GpuPipeline::run(const std::vector<std::vector<float>>& raw, bool overlapped) {
  Impl& m = *impl_;
  m.poison();
  PassResult r;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t nb = static_cast<int64_t>(raw.size());
  for (int64_t i = 0; i < nb; ++i) {
    const int s = overlapped ? static_cast<int>(i % 2) : 0;
    if (overlapped && i >= 2) {
      // Slot s still belongs to batch i-2 until its D2H is done (which also means its
      // H2D finished reading pin_in[s] and the kernel finished reading dev_in[s]).
      m.collect(s, r);
    }
    const auto th = std::chrono::steady_clock::now();
    preprocess(raw[static_cast<size_t>(i)].data(), m.pin_in[s].as<float>(), m.cfg.elems, m.cfg.row, i);
    r.host_s.push_back(seconds_since(th));
    m.enqueue(s, overlapped ? m.copy.get() : m.compute.get());
    if (!overlapped) m.collect(s, r);  // serialized: the host waits for every batch
  }
  if (overlapped)
    for (int64_t i = std::max<int64_t>(0, nb - 2); i < nb; ++i) m.collect(static_cast<int>(i % 2), r);
  r.wall_s = seconds_since(t0);
  return r;
}

}  // namespace tg::pipeline
