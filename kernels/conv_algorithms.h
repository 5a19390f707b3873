#pragma once
// Which algorithm each convolution shape runs on a backend, for reports: the CUDA backend's
// cuDNN choices (kernels/cuda/conv_cudnn.h: heuristic or timed, CudaBackendOptions::
// conv_benchmark), in a form that needs no CUDA header, so that a CPU build lists none.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace tg {

struct ConvAlgorithm {
  std::string op;        // conv2d, conv2d_grad_input, conv2d_grad_weight or a fused convolution
  std::string dtype;     // f32, bf16, f16
  std::string geometry;  // "n32 c64 56x56 k64 3x3 s1x1 p1x1 d1x1 g1", then " tf32", a fused activation, " nhwc"
  std::string algo;      // cuDNN's algorithm, or "direct" (the direct kernels: none fits)
  bool benchmarked = false;
  bool deterministic = false;
  int64_t workspace_bytes = 0;
  double choose_ms = 0;  // what the shape's first call paid for the choice (host time)
  double algo_ms = 0;    // cuDNN's time of the chosen algorithm when timed
  // The offers cuDNN made and why those ahead of the chosen one were passed over
  // (kernels/cuda/conv_cudnn.h: ConvDnnChoice).
  int offers = 0;
  int passed_nondeterministic = 0;
  int passed_transform = 0;
  int passed_workspace = 0;
  int64_t passed_workspace_least = 0;
};

// Every shape the backend has chosen for so far, in the order met; empty on the CPU and
// with conv_cudnn off.
std::vector<ConvAlgorithm> conv_algorithms(const Backend& b);

}  // namespace tg
