// The cuDNN convolutions (conv_cudnn.h): descriptors, the algorithm rule and the calls.
#include "kernels/cuda/conv_cudnn.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/capture.h"
#include "kernels/cuda/conv_cudnn_frontend.h"
#include "kernels/cuda/cudnn_handles.h"

namespace tg {

namespace cuda_detail {

namespace {
std::string cudnn_message(cudnnStatus_t s, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) cudaGetLastError();
  return fmt::format("{}:{}: {} failed: {}{}{} on device {}", file, line, call, cudnnGetErrorString(s),
                     detail[0] ? " (" : "", detail[0] ? std::string(detail) + ")" : std::string(), device);
}
}  // namespace

void throw_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) {
  throw CudaError(cudnn_message(s, call, file, line));
}

void log_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "twograph: warning: %s\n", cudnn_message(s, call, file, line).c_str());
}

}  // namespace cuda_detail

namespace kernels::cuda {

bool ConvDnnKey::operator==(const ConvDnnKey& o) const {
  const ConvGeometry &a = g, &b = o.g;
  return op == o.op && dtype == o.dtype && act == o.act && tf32 == o.tf32 && a.n == b.n && a.c == b.c &&
         a.h == b.h && a.w == b.w && a.k == b.k && a.p == b.p && a.q == b.q && a.r == b.r && a.s == b.s &&
         a.groups == b.groups && a.sh == b.sh && a.sw == b.sw && a.ph == b.ph && a.pw == b.pw && a.dh == b.dh &&
         a.dw == b.dw && a.nhwc == b.nhwc;
}

// A heuristic query: cuDNN answers NOT_SUPPORTED for a configuration it has no algorithm for
// at all, and that key's calls are the direct kernels' (no offer); any other failure throws.
#define TG_CUDNN_OFFERS(call, count)                                                          \
  do {                                                                                        \
    const cudnnStatus_t tg_offer_ = (call);                                                   \
    if (tg_offer_ == CUDNN_STATUS_NOT_SUPPORTED) count = 0;                                   \
    else if (tg_offer_ != CUDNN_STATUS_SUCCESS)                                               \
      ::tg::cuda_detail::throw_cudnn(tg_offer_, #call, __FILE__, __LINE__);                   \
  } while (0)

namespace {

struct KeyHash {
  size_t operator()(const ConvDnnKey& k) const {
    size_t h = std::hash<int>()(static_cast<int>(k.op)) * 31 + static_cast<size_t>(k.dtype) * 7 + k.tf32 +
               static_cast<size_t>(k.act) * 101 + (k.g.nhwc ? 7919u : 0u);
    for (int64_t v : {k.g.n, k.g.c, k.g.h, k.g.w, k.g.k, k.g.p, k.g.q, k.g.r, k.g.s, k.g.groups, k.g.sh, k.g.sw,
                      k.g.ph, k.g.pw, k.g.dh, k.g.dw})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

cudnnDataType_t dnn_type(DType dt) {
  switch (dt) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::I32:
    case DType::I64: break;  // no convolution takes integers (graph/dtype_rules.h)
  }
  return CUDNN_DATA_FLOAT;
}

bool is_conv(OpKind op) { return conv_window_from_weight(op); }

// cuDNN's descriptors hold int dims and strides.
bool fits_int(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

// cuDNN pads both sides of an axis alike: the geometry is cuDNN's when its leading pads,
// on both sides, give the same output size (the trailing pad only decides how many outputs
// there are; which inputs each output reads depends on the leading pad alone).
bool symmetric_output(int64_t in, int64_t pad, int64_t window, int64_t stride, int64_t dil, int64_t out) {
  const int64_t span = in + 2 * pad - dil * (window - 1) - 1;
  return span >= 0 && span / stride + 1 == out;
}

}  // namespace

int cudnn_loaded_version() { return static_cast<int>(cudnnGetVersion()); }

bool conv_dnn_geometry_ok(const ConvGeometry& g) {
  for (int64_t v : {g.n, g.c, g.h, g.w, g.k, g.p, g.q, g.r, g.s, g.groups, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw})
    if (!fits_int(v)) return false;
  for (int64_t elems : {g.n * g.c * g.h * g.w, g.n * g.k * g.p * g.q, g.k * (g.c / g.groups) * g.r * g.s})
    if (!fits_int(elems)) return false;
  return symmetric_output(g.h, g.ph, g.r, g.sh, g.dh, g.p) && symmetric_output(g.w, g.pw, g.s, g.sw, g.dw, g.q);
}

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The algorithms that sum the products of the operands as given (implicit GEMM and GEMM):
// their error is an f32 sum's. FFT and Winograd transform the operands first, and round them
// there (in the operands' dtype for bf16 and f16).
bool sums_products(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool sums_products(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool sums_products(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// The math type a plan runs with. f32 without tf32 is held to the FMA units: cuDNN's default
// math lets f32 convolutions round their operands to TF32 on sm_80 and later.
cudnnMathType_t run_math(DType dt, bool tf32, cudnnMathType_t offered) {
  return dt == DType::F32 && !tf32 ? CUDNN_FMA_MATH : offered;
}
// The one the heuristic is asked with.
cudnnMathType_t ask_math(DType dt, bool tf32) {
  if (dt != DType::F32) return CUDNN_TENSOR_OP_MATH;
  return tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// The algorithms' names in reports: cuDNN's enumerators, lower case, without their prefix.
std::string algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    default: return fmt::format("fwd_algo_{}", static_cast<int>(a));
  }
}
std::string algo_name(cudnnConvolutionBwdDataAlgo_t a) { return fmt::format("bwd_data_algo_{}", static_cast<int>(a)); }
std::string algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  return fmt::format("bwd_filter_algo_{}", static_cast<int>(a));
}

// An NHWC key's KRSC copy of the filter, rounded up to 256 bytes so that the algorithm's
// workspace after it stays aligned; none where KCRS and KRSC are the same bytes (a 1 x 1
// filter, or one input channel a group): a copy there moved every 1 x 1 weight and its
// gradient once a step (ResNet-50: 108 copies of 0.47 ms in all in bf16 at batch 32, H100).
size_t filter_copy_bytes(const ConvDnnKey& k) {
  const ConvGeometry& g = k.g;
  if (g.r * g.s == 1 || g.c / g.groups == 1) return 0;
  const size_t bytes = static_cast<size_t>(g.k * (g.c / g.groups) * g.r * g.s) * static_cast<size_t>(dtype_size(k.dtype));
  return (bytes + 255) / 256 * 256;
}

// The filter between the graph's [K, C/groups, R, S] and cuDNN's NHWC filter [K, R, S, C/groups].
void filter_to_krsc(const ConvDnnKey& k, const void* kcrs, void* krsc, cudaStream_t s) {
  const ConvGeometry& g = k.g;
  const int64_t dims[4] = {g.k, g.c / g.groups, g.r, g.s};
  const int perm[4] = {0, 2, 3, 1};
  transpose(kcrs, dims, 4, perm, krsc, s, k.dtype);
}
void filter_to_kcrs(const ConvDnnKey& k, const void* krsc, void* kcrs, cudaStream_t s) {
  const ConvGeometry& g = k.g;
  const int64_t dims[4] = {g.k, g.r, g.s, g.c / g.groups};
  const int perm[4] = {0, 3, 1, 2};
  transpose(krsc, dims, 4, perm, kcrs, s, k.dtype);
}

// Zeroed operands of a key's geometry, and a workspace after them, in one allocation: what
// the warm-up runs on and what benchmarking times. Empty (no pointers) when the device has
// too little free memory: both are optional, the call runs all the same.
struct ScratchOperands {
  tg::cuda::DeviceBuffer buf;
  char *x = nullptr, *y = nullptr, *w = nullptr, *bias = nullptr, *ws = nullptr;

  ScratchOperands(const ConvDnnKey& k, size_t workspace, cudaStream_t s) {
    const ConvGeometry& g = k.g;
    const size_t es = static_cast<size_t>(dtype_size(k.dtype));
    auto room = [&](int64_t elems) { return (static_cast<size_t>(elems) * es + 255) / 256 * 256; };
    const size_t bx = room(g.n * g.c * g.h * g.w), by = room(g.n * g.k * g.p * g.q);
    const size_t bw = room(g.k * (g.c / g.groups) * g.r * g.s), bb = room(g.k);
    try {
      buf = tg::cuda::DeviceBuffer::allocate(bx + by + bw + bb + workspace);
    } catch (const CudaError&) {
      return;
    }
    x = buf.as<char>();
    y = x + bx;
    w = y + by;
    bias = w + bw;
    ws = bias + bb;
    TG_CUDA_CHECK(cudaMemsetAsync(x, 0, bx + by + bw + bb, s));
  }
  bool ok() const { return x != nullptr; }
  // The key's operands here in the order ConvDnn's calls take them (enqueue's a, b, out).
  struct Call {
    const void* a;
    const void* b;
    void* out;
  };
  Call call(OpKind op) const {
    switch (op) {
      case OpKind::conv2d_grad_input: return {y, w, x};
      case OpKind::conv2d_grad_weight: return {y, x, w};
      default: return {x, w, y};  // the forward convolutions
    }
  }
};

}  // namespace

class ConvDnnPlan {
 public:
  ConvDnnKey key;
  tg::cuda::CudnnTensorDesc x, y;  // the input [N, C, H, W] and the output [N, K, P, Q] of conv2d
  tg::cuda::CudnnFilterDesc w;     // the weight [K, C/groups, R, S]
  tg::cuda::CudnnConvDesc conv;
  int algo = 0;  // the op's cudnnConvolution*Algo_t
  size_t workspace = 0;  // the algorithm's
  // NHWC keys: the bytes (rounded up to 256) of the filter's KRSC copy at the start of the
  // call's workspace, the algorithm's workspace after it; 0 for NCHW keys.
  size_t filter_copy = 0;
  bool warmed = false;
  // The fused convolutions: whether cudnnConvolutionBiasActivationForward runs them (else the
  // convolution, then cuda::conv_epilogue), with the bias [1, K, 1, 1] and the activation.
  // Cleared, under ConvDnn's lock, when cuDNN refuses the call for this key (NOT_SUPPORTED,
  // before it enqueues anything): a property of the key and the device, so every call of the
  // key, in either executor, then runs the same way.
  mutable bool fused_call = false;
  tg::cuda::CudnnTensorDesc bias;
  tg::cuda::CudnnActivationDesc act;
  // Set when cuDNN's graph API runs the key (ConvDnnRule::frontend): the descriptors above
  // are then unused, workspace is the engine's.
  std::shared_ptr<ConvFePlan> fe;
};

size_t conv_dnn_workspace_bytes(const ConvDnnPlan& p) { return p.filter_copy + p.workspace; }

struct ConvDnn::Impl {
  size_t max_workspace;
  ConvDnnRule rule;
  mutable std::mutex mu;
  tg::cuda::CudnnHandle handle;  // made at the first plan
  std::unordered_map<ConvDnnKey, std::unique_ptr<ConvDnnPlan>, KeyHash> plans;  // null: the direct kernels
  std::vector<ConvDnnChoice> chosen;  // one per key, in the order the keys were met
  // The workspace of calls that bring none and need more than their context's (run()).
  tg::cuda::DeviceBuffer own_workspace;

  // The descriptors of key k and its algorithm, or null when no algorithm fits the rule;
  // `choice` says which and how. Timing (rule.benchmark) runs on s, unless s is capturing.
  std::unique_ptr<ConvDnnPlan> make(const ConvDnnKey& k, cudaStream_t s, ConvDnnChoice& choice);
  // a, b: the op's inputs in the node's order; out: its output; bias, residual: the fused
  // convolutions' (residual null without one). Returns whether cuDNN's fused call ran: false
  // for a fused convolution leaves its epilogue to the caller.
  bool enqueue(const ConvDnnPlan& p, const void* a, const void* b, void* out, void* ws, size_t ws_bytes,
               cudaStream_t s, const void* bias = nullptr, const void* residual = nullptr);
  void warm_up(ConvDnnPlan& p, cudaStream_t s);
};

std::unique_ptr<ConvDnnPlan> ConvDnn::Impl::make(const ConvDnnKey& k, cudaStream_t s, ConvDnnChoice& choice) {
  const ConvGeometry& g = k.g;
  const cudnnDataType_t dt = dnn_type(k.dtype);
  auto p = std::make_unique<ConvDnnPlan>();
  p->key = k;
  const cudnnHandle_t h = handle.get();
  // Timed on scratch operands (zeros: a convolution's time does not depend on its values)
  // with a workspace of the most any algorithm may use, by the graph API and the legacy
  // search alike; the heuristic when the stream is being captured (no work may run there)
  // or the scratch does not fit on the device.
  std::unique_ptr<ScratchOperands> scratch;
  if (rule.benchmark && !stream_capturing(s)) {
    scratch = std::make_unique<ScratchOperands>(k, max_workspace, s);
    if (!scratch->ok()) scratch.reset();
    else TG_CUDNN_CHECK(cudnnSetStream(h, s));
  }
  const bool timed = scratch != nullptr;
  if (rule.frontend) {
    ConvFeScratch fs;
    if (timed) {
      const ScratchOperands::Call c = scratch->call(k.op);
      fs = {c.a, c.b, c.out, scratch->ws};
    }
    ConvFeBuilt built;
    try {
      built = conv_fe_build(h, k, rule, max_workspace, timed ? &fs : nullptr);
    } catch (const std::exception& e) {  // the frontend's own exceptions: the legacy API takes the key
      built.why = std::string("the cuDNN frontend threw: ") + e.what();
    }
    if (built.plan) {
      p->fe = std::move(built.plan);
      p->workspace = built.workspace;
      if (g.nhwc) p->filter_copy = filter_copy_bytes(k);  // the graph's filter is KRSC, as the legacy one
      choice.algo = "fe:" + built.engine;
      choice.benchmarked = timed;
      choice.deterministic = rule.deterministic;  // the rule dropped the nondeterministic engines
      choice.workspace = p->workspace;  // the engine's, as the legacy choice's is the algorithm's
      choice.offers = built.candidates;
      choice.algo_ms = built.ms;
      return p;
    }
    choice.frontend_why = built.why;
  }
  p->x = tg::cuda::CudnnTensorDesc::create();
  p->y = tg::cuda::CudnnTensorDesc::create();
  p->w = tg::cuda::CudnnFilterDesc::create();
  p->conv = tg::cuda::CudnnConvDesc::create();
  auto i = [](int64_t v) { return static_cast<int>(v); };
  // Every operand in the geometry's layout: cuDNN's NHWC convolutions take the filter as KRSC,
  // which the calls below make from the graph's KCRS weight in the workspace (conv_cudnn.h).
  const cudnnTensorFormat_t layout = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  TG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x.get(), layout, dt, i(g.n), i(g.c), i(g.h), i(g.w)));
  TG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y.get(), layout, dt, i(g.n), i(g.k), i(g.p), i(g.q)));
  TG_CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w.get(), dt, layout, i(g.k), i(g.c / g.groups), i(g.r), i(g.s)));
  if (g.nhwc) p->filter_copy = filter_copy_bytes(k);
  TG_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(p->conv.get(), i(g.ph), i(g.pw), i(g.sh), i(g.sw), i(g.dh), i(g.dw),
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TG_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv.get(), i(g.groups)));
  TG_CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv.get(), ask_math(k.dtype, k.tf32)));
  int on = 0, ok = 0, op = 0, oq = 0;
  TG_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv.get(), p->x.get(), p->w.get(), &on, &ok, &op, &oq));
  if (on != g.n || ok != g.k || op != g.p || oq != g.q) return nullptr;

  int chosen_at = -1;  // the index of the offer chosen
  // The first offer (fastest first when timed) that is deterministic where the rule asks
  // it, sums the products and fits the workspace, its workspace asked with the math type it
  // will run with.
  auto choose = [&](const auto& perf, int count, auto workspace_of, auto accept) -> bool {
    for (int j = 0; j < count; ++j) {
      const auto& r = perf[static_cast<size_t>(j)];
      if (r.status != CUDNN_STATUS_SUCCESS || (rule.deterministic && r.determinism != CUDNN_DETERMINISTIC) ||
          (!rule.transforms && !sums_products(r.algo)) || !accept(r.algo))
        continue;
      TG_CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv.get(), run_math(k.dtype, k.tf32, r.mathType)));
      size_t bytes = 0;
      if (workspace_of(r.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > max_workspace) continue;
      p->algo = static_cast<int>(r.algo);
      p->workspace = bytes;
      choice.algo = algo_name(r.algo);
      choice.benchmarked = timed;
      choice.deterministic = r.determinism == CUDNN_DETERMINISTIC;
      choice.workspace = bytes;
      choice.algo_ms = timed ? static_cast<double>(r.time) : 0.0;
      chosen_at = j;
      return true;
    }
    return false;
  };
  // Why the offers before the chosen one (all of them when none was) were passed over, for
  // reports: a run that lands on a slow algorithm says which rule kept the faster ones out.
  // A timed search skips what needs more workspace than it has (ALLOC_FAILED).
  auto tally = [&](const auto& perf, int count) {
    const int upto = chosen_at >= 0 ? chosen_at : count;
    for (int j = 0; j < count; ++j) {
      const auto& r = perf[static_cast<size_t>(j)];
      const bool too_big = r.status == CUDNN_STATUS_ALLOC_FAILED || r.memory > max_workspace;
      if (r.status != CUDNN_STATUS_SUCCESS && r.status != CUDNN_STATUS_ALLOC_FAILED) continue;
      ++choice.offers;
      if (j >= upto) continue;
      if (rule.deterministic && r.determinism != CUDNN_DETERMINISTIC) {
        ++choice.passed_nondeterministic;
      } else if (!rule.transforms && !sums_products(r.algo)) {
        ++choice.passed_transform;
      } else if (too_big) {
        ++choice.passed_workspace;
        if (r.memory > 0 && (choice.passed_workspace_least == 0 || r.memory < choice.passed_workspace_least))
          choice.passed_workspace_least = r.memory;
      }
    }
  };
  int max = 0, count = 0;
  bool found = false;
  auto any = [](auto) { return true; };
  switch (k.op) {
    case OpKind::conv2d:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act: {
      TG_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max));
      if (timed)
        TG_CUDNN_OFFERS(cudnnFindConvolutionForwardAlgorithmEx(h, p->x.get(), scratch->x, p->w.get(), scratch->w,
                                                               p->conv.get(), p->y.get(), scratch->y, max, &count,
                                                               perf.data(), scratch->ws, max_workspace),
                        count);
      else
        TG_CUDNN_OFFERS(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x.get(), p->w.get(), p->conv.get(), p->y.get(),
                                                               max, &count, perf.data()),
                        count);
      auto workspace_of = [&](cudnnConvolutionFwdAlgo_t a, size_t* b) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, p->x.get(), p->w.get(), p->conv.get(), p->y.get(), a, b);
      };
      // The fused call: f32 and f16 only; an identity activation only with the implicit
      // precomputed GEMM, so that algorithm is looked for first.
      const bool fusable = conv_has_epilogue(k.op) && k.dtype != DType::BF16;
      if (fusable && k.act == Act::none) {
        p->fused_call = choose(perf, count, workspace_of, [](cudnnConvolutionFwdAlgo_t a) {
          return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        });
        found = p->fused_call || choose(perf, count, workspace_of, any);
      } else {
        found = choose(perf, count, workspace_of, any);
        p->fused_call = found && fusable;
      }
      tally(perf, count);
      if (p->fused_call) {
        p->bias = tg::cuda::CudnnTensorDesc::create();
        TG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->bias.get(), CUDNN_TENSOR_NCHW, dt, 1, i(g.k), 1, 1));
        p->act = tg::cuda::CudnnActivationDesc::create();
        // NaN not propagated: a NaN sum gives 0, as the reference's `v > 0 ? v : 0` does.
        TG_CUDNN_CHECK(cudnnSetActivationDescriptor(
            p->act.get(), k.act == Act::relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
            CUDNN_NOT_PROPAGATE_NAN, 0.0));
      }
      break;
    }
    case OpKind::conv2d_grad_input: {
      TG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(max));
      if (timed)
        TG_CUDNN_OFFERS(cudnnFindConvolutionBackwardDataAlgorithmEx(h, p->w.get(), scratch->w, p->y.get(), scratch->y,
                                                                    p->conv.get(), p->x.get(), scratch->x, max,
                                                                    &count, perf.data(), scratch->ws, max_workspace),
                        count);
      else
        TG_CUDNN_OFFERS(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w.get(), p->y.get(), p->conv.get(),
                                                                    p->x.get(), max, &count, perf.data()),
                        count);
      found = choose(perf, count, [&](cudnnConvolutionBwdDataAlgo_t a, size_t* b) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w.get(), p->y.get(), p->conv.get(), p->x.get(), a,
                                                            b);
      }, any);
      tally(perf, count);
      break;
    }
    case OpKind::conv2d_grad_weight: {
      TG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(max));
      if (timed)
        TG_CUDNN_OFFERS(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p->x.get(), scratch->x, p->y.get(),
                                                                      scratch->y, p->conv.get(), p->w.get(),
                                                                      scratch->w, max, &count, perf.data(),
                                                                      scratch->ws, max_workspace),
                        count);
      else
        TG_CUDNN_OFFERS(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x.get(), p->y.get(), p->conv.get(),
                                                                      p->w.get(), max, &count, perf.data()),
                        count);
      found = choose(perf, count, [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* b) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x.get(), p->y.get(), p->conv.get(), p->w.get(), a,
                                                              b);
      }, any);
      tally(perf, count);
      break;
    }
    default: break;
  }
  // The scratch is freed here, and cudaFree waits for the device: the timing is finished.
  return found ? std::move(p) : nullptr;
}

bool ConvDnn::Impl::enqueue(const ConvDnnPlan& p, const void* a, const void* b, void* out, void* ws, size_t ws_bytes,
                            cudaStream_t s, const void* bias, const void* residual) {
  // An NHWC backward filter writes its KRSC result into the workspace, then the output.
  void* const dw = out;
  if (p.filter_copy && p.key.op == OpKind::conv2d_grad_weight) out = ws;
  if (conv_dnn_workspace_bytes(p) > ws_bytes)
    throw std::invalid_argument(fmt::format("cuDNN {}: its algorithm{} needs {} bytes of workspace, the call has {}",
                                            op_name(p.key.op), p.filter_copy ? " and the KRSC filter copy" : "",
                                            conv_dnn_workspace_bytes(p), ws_bytes));
  const float one = 1.0f, zero = 0.0f;  // beta 0: the output is written, never read
  const cudnnHandle_t h = handle.get();
  TG_CUDNN_CHECK(cudnnSetStream(h, s));
  // NHWC keys: the filter cuDNN reads (forward, backward data) or writes (backward filter) is
  // the KRSC copy at the workspace's start, the algorithm's workspace after it.
  void* const filter = p.filter_copy ? ws : nullptr;
  if (p.filter_copy) {
    ws = static_cast<char*>(ws) + p.filter_copy;
    if (p.key.op != OpKind::conv2d_grad_weight) {
      filter_to_krsc(p.key, b, filter, s);
      b = filter;
    }
  }
  if (p.fe) {  // the graph API's engine; a fused convolution's epilogue follows (ConvDnn::run)
    conv_fe_run(h, *p.fe, a, b, out, ws);
    if (p.filter_copy && p.key.op == OpKind::conv2d_grad_weight) filter_to_kcrs(p.key, out, dw, s);
    return false;
  }
  if (p.fused_call) {
    // z is the residual, or the output itself with alpha2 = 0. cuDNN does not promise to
    // leave z unread at alpha2 = 0, and 0 * NaN is NaN: the output is zeroed first.
    const float alpha2 = residual ? 1.0f : 0.0f;
    if (!residual) {
      const ConvGeometry& g = p.key.g;
      TG_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(g.n * g.k * g.p * g.q) * dtype_size(p.key.dtype), s));
    }
    const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
        h, &one, p.x.get(), a, p.w.get(), b, p.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws,
        p.workspace, &alpha2, p.y.get(), residual ? residual : out, p.bias.get(), bias, p.act.get(), p.y.get(), out);
    if (st == CUDNN_STATUS_SUCCESS) return true;
    if (st != CUDNN_STATUS_NOT_SUPPORTED)
      ::tg::cuda_detail::throw_cudnn(st, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
    p.fused_call = false;  // the convolution below, then the epilogue (ConvDnn::run)
  }
  switch (p.key.op) {
    case OpKind::conv2d:  // a = x, b = w; the fused convolutions without the fused call: their convolution
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act:
      TG_CUDNN_CHECK(cudnnConvolutionForward(h, &one, p.x.get(), a, p.w.get(), b, p.conv.get(),
                                             static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws, p.workspace, &zero,
                                             p.y.get(), out));
      break;
    case OpKind::conv2d_grad_input:  // a = dy, b = w
      TG_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, p.w.get(), b, p.y.get(), a, p.conv.get(),
                                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws, p.workspace,
                                                  &zero, p.x.get(), out));
      break;
    case OpKind::conv2d_grad_weight:  // a = dy, b = x
      TG_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &one, p.x.get(), b, p.y.get(), a, p.conv.get(),
                                                    static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), ws,
                                                    p.workspace, &zero, p.w.get(), out));
      if (p.filter_copy) filter_to_kcrs(p.key, out, dw, s);
      break;
    default: throw std::logic_error(std::string("cuDNN convolution given ") + op_name(p.key.op));
  }
  return false;
}

void ConvDnn::Impl::warm_up(ConvDnnPlan& p, cudaStream_t s) {
  if (stream_capturing(s)) return;
  // Too little free memory for scratch operands: the warm-up is only there to load cuDNN's
  // kernels early; the call runs all the same.
  const size_t ws = conv_dnn_workspace_bytes(p);
  ScratchOperands o(p.key, ws, s);
  if (!o.ok()) return;
  const ScratchOperands::Call c = o.call(p.key.op);
  // The fused convolutions' bias, and the residual (the output's own zeros) of the one with it.
  enqueue(p, c.a, c.b, c.out, o.ws, ws, s, conv_has_epilogue(p.key.op) ? o.bias : nullptr,
          p.key.op == OpKind::conv2d_bias_add_act ? o.y : nullptr);
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  p.warmed = true;
}

ConvDnn::ConvDnn(size_t max_workspace, ConvDnnRule rule) : impl_(std::make_unique<Impl>()) {
  impl_->max_workspace = max_workspace;
  impl_->rule = rule;
}

ConvDnn::~ConvDnn() = default;

const ConvDnnPlan* ConvDnn::plan(const OpCall& c, const ConvGeometry& g, bool tf32, cudaStream_t s, bool warm_up) {
  if (!is_conv(c.op) || !conv_dnn_geometry_ok(g)) return nullptr;
  for (int i = 0; i < c.num_inputs; ++i)
    if (!aligned16(c.in[static_cast<size_t>(i)].data)) return nullptr;
  if (!aligned16(c.out.data)) return nullptr;
  ConvDnnKey k;
  // A transposed convolution is conv2d_grad_input of its x (graph/conv.h: the same geometry,
  // operands in the same order), so it shares that op's plans.
  k.op = c.op == OpKind::conv_transpose2d ? OpKind::conv2d_grad_input : c.op;
  k.dtype = c.out.dtype;
  if (conv_has_epilogue(c.op)) k.act = c.attrs->act;
  k.tf32 = tf32 && k.dtype == DType::F32;
  k.g = g;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->handle) impl_->handle = tg::cuda::CudnnHandle::create();
  auto it = impl_->plans.find(k);
  if (it == impl_->plans.end()) {
    ConvDnnChoice choice;
    choice.key = k;
    choice.algo = "direct";  // until an algorithm fits
    const auto t0 = std::chrono::steady_clock::now();
    it = impl_->plans.emplace(k, impl_->make(k, s, choice)).first;
    choice.choose_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    impl_->chosen.push_back(std::move(choice));
  }
  ConvDnnPlan* p = it->second.get();
  if (p && warm_up && !p->warmed) impl_->warm_up(*p, s);
  return p;
}

void ConvDnn::run(const ConvDnnPlan& p, const OpCall& c, const CudaExecContext& ctx) {
  void* ws = c.workspace ? c.workspace : ctx.workspace;
  size_t ws_bytes = c.workspace ? c.workspace_bytes : ctx.workspace_bytes;
  const bool fused = conv_has_epilogue(c.op);
  bool fused_call = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const size_t need = conv_dnn_workspace_bytes(p);
    if (!c.workspace && need > ws_bytes) {
      if (impl_->own_workspace.bytes() < need) {
        // cudaFree waits for the device, so no queued call still uses the old buffer; none can
        // be allocated while a stream is captured (the static executor brings its own).
        if (stream_capturing(ctx.stream))
          throw std::logic_error(fmt::format(
              "cuDNN {}: its algorithm needs {} bytes of workspace and the call, captured, brings none; "
              "prepare the call (Backend::prepare) and give it a workspace of that size",
              op_name(p.key.op), need));
        impl_->own_workspace.reset();
        impl_->own_workspace = tg::cuda::DeviceBuffer::allocate(need);
      }
      ws = impl_->own_workspace.get();
      ws_bytes = impl_->own_workspace.bytes();
    }
    fused_call = impl_->enqueue(p, c.in[0].data, c.in[1].data, c.out.data, ws, ws_bytes, ctx.stream,
                                fused ? c.in[2].data : nullptr,
                                c.op == OpKind::conv2d_bias_add_act ? c.in[3].data : nullptr);
  }
  if (fused && !fused_call) conv_epilogue(c, p.key.g, ctx.stream);
}

std::vector<ConvDnnChoice> ConvDnn::choices() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->chosen;
}

bool run_conv_dnn(const OpCall& c, const ConvGeometry& g, const CudaExecContext& ctx) {
  if (!ctx.dnn || !is_conv(c.op)) return false;
  const ConvDnnPlan* p = c.prepared ? static_cast<const ConvDnnPlan*>(c.prepared)
                                    : ctx.dnn->plan(c, g, ctx.tf32, ctx.stream, false);
  if (!p) return false;
  ctx.dnn->run(*p, c, ctx);
  return true;
}

}  // namespace kernels::cuda
}  // namespace tg
