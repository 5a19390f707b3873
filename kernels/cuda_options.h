#pragma once
// The CUDA backend's kernel choices: which of the project's own kernels run where a library
// or another form could, and how kernels are launched. Given when a backend is made
// (make_cuda_backend, make_backend), kept in its execution context (CudaExecContext::options)
// and read there by the kernel routing, so that two backends of one process may differ and a
// test sets what it tests without touching the environment. Every default is the choice the
// measurements favour (docs/architecture.md, docs/compiler.md); turning one off is for A/B
// runs and tests.
//
// The experiments read these from one environment variable, TG_CUDA_OPTIONS, and their
// --cuda-options flag (experiments/harness/experiment.h), and record them in every report.
// This header builds without CUDA, so that a CPU build parses and reports them too.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/options_text.h"

namespace tg {

// Whether this build has cuDNN (cmake/Cudnn.cmake): the default of conv_cudnn below.
#ifdef TWOGRAPH_HAVE_CUDNN
inline constexpr bool kBuiltWithCudnn = true;
#else
inline constexpr bool kBuiltWithCudnn = false;
#endif
// Whether it also has the cuDNN frontend (cmake/CudnnFrontend.cmake): the default of
// attention_cudnn below.
#ifdef TWOGRAPH_HAVE_CUDNN_FRONTEND
inline constexpr bool kBuiltWithCudnnFrontend = true;
#else
inline constexpr bool kBuiltWithCudnnFrontend = false;
#endif

struct CudaBackendOptions : TextOptions<CudaBackendOptions> {
  // GEMMs small enough for the project's one-pass kernel (kernels/cuda/gemm/gemm_small.h) run
  // there instead of through cuBLASLt.
  bool small_gemm = true;
  // Thin GEMMs (k or n at most 16, kernels/cuda/gemm/gemm_skinny.cu) run on the skinny kernels
  // where the small one does not fit; only with small_gemm.
  bool skinny_gemm = true;
  // matmul_sgd_momentum runs its stream-K form (one block a resident slot, each an equal
  // share of the product), with a workspace a stream the backend makes when it prepares its
  // first GEMM update; off: the tiled kernel, one tile a block.
  bool gemm_update_streamk = true;
  // The first request of a cuBLASLt GEMM shape times the heuristic's first candidates and
  // keeps the fastest (kernels/cuda/gemm/gemm_lt.h): faster GEMMs, but results may differ in
  // the last bits from one process to the next, so it is off by default.
  bool gemm_autotune = false;
  // Programmatic dependent launch where the device has it (compute capability >= 9.0).
  bool pdl = true;
  // conv2d, conv2d_grad_input and conv2d_grad_weight through cuDNN where it takes the
  // geometry (kernels/cuda/conv_cudnn.h); off: the direct kernels of kernels/cuda/conv.cu.
  // On by default in a build with cuDNN; a backend refuses it on in a build without.
  bool conv_cudnn = kBuiltWithCudnn;
  // How cuDNN's algorithm is chosen, once per convolution shape (kernels/cuda/conv_cudnn.h):
  // off, cuDNN's heuristic list (no timing: the same choice in every process); on, each
  // candidate is timed on the device the first time a shape is seen (cudnnFind*AlgorithmEx,
  // as PyTorch's cudnn.benchmark) and the fastest kept. Timing may pick another algorithm
  // from one process to the next, so it is off by default, as gemm_autotune is.
  bool conv_benchmark = false;
  // Only algorithms cuDNN marks deterministic (the same bits from every run of a call);
  // off admits those that sum with atomics (some of the gradients' algorithms), whose last
  // bits may vary between runs. On by default: static == dynamic bitwise needs it.
  bool conv_deterministic = true;
  // The most workspace a convolution's algorithm may use, in MiB. Both executors use the
  // same limit, so they choose alike: the static plan places the largest chosen workspace in
  // its arena; the dynamic executor runs a call whose workspace outgrows the backend's GEMM
  // workspace in a buffer of cuDNN's that grows to the largest it has needed.
  int64_t conv_workspace_mb = 32;
  // FFT and Winograd algorithms too (cuDNN's FWD_ALGO_FFT*, WINOGRAD*, BWD_*_ALGO_FFT*,
  // WINOGRAD*): fewer operations, but they round the transformed operands, so their error is
  // not an f32 sum of products. Off by default: the CUDA-vs-CPU tolerances assume sums.
  bool conv_transforms = false;
  // The convolutions through cuDNN's graph API (kernels/cuda/conv_cudnn_frontend.h: every
  // engine cuDNN has for the shape, under the same rule), the legacy cudnnConvolution* API
  // for what it declines; off: the legacy API alone. On by default in a build with cuDNN and
  // its frontend: under the deterministic rule the legacy API offers no algorithm at all for
  // some weight gradients (strided convolutions), which then run on the project's reference
  // kernel. A backend refuses it on in a build without the frontend.
  bool conv_frontend = kBuiltWithCudnn && kBuiltWithCudnnFrontend;
  // Host <-> device copies of 1 MiB or more (Backend::copy_to_device, copy_to_host: the
  // dynamic executor's feeds, both executors' read-backs) go through two pinned staging
  // buffers of the backend, chunk by chunk, each chunk's host side split over the host
  // copier's threads while the next chunk's transfer runs; off: cudaMemcpy from and to the
  // caller's pageable memory, which the driver stages through its own buffers with one thread.
  bool staged_copies = true;
  // The attention ops (attention, attention_lse, attention_grad, attention_fwd_lse) in bf16
  // and f16 through cuDNN's fused flash attention (kernels/cuda/attention_cudnn.h: the tensor
  // cores, a deterministic backward) where cuDNN takes the case; off, or a case it does not take: the project's own kernels
  // (kernels/cuda/attention.cu). On by default in a build with the cuDNN frontend; a backend
  // refuses it on in a build without.
  bool attention_cudnn = kBuiltWithCudnnFrontend;
  // A large cuBLASLt GEMM with an extent or leading dim that is not a whole number of
  // 16-byte steps (a 50257-token vocabulary's logits) runs at padded extents on padded copies
  // of its operands (kernels/gemm/gemm_staging.h), where cuBLASLt has its fast kernels; off:
  // on the operands as they are, where it has only kernels of one element at a time (GPT-2
  // small's bf16 step at batch 8 x 1024 on an H100, all passes: 24.5 ms with, 38.3 ms without).
  bool gemm_align_staging = true;
  // 16-bit matmul_bias_grad as the plain GEMM and then reduce_sum's column kernel
  // (kernels/cuda/gemm/gemm_epilogue16.h), instead of cuBLASLt's bias-gradient epilogue, which
  // sums in a kernel of its own after the product; off by default until measured.
  bool gemm_bias_grad_sums = false;
  // attention_grad through cuDNN's deterministic backward (no atomics in dq: the same bits
  // from every run, which static == dynamic bitwise needs); off: its backward that adds dq
  // with atomics, one pass less (the form PyTorch's scaled_dot_product_attention runs).
  bool attention_deterministic = true;

  static constexpr const char* kKind = "a CUDA backend option";
  static const std::vector<OptionField<CudaBackendOptions>>& fields();
};

}  // namespace tg
