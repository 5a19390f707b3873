// The convolutions through cuDNN's graph API (conv_cudnn_frontend.h).
#include "kernels/cuda/conv_cudnn_frontend.h"

#include <cudnn_frontend.h>
#include <fmt/format.h>

#include <unordered_map>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cudnn_handles.h"
#include "kernels/cuda/event_timing.h"
#include "kernels/cuda/raii.h"

namespace tg::kernels::cuda {

namespace fe = cudnn_frontend;

struct ConvFePlan {
  ConvDnnKey key;
  std::shared_ptr<fe::graph::Graph> graph;
};

namespace {

// The graph's tensors, by uid (the variant pack's keys): the call's a, b and out.
enum Uid : int64_t { kA = 1, kB, kOut };

// The most engines a benchmarked key builds and times (PyTorch's cudnn.benchmark caps its
// search alike).
constexpr int kMaxTimed = 10;

// The chosen plan's time on the scratch operands, as the legacy Find reports its choice's:
// one untimed run, then the mean of kTimedRuns, on the handle's stream; -1 when a run fails.
constexpr int kTimedRuns = 3;
double time_chosen(fe::graph::Graph& gr, cudnnHandle_t handle, std::unordered_map<int64_t, void*>& pack, void* ws) {
  cudaStream_t stream = nullptr;
  TG_CUDNN_CHECK(cudnnGetStream(handle, &stream));
  return tg::cuda::mean_run_ms(stream, 1, kTimedRuns, [&] { return !gr.execute(handle, pack, ws).is_bad(); });
}

std::string describe(const ConvDnnKey& k) {
  return fmt::format("{} {} {}", op_name(k.op), dtype_name(k.dtype), conv_dnn_key_geometry(k));
}

std::string failure(fe::error_t e, const char* call, const ConvDnnKey& k) {
  return fmt::format("{} failed for {}: {}", call, describe(k), e.get_message());
}

fe::DataType_t fe_type(DType dt) {
  switch (dt) {
    case DType::BF16: return fe::DataType_t::BFLOAT16;
    case DType::F16: return fe::DataType_t::HALF;
    default: return fe::DataType_t::FLOAT;
  }
}

// A packed tensor of dims {n, c, h, w} (the graph API's order in either layout): NCHW, or
// NHWC (for a filter: KRSC) with channels_last.
fe::graph::Tensor_attributes tensor4(const char* name, int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w,
                                     bool channels_last) {
  const std::vector<int64_t> stride = channels_last ? std::vector<int64_t>{h * w * c, 1, w * c, c}
                                                    : std::vector<int64_t>{c * h * w, h * w, w, 1};
  return fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({n, c, h, w}).set_stride(stride);
}

bool is_forward(OpKind op) {
  return op == OpKind::conv2d || op == OpKind::conv2d_bias_act || op == OpKind::conv2d_bias_add_act;
}

// Key k's graph: one convolution node, its operands NCHW with the weight KCRS, or NHWC with
// the weight's KRSC copy (conv_cudnn.h).
void build_graph(const ConvDnnKey& k, fe::graph::Graph& gr) {
  const ConvGeometry& g = k.g;
  gr.set_io_data_type(fe_type(k.dtype)).set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<int64_t> pad{g.ph, g.pw}, stride{g.sh, g.sw}, dil{g.dh, g.dw};
  const int64_t cg = g.c / g.groups;
  auto x = [&](int64_t uid) { return tensor4("x", uid, g.n, g.c, g.h, g.w, g.nhwc); };
  auto y = [&](int64_t uid) { return tensor4("y", uid, g.n, g.k, g.p, g.q, g.nhwc); };
  auto w = [&](int64_t uid) { return tensor4("w", uid, g.k, cg, g.r, g.s, g.nhwc); };
  std::shared_ptr<fe::graph::Tensor_attributes> out;
  fe::graph::Tensor_attributes want;
  if (is_forward(k.op)) {
    out = gr.conv_fprop(gr.tensor(x(kA)), gr.tensor(w(kB)),
                        fe::graph::Conv_fprop_attributes().set_padding(pad).set_stride(stride).set_dilation(dil));
    want = y(kOut);
  } else if (k.op == OpKind::conv2d_grad_input) {
    out = gr.conv_dgrad(gr.tensor(y(kA)), gr.tensor(w(kB)),
                        fe::graph::Conv_dgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(dil));
    want = x(kOut);
  } else {
    out = gr.conv_wgrad(gr.tensor(y(kA)), gr.tensor(x(kB)),
                        fe::graph::Conv_wgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(dil));
    want = w(kOut);
  }
  out->set_name("out").set_uid(kOut).set_dim(want.get_dim()).set_stride(want.get_stride()).set_output(true);
}

// The engines' notes the rule rules out (conv_cudnn_frontend.h).
std::vector<fe::NumericalNote_t> excluded_notes(const ConvDnnKey& k, const ConvDnnRule& rule) {
  std::vector<fe::NumericalNote_t> out;
  if (rule.deterministic) out.push_back(fe::NumericalNote_t::NONDETERMINISTIC);
  if (!rule.transforms)
    for (auto n : {fe::NumericalNote_t::FFT, fe::NumericalNote_t::WINOGRAD, fe::NumericalNote_t::WINOGRAD_TILE_4x4,
                   fe::NumericalNote_t::WINOGRAD_TILE_6x6, fe::NumericalNote_t::WINOGRAD_TILE_13x13})
      out.push_back(n);
  // Converting the inputs down (f32 to f16: overflow, flushed subnormals) is never asked for.
  out.push_back(fe::NumericalNote_t::DOWN_CONVERT_INPUTS);
  if (k.dtype == DType::F32 && !k.tf32) out.push_back(fe::NumericalNote_t::TENSOR_CORE);
  // Partial sums reduced below f32, in any dtype: the sums of products the rule admits are f32's.
  out.push_back(fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION);
  return out;
}

}  // namespace

ConvFeBuilt conv_fe_build(cudnnContext* handle, const ConvDnnKey& k, const ConvDnnRule& rule, size_t max_workspace,
                          const ConvFeScratch* scratch) {
  ConvFeBuilt r;
  auto p = std::make_shared<ConvFePlan>();
  p->key = k;
  p->graph = std::make_shared<fe::graph::Graph>();
  fe::graph::Graph& gr = *p->graph;
  build_graph(k, gr);
#define TG_FE_STEP(call)                     \
  do {                                       \
    fe::error_t tg_fe_ = (call);             \
    if (tg_fe_.is_bad()) {                   \
      r.why = failure(tg_fe_, #call, k);     \
      return r;                              \
    }                                        \
  } while (0)
  TG_FE_STEP(gr.validate());
  TG_FE_STEP(gr.build_operation_graph(handle));
  TG_FE_STEP(gr.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
  gr.deselect_numeric_notes(excluded_notes(k, rule));
  gr.deselect_workspace_greater_than(static_cast<int64_t>(max_workspace));
  TG_FE_STEP(gr.check_support(handle));
  const bool timed = rule.benchmark && scratch != nullptr;
  if (timed) {
    // The first kMaxTimed engines that build under the rule, in the heuristics' order, each
    // timed (building and timing every engine of a long list costs seconds a shape).
    int built = 0;
    for (int64_t i = 0; i < gr.get_execution_plan_count() && built < kMaxTimed; ++i)
      if (gr.build_plan_at_index(i).is_good()) ++built;
    if (built == 0) {
      r.why = fmt::format("no engine of {} built under the rule", describe(k));
      return r;
    }
    std::unordered_map<int64_t, void*> pack{
        {kA, const_cast<void*>(scratch->a)}, {kB, const_cast<void*>(scratch->b)}, {kOut, scratch->out}};
    TG_FE_STEP(gr.autotune(handle, pack, scratch->ws));
    r.candidates = built;
    r.ms = time_chosen(gr, handle, pack, scratch->ws);
    if (r.ms < 0) {
      r.why = fmt::format("the chosen engine of {} failed to run on the scratch operands", describe(k));
      return r;
    }
  } else {
    TG_FE_STEP(gr.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE));
    r.candidates = 1;
  }
  int64_t ws = 0;
  TG_FE_STEP(gr.get_workspace_size(ws));
  if (ws < 0 || static_cast<size_t>(ws) > max_workspace) {
    r.why = fmt::format("the chosen engine of {} needs {} bytes of workspace, past the limit of {}", describe(k), ws,
                        max_workspace);
    return r;
  }
  TG_FE_STEP(gr.get_plan_name(r.engine));
#undef TG_FE_STEP
  r.workspace = static_cast<size_t>(ws);
  r.plan = std::move(p);
  return r;
}

void conv_fe_run(cudnnContext* handle, const ConvFePlan& p, const void* a, const void* b, void* out, void* ws) {
  std::unordered_map<int64_t, void*> pack{{kA, const_cast<void*>(a)}, {kB, const_cast<void*>(b)}, {kOut, out}};
  fe::error_t e = p.graph->execute(handle, pack, ws);
  if (e.is_bad()) throw CudaError(fmt::format("{}:{}: {}", __FILE__, __LINE__, failure(e, "Graph::execute", p.key)));
}

std::string conv_fe_check_graph(const ConvDnnKey& k, int sm_version) {
  fe::graph::Graph gr;
  gr.set_sm_version(sm_version);
  build_graph(k, gr);
  fe::error_t e = gr.validate();
  return e.is_good() ? std::string() : failure(e, "Graph::validate", k);
}

}  // namespace tg::kernels::cuda
