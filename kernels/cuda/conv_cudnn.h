#pragma once
// conv2d, conv2d_grad_input and conv2d_grad_weight through cuDNN's convolution API
// (cudnnConvolutionForward, BackwardData, BackwardFilter; conv_transpose2d as BackwardData), in f32, bf16 and f16: NCHW
// tensors, or NHWC ones with attrs.conv.channels_last (CUDNN_TENSOR_NHWC descriptors, the layout
// cuDNN's tensor-core kernels read without transposing; the filter below), f32 compute type (16-bit: products exact in f32, f32 sums, one rounding on the
// store), groups through the descriptor's group count. f32 runs on the FMA units unless the
// backend's tf32 switch is on (CudaExecContext::tf32), as the GEMMs do.
//
// The algorithm is chosen once per geometry, op and dtype (ConvDnnKey) and kept: the first
// of a list of cuDNN's that is deterministic (ConvDnnRule::deterministic), computes the
// products directly (the implicit-GEMM and GEMM forms: FFT and Winograd round the operands in
// a transformed domain) and needs at most the backend's workspace. The list is cuDNN's
// heuristic (cudnnGet*Algorithm_v7, no timing) by default, or, with ConvDnnRule::benchmark,
// every algorithm timed on the device on scratch operands (cudnnFind*AlgorithmEx), fastest
// first, as PyTorch's cudnn.benchmark does. The heuristic's answer depends only on the key and
// the device, so the static executor (which asks at compile time through Backend::prepare and
// gives the call a workspace in its arena) and the dynamic executor (which asks per call and
// runs in the backend's workspace) run the same algorithm, to the same bits. A timed choice
// is kept per backend: executors sharing one backend share it; two backends, or two
// processes, may time differently and choose differently. Either way the first call of a
// key pays for the choice (ConvDnnChoice::choose_ms): the static executor at compile time,
// the dynamic one at the first step that meets the shape.
//
// The fused convolutions (conv2d_bias_act, conv2d_bias_add_act: graph/conv.h) choose their
// algorithm as conv2d does and run as cudnnConvolutionBiasActivationForward, y = act(conv(x)
// + z + bias) with the residual as z, in one pass over the output, where cuDNN defines that
// call: f32 and f16 (it lists no bf16 configuration), ReLU or identity, and identity only with
// the implicit precomputed GEMM, which the rule then prefers. Elsewhere they run as cuDNN's
// convolution followed by the epilogue kernel (cuda::conv_epilogue), which reads the output
// once more; so does a key whose fused call cuDNN refuses (NOT_SUPPORTED) from then on. The fused call rounds once, the epilogue after the stored convolution: in bf16
// and f16 the two differ by a rounding of the output type.
//
// The graph's weight is [K, C/groups, R, S] in both layouts: it is the parameter the
// optimizer, the checkpoints and the ONNX import know. cuDNN's NHWC convolutions want every
// operand NHWC, the filter as KRSC, so an NHWC key runs on a KRSC copy at the start of the
// call's workspace (ConvDnnPlan::filter_copy, counted in conv_dnn_workspace_bytes): transposed
// from the weight before a forward or backward-data call, and transposed back into dw after a
// backward-filter call. A filter is small beside the feature maps, so the two copies cost
// little; PyTorch makes the same copy of a weight that is not channels_last.
//
// A call runs on the direct kernels (kernels/cuda/conv.cu) instead when cuDNN cannot take it:
// pads whose trailing side is not the leading one's (cuDNN pads both sides alike; a geometry
// whose symmetric padding gives the same output is taken), sizes past 32-bit ints, a pointer
// not 16-byte aligned, or no algorithm that fits the rule above. Which path a call takes
// depends only on the key and the pointers' alignment: CudaBackend::prepare returns a plan
// exactly for the calls that run here.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/conv.h"
#include "kernels/op_call.h"

namespace tg::kernels {
struct CudaExecContext;
}

namespace tg::kernels::cuda {

// What fixes a convolution's algorithm.
struct ConvDnnKey {
  OpKind op = OpKind::conv2d;
  DType dtype = DType::F32;
  Act act = Act::none;  // the fused convolutions' activation
  bool tf32 = false;
  ConvGeometry g;
  bool operator==(const ConvDnnKey& o) const;
};
// A key's geometry as reports and messages write it: "n32 c64 56x56 k64 3x3 s1x1 p1x1 d1x1
// g1", then " tf32", the fused activation and " nhwc" where the key has them (a report's
// conv_algorithm rows are told apart by it: a pass sweep meets both layouts).
std::string conv_dnn_key_geometry(const ConvDnnKey& k);

// One key's descriptors and algorithm (defined where cuDNN's types are).
class ConvDnnPlan;

// How algorithms are chosen (CudaBackendOptions::conv_benchmark, conv_deterministic).
struct ConvDnnRule {
  bool benchmark = false;     // time cuDNN's algorithms (cudnnFind*AlgorithmEx); else its heuristic
  bool deterministic = true;  // only algorithms cuDNN marks deterministic
  bool transforms = false;    // FFT and Winograd too (else only algorithms that sum products)
  bool frontend = false;      // cuDNN's graph API first (conv_cudnn_frontend.h), the legacy API where it declines
};

// What the first call of a key settled, for reports.
struct ConvDnnChoice {
  ConvDnnKey key;
  std::string algo;          // "implicit_precomp_gemm", "bwd_filter_algo_1", ...; "direct" when none fits
  bool benchmarked = false;  // chosen by timing (else the heuristic's order, or no choice at all)
  bool deterministic = false;
  size_t workspace = 0;
  double choose_ms = 0;  // host time of the choice: what the key's first call paid
  double algo_ms = 0;    // cuDNN's time of the chosen algorithm when timed; 0 otherwise
  // What cuDNN offered (as it ran: status success) and why offers faster than the chosen
  // one (or all, when none was chosen) were passed over: an offer counts once, for the first
  // rule it breaks in this order.
  int offers = 0;
  int passed_nondeterministic = 0;
  int passed_transform = 0;    // FFT or Winograd, without rule.transforms
  int passed_workspace = 0;    // needs more than the limit
  size_t passed_workspace_least = 0;  // the least workspace among those
  // With ConvDnnRule::frontend: why the graph API did not take the key (empty when it did:
  // algo is then "fe:" and the engine's name, offers the engines timed (1 unbenchmarked),
  // deterministic whether the rule admitted deterministic engines only, algo_ms the chosen
  // engine's time when timed).
  std::string frontend_why;
};

// The cuDNN state of one backend: one handle (made at the first convolution, so a backend
// that runs none never loads cuDNN) and the plans by key. Thread-safe.
class ConvDnn {
 public:
  // max_workspace: the most workspace an algorithm may need (the same for both executors).
  // A call without its own workspace whose plan needs more than the context's runs in a
  // buffer of this object's, grown (outside stream capture) to the largest plan so far.
  explicit ConvDnn(size_t max_workspace, ConvDnnRule rule = {});
  ~ConvDnn();
  ConvDnn(const ConvDnn&) = delete;
  ConvDnn& operator=(const ConvDnn&) = delete;

  // The plan of call c (geometry g), or null when the call runs on the direct kernels. A
  // new key's plan is made now; with warm_up, and s not capturing, it also runs once on
  // zeroed scratch, so that cuDNN's first-run work (loading its kernels) is done before a
  // CUDA Graph captures the call.
  const ConvDnnPlan* plan(const OpCall& c, const ConvGeometry& g, bool tf32, cudaStream_t s, bool warm_up);
  // Enqueues c on ctx.stream with plan p, in c.workspace when the call brings one, else in
  // ctx.workspace, or this object's own buffer when p needs more than ctx's.
  void run(const ConvDnnPlan& p, const OpCall& c, const CudaExecContext& ctx);
  // Every key's choice so far, in the order the keys were first met.
  std::vector<ConvDnnChoice> choices() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

size_t conv_dnn_workspace_bytes(const ConvDnnPlan& p);

// Whether cuDNN's descriptors express geometry g: sizes within int32, and trailing pads that
// give the output symmetric pads give. The rest of the rule (the pointers, an algorithm) is
// plan()'s.
bool conv_dnn_geometry_ok(const ConvGeometry& g);

// Runs c (a conv2d, conv2d_grad_input, conv2d_grad_weight or fused convolution of geometry g) through cuDNN
// when the context has it (ctx.dnn) and a plan takes the call (c.prepared, else asked now);
// false: nothing was enqueued, the call is the direct kernels'.
bool run_conv_dnn(const OpCall& c, const ConvGeometry& g, const CudaExecContext& ctx);

// The cuDNN library loaded at run time (cudnnGetVersion(): 91900 for 9.19.0), which may be
// older than the headers the build saw; 0 in a build without cuDNN.
int cudnn_loaded_version();

}  // namespace tg::kernels::cuda
