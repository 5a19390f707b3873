#pragma once
// The GPU side of tg-matmul: cuBLAS sgemm (fp32 or TF32) through the shared launcher
// kernels::cuda::sgemm, and bf16 / fp16 products on the tensor cores through cuBLASLt as the
// backend runs them (kernels::cuda::LtGemm: 16-bit A, B and C, f32 accumulation, the
// heuristic's first algorithm), alone and with their transfers. CUDA builds only.
#include <cstdint>
#include <memory>
#include <vector>

#include "experiments/harness/measure.h"
#include "experiments/matmul/matrices.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/cuda/raii.h"

namespace tg::matmul {

class GpuGemm {
 public:
  // Device A, B, C and pinned host A, B, C for n <= max_n. tune: the 16-bit products time
  // cuBLASLt's candidates once per n and keep the fastest (the backend's gemm_autotune).
  explicit GpuGemm(int64_t max_n, bool tune = false);

  // A and B (n x n, row-major) into the pinned host operands, in p's dtype
  // (rounded to nearest even for bf16 and fp16), before a run in that precision.
  void load_host(const float* a, const float* b, int64_t n, GemmType p);
  // C of the last run_with_transfers in precision p, widened to f32.
  std::vector<float> host_result(int64_t n, GemmType p) const;

  // H2D A and B, C = A B, D2H C, all on one stream; returns when C is on the host.
  void run_with_transfers(int64_t n, GemmType p);
  // Fills C with NaN on the device and the host, so that a product or a copy that writes
  // nothing cannot pass the check.
  void poison_c(int64_t n);

  // Samples: CUDA-event time of the product alone (A and B already resident, after one
  // run_with_transfers); host time (steady_clock) of run_with_transfers, i.e. what a
  // caller holding host arrays waits for.
  std::vector<double> time_compute(const harness::LoopOptions& opt, int64_t n, GemmType p);
  std::vector<double> time_with_transfers(const harness::LoopOptions& opt, int64_t n, GemmType p);

 private:
  void enqueue_product(int64_t n, GemmType p);

  int64_t max_n_;
  cuda::Stream stream_;
  cuda::CublasHandle cublas_;
  cuda::CublasLtHandle lt_handle_;
  std::unique_ptr<kernels::cuda::LtCache> lt_;
  cuda::DeviceBuffer da_, db_, dc_, lt_workspace_;
  cuda::PinnedBuffer ha_, hb_, hc_;
};

}  // namespace tg::matmul
