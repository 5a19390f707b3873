#pragma once
// The convolutions of conv_cudnn.h through cuDNN's graph API (the cuDNN frontend's
// conv_fprop, conv_dgrad and conv_wgrad nodes) instead of the legacy cudnnConvolution* calls:
// CudaBackendOptions::conv_frontend. The graph API reaches cuDNN's engines directly (each
// with its knobs), where the legacy API offers a fixed list of eight algorithms per op, some
// of them a legacy kernel in f32 without tensor cores; PyTorch's convolutions go through the
// graph API too.
//
// The rule is ConvDnnRule's, expressed as the engines' numerical notes: deterministic drops
// engines noted NONDETERMINISTIC; without transforms FFT and the Winograd notes are dropped;
// f32 without tf32 drops TENSOR_CORE (the FMA units, as the legacy path's CUDNN_FMA_MATH);
// REDUCED_PRECISION_REDUCTION (partial sums below f32) and DOWN_CONVERT_INPUTS (f32 read as
// f16) are always dropped; engines whose workspace passes the limit are dropped. Heuristic (mode A,
// then the fallback list): the first engine that builds; with ConvDnnRule::benchmark, the
// first ten that build are timed on scratch operands and the fastest kept (the frontend's
// autotune), as PyTorch's cudnn.benchmark does on the same API.
//
// NCHW keys, and NHWC ones on the KRSC copy of the filter that the legacy path makes (at the
// start of the call's workspace, the engine's after it); a key the graph API declines runs
// on the legacy path, and the choice says why. A fused convolution's convolution runs here
// and its epilogue after it (cuda::conv_epilogue).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "kernels/cuda/conv_cudnn.h"

struct cudnnContext;

namespace tg::kernels::cuda {

struct ConvFePlan;  // the built graph (defined where the frontend's types are)

struct ConvFeBuilt {
  std::shared_ptr<ConvFePlan> plan;  // null: the graph API declined the key (`why` says how)
  size_t workspace = 0;
  std::string engine;  // the chosen plan's name ("eng0_k2=1...")
  int candidates = 0;  // engines built and timed (benchmarked), or 1 (the heuristic's first that built)
  double ms = 0;       // the chosen engine's time on the scratch operands when timed; 0 otherwise
  std::string why;
};

// Scratch operands for timing: a, b and out as ConvDnn's calls take them (conv2d: x, w -> y;
// conv2d_grad_input: dy, w -> dx; conv2d_grad_weight: dy, x -> dw), ws of max_workspace bytes.
struct ConvFeScratch {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  void* ws = nullptr;
};

// Builds key k's convolution under the rule; times the candidates on `scratch` (on the
// handle's stream) when rule.benchmark and scratch is given.
ConvFeBuilt conv_fe_build(cudnnContext* handle, const ConvDnnKey& k, const ConvDnnRule& rule, size_t max_workspace,
                          const ConvFeScratch* scratch);
// Enqueues the plan on the handle's stream; throws CudaError naming the key on failure.
void conv_fe_run(cudnnContext* handle, const ConvFePlan& p, const void* a, const void* b, void* out, void* ws);
// Whether the graph of key k validates for sm_version (no device needed): "" or the
// frontend's message.
std::string conv_fe_check_graph(const ConvDnnKey& k, int sm_version);

}  // namespace tg::kernels::cuda
