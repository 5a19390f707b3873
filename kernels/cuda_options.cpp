#include "kernels/cuda_options.h"

namespace tg {

const std::vector<OptionField<CudaBackendOptions>>& CudaBackendOptions::fields() {
  using O = CudaBackendOptions;
  static const std::vector<OptionField<O>> f = {
      switch_option<O, &O::small_gemm>("small_gemm", "small GEMMs on the project's one-pass kernel, not cuBLASLt"),
      switch_option<O, &O::skinny_gemm>("skinny_gemm",
                                        "thin GEMMs (k or n <= 16) on the skinny kernels (with small_gemm)"),
      switch_option<O, &O::gemm_update_streamk>("gemm_update_streamk",
                                                "matmul_sgd_momentum in its stream-K form; 0: the tiled kernel"),
      switch_option<O, &O::gemm_autotune>(
          "gemm_autotune", "time cuBLASLt's candidates per GEMM shape, keep the fastest (last bits may vary between runs)"),
      switch_option<O, &O::pdl>("pdl", "programmatic dependent launch where the device has it (sm_90 and later)"),
      switch_option<O, &O::conv_cudnn>("conv_cudnn",
                                       "conv2d and its gradients through cuDNN; 0: the direct kernels (default 1 with cuDNN)"),
      switch_option<O, &O::conv_benchmark>(
          "conv_benchmark", "time cuDNN's algorithms per convolution shape, keep the fastest (cudnn.benchmark); 0: its heuristic"),
      switch_option<O, &O::conv_deterministic>(
          "conv_deterministic", "only cuDNN algorithms that give the same bits every run; 0: also those with atomics"),
      switch_option<O, &O::attention_cudnn>(
          "attention_cudnn",
          "bf16/f16 attention through cuDNN's fused flash attention; 0: the own kernels (default 1 with the frontend)"),
      integer_option<O, &O::conv_workspace_mb>(
          "conv_workspace_mb", 0, int64_t{1} << 20,
          "the most workspace a convolution's cuDNN algorithm may use, MiB (the static plan holds the largest chosen)"),
      switch_option<O, &O::staged_copies>(
          "staged_copies", "host<->device copies of 1 MiB or more through pinned staging, host side on the copier's threads"),
      switch_option<O, &O::conv_transforms>(
          "conv_transforms", "also cuDNN's FFT and Winograd convolutions (they round transformed operands); 0: sums of products"),
      switch_option<O, &O::conv_frontend>(
          "conv_frontend", "convolutions through cuDNN's graph API (all its engines), the legacy API where it declines"),
      switch_option<O, &O::gemm_align_staging>(
          "gemm_align_staging", "large GEMMs with extents not in 16-byte steps run padded, on padded copies; 0: cuBLASLt's unaligned kernels"),
      switch_option<O, &O::gemm_bias_grad_sums>(
          "gemm_bias_grad_sums", "16-bit bias gradients by the project's split column sums after the GEMM; 0: cuBLASLt's epilogue"),
      switch_option<O, &O::attention_deterministic>(
          "attention_deterministic",
          "cuDNN's attention backward without atomics (the same bits every run); 0: its faster one with atomics in dq"),
  };
  return f;
}

}  // namespace tg
