#pragma once
// The GPU side of tg-matmul: cuBLAS sgemm (fp32 or TF32) through the shared launcher
// kernels::cuda::sgemm, alone and with its transfers. CUDA builds only.
#include <cstdint>
#include <vector>

#include "experiments/harness/measure.h"
#include "kernels/cuda/raii.h"

namespace tg::matmul {

class GpuGemm {
 public:
  explicit GpuGemm(int64_t max_n);  // device A, B, C and pinned host A, B, C for n <= max_n

  // Pinned host operands; the caller fills A and B (n x n, row-major) before a run.
  float* host_a() { return ha_.as<float>(); }
  float* host_b() { return hb_.as<float>(); }
  float* host_c() { return hc_.as<float>(); }

  // H2D A and B, C = A B, D2H C, all on one stream; returns when C is on the host.
  void run_with_transfers(int64_t n, bool tf32);
  // Fills device C with NaN so that a product that writes nothing cannot pass the check.
  void poison_device_c(int64_t n);

  // Samples: CUDA-event time of the product alone (A and B already resident, after one
  // run_with_transfers); host time (steady_clock) of run_with_transfers, i.e. what a
  // caller holding host arrays waits for.
  std::vector<double> time_compute(const harness::LoopOptions& opt, int64_t n, bool tf32);
  std::vector<double> time_with_transfers(const harness::LoopOptions& opt, int64_t n, bool tf32);

 private:
  void enqueue_product(int64_t n, bool tf32);

  int64_t max_n_;
  cuda::Stream stream_;
  cuda::CublasHandle cublas_;
  cuda::DeviceBuffer da_, db_, dc_;
  cuda::PinnedBuffer ha_, hb_, hc_;
};

}  // namespace tg::matmul
