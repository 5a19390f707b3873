// The cuDNN fused attention (attention_cudnn.h): the graphs, their cache and the calls.
#include "kernels/cuda/attention_cudnn.h"

#include <cudnn_frontend.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/attention_dnn_rule.h"
#include "kernels/cuda/attention_cudnn_graph.h"
#include "kernels/cuda/attention_cudnn_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/capture.h"
#include "kernels/cuda/cudnn_handles.h"

namespace tg::kernels::cuda {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

namespace {

const char* fe_code_name(fe::error_code_t c) {
  switch (c) {
    case fe::error_code_t::OK: return "OK";
    case fe::error_code_t::ATTRIBUTE_NOT_SET: return "ATTRIBUTE_NOT_SET";
    case fe::error_code_t::SHAPE_DEDUCTION_FAILED: return "SHAPE_DEDUCTION_FAILED";
    case fe::error_code_t::INVALID_TENSOR_NAME: return "INVALID_TENSOR_NAME";
    case fe::error_code_t::INVALID_VARIANT_PACK: return "INVALID_VARIANT_PACK";
    case fe::error_code_t::GRAPH_NOT_SUPPORTED: return "GRAPH_NOT_SUPPORTED";
    case fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED: return "GRAPH_EXECUTION_PLAN_CREATION_FAILED";
    case fe::error_code_t::GRAPH_EXECUTION_FAILED: return "GRAPH_EXECUTION_FAILED";
    case fe::error_code_t::HEURISTIC_QUERY_FAILED: return "HEURISTIC_QUERY_FAILED";
    case fe::error_code_t::CUDNN_BACKEND_API_FAILED: return "CUDNN_BACKEND_API_FAILED";
    case fe::error_code_t::CUDA_API_FAILED: return "CUDA_API_FAILED";
    case fe::error_code_t::INVALID_CUDA_DEVICE: return "INVALID_CUDA_DEVICE";
    case fe::error_code_t::HANDLE_ERROR: return "HANDLE_ERROR";
    default: return "error";
  }
}

std::string describe(const AttnDnnKey& k) {
  const AttentionGeometry& g = k.g;
  return fmt::format("{} {} b{} h{} s{} d{}{}{}{} alpha {}", op_name(k.op), dtype_name(k.dtype), g.batch, g.heads,
                     g.seq, g.dh, k.causal ? " causal" : "", k.masked ? " key_lengths" : "",
                     k.deterministic ? "" : " atomics", k.alpha);
}

// A frontend call's failure: the file, the line, the call as written, the frontend's code and
// its message, and the key it was made for.
std::string fe_failure(fe::error_t e, const char* call, const char* file, int line, const AttnDnnKey& k) {
  return fmt::format("{}:{}: {} failed for {}: {} ({})", file, line, call, describe(k), fe_code_name(e.get_code()),
                     e.get_message());
}

// While a graph is built: a failure is cuDNN declining the key, recorded as the reason the
// own kernels run it.
#define TG_FE_BUILD(call)                                                     \
  do {                                                                        \
    fe::error_t tg_fe_ = (call);                                              \
    if (tg_fe_.is_bad()) {                                                    \
      choice.why = fe_failure(tg_fe_, #call, __FILE__, __LINE__, k);          \
      return nullptr;                                                         \
    }                                                                         \
  } while (0)

// While a built graph runs: a failure throws.
#define TG_FE_CHECK(call, key)                                                                   \
  do {                                                                                           \
    fe::error_t tg_fe_ = (call);                                                                 \
    if (tg_fe_.is_bad()) throw CudaError(fe_failure(tg_fe_, #call, __FILE__, __LINE__, (key))); \
  } while (0)

struct KeyHash {
  size_t operator()(const AttnDnnKey& k) const {
    uint32_t a = 0;
    std::memcpy(&a, &k.alpha, sizeof a);
    size_t h = static_cast<size_t>(k.op) * 31 + static_cast<size_t>(k.dtype) * 7 + k.causal * 3 + k.masked * 5 +
               k.deterministic * 11 + a;
    for (int64_t v : {k.g.batch, k.g.heads, k.g.seq, k.g.dh}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

// The graphs' tensors, by uid (the variant pack's keys).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kSeqQ, kSeqKv, kDout, kDq, kDk, kDv };

size_t round_up(size_t n) { return (n + 255) / 256 * 256; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool AttnDnnKey::operator==(const AttnDnnKey& o) const {
  return op == o.op && dtype == o.dtype && g.batch == o.g.batch && g.heads == o.g.heads && g.seq == o.g.seq &&
         g.dh == o.g.dh && causal == o.causal && masked == o.masked && deterministic == o.deterministic &&
         std::memcmp(&alpha, &o.alpha, sizeof alpha) == 0;
}

// Where a call's buffers sit in its workspace, each on a 256-byte boundary: cuDNN's own
// workspace first, then the padding mask's int32 lengths, attention_lse's output (which the
// op does not keep), attention_grad's f32 statistics.
struct AttnLayout {
  size_t seq_lens = 0, out = 0, stats = 0, total = 0;
  AttnLayout() = default;
  AttnLayout(const AttnDnnKey& k, size_t dnn) {
    const AttentionGeometry& g = k.g;
    size_t at = round_up(dnn);
    if (k.masked) {
      seq_lens = at;
      at += round_up(2 * static_cast<size_t>(g.batch) * sizeof(int32_t));
    }
    if (k.op == OpKind::attention_lse) {
      out = at;
      at += round_up(static_cast<size_t>(g.batch * g.seq * g.ld()) * dtype_size(k.dtype));
    }
    if (k.op == OpKind::attention_grad) {
      stats = at;
      at += round_up(static_cast<size_t>(g.rows() * g.seq) * sizeof(float));
    }
    total = at;
  }
};

class AttnDnnPlan {
 public:
  AttnDnnKey key;
  std::shared_ptr<fe::graph::Graph> graph;
  AttnLayout layout;
  bool warmed = false;
};

size_t attention_dnn_workspace_bytes(const AttnDnnPlan& p) { return p.layout.total; }

namespace {

// A head view [B, S, heads * dh] as cuDNN's [B, heads, S, dh].
fe::graph::Tensor_attributes& head_view(fe::graph::Tensor_attributes& t, const char* name, int64_t uid,
                                        const AttentionGeometry& g) {
  return t.set_name(name)
      .set_uid(uid)
      .set_dim({g.batch, g.heads, g.seq, g.dh})
      .set_stride({g.seq * g.ld(), g.dh, g.ld(), 1});
}

// The row statistics [B, heads, S, 1], f32: row (b * heads + h) * S + i, as the ops' pairs.
fe::graph::Tensor_attributes& stats_view(fe::graph::Tensor_attributes& t, const AttentionGeometry& g) {
  return t.set_name("stats")
      .set_uid(kStats)
      .set_dim({g.batch, g.heads, g.seq, 1})
      .set_stride({g.heads * g.seq, g.seq, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

TensorPtr input_view(fe::graph::Graph& gr, const char* name, int64_t uid, const AttentionGeometry& g) {
  fe::graph::Tensor_attributes t;
  return gr.tensor(head_view(t, name, uid, g));
}

TensorPtr seq_lens_tensor(fe::graph::Graph& gr, const char* name, int64_t uid, int64_t batch) {
  return gr.tensor(fe::graph::Tensor_attributes()
                       .set_name(name)
                       .set_uid(uid)
                       .set_dim({batch, 1, 1, 1})
                       .set_stride({1, 1, 1, 1})
                       .set_data_type(fe::DataType_t::INT32));
}

// The masks and the scale, common to both directions' attributes.
template <typename Attributes>
void set_masks(Attributes& a, const AttnDnnKey& k, fe::graph::Graph& gr) {
  a.set_attn_scale(k.alpha);
  if (k.causal) a.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
  if (k.masked)
    a.set_padding_mask(true)
        .set_seq_len_q(seq_lens_tensor(gr, "seq_len_q", kSeqQ, k.g.batch))
        .set_seq_len_kv(seq_lens_tensor(gr, "seq_len_kv", kSeqKv, k.g.batch));
}

// The pointers of one call.
struct Operands {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr, *lse = nullptr;
  void* out = nullptr;
  void* out2 = nullptr;  // attention_fwd_lse's statistics
  const void* lengths = nullptr;  // null with a mask: every sequence whole (the warm-up)
  DType lengths_dtype = DType::I32;
};

}  // namespace

struct AttnDnn::Impl {
  mutable std::mutex mu;
  tg::cuda::CudnnHandle handle;  // made at the first plan
  std::unordered_map<AttnDnnKey, std::unique_ptr<AttnDnnPlan>, KeyHash> plans;  // null: the own kernels
  std::vector<AttnDnnChoice> chosen;  // one per key, in the order the keys were met
  tg::cuda::DeviceBuffer workspace;   // the calls that bring none (the dynamic executor's)
  bool deterministic = true;          // the backward keys' (AttnDnn's constructor)

  std::unique_ptr<AttnDnnPlan> make(const AttnDnnKey& k, AttnDnnChoice& choice);
  // make(), with an exception from the frontend's inner layers (it throws where its older API
  // did) taken as cuDNN declining the key, as a failed status is.
  std::unique_ptr<AttnDnnPlan> make_or_decline(const AttnDnnKey& k, AttnDnnChoice& choice);
  void enqueue(const AttnDnnPlan& p, const Operands& x, char* ws, cudaStream_t s);
  void warm_up(AttnDnnPlan& p, cudaStream_t s);
};

namespace {

// Key k's graph into gr (empty, its target set if it has one): the head views, the masks, and
// cuDNN's forward (with statistics for attention_lse and attention_fwd_lse) or backward
// (deterministic as the key says).
void build_graph(const AttnDnnKey& k, fe::graph::Graph& gr) {
  const AttentionGeometry& g = k.g;
  gr.set_io_data_type(k.dtype == DType::BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const TensorPtr q = input_view(gr, "q", kQ, g), kk = input_view(gr, "k", kK, g), v = input_view(gr, "v", kV, g);
  if (k.op == OpKind::attention_grad) {
    const TensorPtr o = input_view(gr, "o", kO, g), dout = input_view(gr, "dout", kDout, g);
    fe::graph::Tensor_attributes st;
    const TensorPtr stats = gr.tensor(stats_view(st, g));
    auto a = fe::graph::SDPA_backward_attributes().set_name("attention_grad").set_deterministic_algorithm(k.deterministic);
    set_masks(a, k, gr);
    auto grads = gr.sdpa_backward(q, kk, v, o, dout, stats, a);
    head_view(*grads[0], "dq", kDq, g).set_output(true);
    head_view(*grads[1], "dk", kDk, g).set_output(true);
    head_view(*grads[2], "dv", kDv, g).set_output(true);
  } else {
    const bool stats = k.op != OpKind::attention;
    auto a = fe::graph::SDPA_attributes().set_name(op_name(k.op)).set_generate_stats(stats);
    set_masks(a, k, gr);
    auto outs = gr.sdpa(q, kk, v, a);
    head_view(*outs[0], "o", kO, g).set_output(true);
    if (stats) stats_view(*outs[1], g).set_output(true);
  }
}

}  // namespace

std::string attention_dnn_check_graph(const AttnDnnKey& k, int sm_version) {
  fe::graph::Graph gr;
  gr.set_sm_version(sm_version);  // before the nodes, which copy the graph's context
  build_graph(k, gr);
  fe::error_t e = gr.validate();
  return e.is_good() ? std::string() : fe_failure(e, "Graph::validate", __FILE__, __LINE__, k);
}

std::unique_ptr<AttnDnnPlan> AttnDnn::Impl::make(const AttnDnnKey& k, AttnDnnChoice& choice) {
  choice.why = attention_dnn_refusal(k.g, k.dtype);
  if (!choice.why.empty()) return nullptr;
  auto p = std::make_unique<AttnDnnPlan>();
  p->key = k;
  p->graph = std::make_shared<fe::graph::Graph>();
  fe::graph::Graph& gr = *p->graph;
  build_graph(k, gr);
  const cudnnHandle_t h = handle.get();
  TG_FE_BUILD(gr.validate());
  TG_FE_BUILD(gr.build_operation_graph(h));
  TG_FE_BUILD(gr.create_execution_plans({fe::HeurMode_t::A}));
  TG_FE_BUILD(gr.check_support(h));
  TG_FE_BUILD(gr.build_plans(h));
  int64_t dnn_ws = 0;
  TG_FE_BUILD(gr.get_workspace_size(dnn_ws));
  p->layout = AttnLayout(k, static_cast<size_t>(dnn_ws));
  std::string name;
  if (gr.get_plan_name(name).is_bad() || name.empty()) name = "cudnn";
  choice.cudnn = true;
  choice.engine = name;
  choice.workspace = p->layout.total;
  return p;
}

std::unique_ptr<AttnDnnPlan> AttnDnn::Impl::make_or_decline(const AttnDnnKey& k, AttnDnnChoice& choice) {
  try {
    return make(k, choice);
  } catch (const std::exception& e) {
    choice.why = fmt::format("building the cuDNN graph for {} threw: {}", describe(k), e.what());
    return nullptr;
  }
}

void AttnDnn::Impl::enqueue(const AttnDnnPlan& p, const Operands& x, char* ws, cudaStream_t s) {
  const AttnDnnKey& k = p.key;
  const AttentionGeometry& g = k.g;
  const AttnLayout& l = p.layout;
  TG_CUDNN_CHECK(cudnnSetStream(handle.get(), s));
  int32_t* seq_q = k.masked ? reinterpret_cast<int32_t*>(ws + l.seq_lens) : nullptr;
  int32_t* seq_kv = k.masked ? seq_q + g.batch : nullptr;
  if (k.masked) attention_dnn_seq_lens(x.lengths, x.lengths_dtype, g.batch, g.seq, seq_q, seq_kv, s);
  auto ptr = [](const void* q) { return const_cast<void*>(q); };
  std::unordered_map<int64_t, void*> pack = {{kQ, ptr(x.q)}, {kK, ptr(x.k)}, {kV, ptr(x.v)}};
  if (k.masked) {
    pack[kSeqQ] = seq_q;
    pack[kSeqKv] = seq_kv;
  }
  const int64_t rows = g.rows() * g.seq;
  const size_t part = static_cast<size_t>(g.batch * g.seq * g.ld()) * dtype_size(k.dtype);
  char* out = static_cast<char*>(x.out);
  switch (k.op) {
    case OpKind::attention: pack[kO] = out; break;
    case OpKind::attention_lse:
      pack[kO] = ws + l.out;
      pack[kStats] = out;  // f32 here first, then turned into the pairs in place
      break;
    case OpKind::attention_fwd_lse:
      pack[kO] = out;
      pack[kStats] = x.out2;  // as attention_lse's
      break;
    default: {
      float* stats = reinterpret_cast<float*>(ws + l.stats);
      attention_dnn_pairs_to_stats(x.lse, k.dtype, stats, rows, s);
      pack[kO] = ptr(x.o);
      pack[kDout] = ptr(x.dout);
      pack[kStats] = stats;
      pack[kDq] = out;
      pack[kDk] = out + part;
      pack[kDv] = out + 2 * part;
      break;
    }
  }
  TG_FE_CHECK(p.graph->execute(handle.get(), pack, ws), k);
  if (k.op == OpKind::attention_lse) attention_dnn_stats_to_pairs(out, k.dtype, rows, g.heads * g.seq, seq_kv, s);
  if (k.op == OpKind::attention_fwd_lse)
    attention_dnn_stats_to_pairs(x.out2, k.dtype, rows, g.heads * g.seq, seq_kv, s);
  if (k.masked && k.op != OpKind::attention_lse) {
    const int parts = k.op == OpKind::attention_grad ? 3 : 1;
    attention_dnn_zero_masked(out, k.dtype, seq_kv, parts, 1, g.batch, g.seq, g.ld(), s);
  }
}

void AttnDnn::Impl::warm_up(AttnDnnPlan& p, cudaStream_t s) {
  if (stream_capturing(s)) return;
  const AttentionGeometry& g = p.key.g;
  const size_t view = round_up(static_cast<size_t>(g.batch * g.seq * g.ld()) * dtype_size(p.key.dtype));
  const size_t stats = round_up(static_cast<size_t>(g.rows() * g.seq) * sizeof(float));
  // q, k, v, o, dout, the statistics, three outputs, then the workspace: zeros.
  const size_t bytes = 8 * view + stats + p.layout.total;
  tg::cuda::DeviceBuffer buf;
  try {
    buf = tg::cuda::DeviceBuffer::allocate(bytes);
  } catch (const CudaError&) {
    cudaGetLastError();
    return;  // too little free memory: the warm-up only loads cuDNN's kernels early
  }
  char* b = buf.as<char>();
  TG_CUDA_CHECK(cudaMemsetAsync(b, 0, bytes, s));
  Operands x;
  x.q = b;
  x.k = b + view;
  x.v = b + 2 * view;
  x.o = b + 3 * view;
  x.dout = b + 4 * view;
  x.out = b + 5 * view;  // three views: attention_grad's stacked gradients
  x.out2 = b + 6 * view;  // attention_fwd_lse's statistics (f32, within a view)
  x.lse = b + 8 * view;  // zero pairs: statistics of 0
  enqueue(p, x, b + 8 * view + stats, s);
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  p.warmed = true;
}

AttnDnn::AttnDnn(bool deterministic_backward) : impl_(std::make_unique<Impl>()) {
  impl_->deterministic = deterministic_backward;
}

AttnDnn::~AttnDnn() = default;

const AttnDnnPlan* AttnDnn::plan(const OpCall& c, cudaStream_t s, bool warm_up) {
  if (!op_in_family(c.op, "attention")) return nullptr;
  if (!c.attrs) return nullptr;
  AttnDnnKey k;
  k.op = c.op;
  k.dtype = c.out.dtype;
  // A call whose shapes do not fit is left for the own kernels to refuse, with their message.
  if (!attention_geometry(c.in[c.op == OpKind::attention_grad ? 1 : 0].shape, *c.attrs, k.g, nullptr)) return nullptr;
  k.causal = c.attrs->causal;
  k.masked = op_has_key_lengths(c.op, c.num_inputs);
  k.alpha = c.attrs->alpha;
  k.deterministic = c.op != OpKind::attention_grad || impl_->deterministic;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->plans.find(k);
  if (it == impl_->plans.end()) {
    AttnDnnChoice choice;
    choice.key = k;
    choice.engine = "own";
    const auto t0 = std::chrono::steady_clock::now();
    if (!impl_->handle && attention_dnn_refusal(k.g, k.dtype).empty()) impl_->handle = tg::cuda::CudnnHandle::create();
    it = impl_->plans.emplace(k, impl_->make_or_decline(k, choice)).first;
    choice.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    impl_->chosen.push_back(std::move(choice));
  }
  AttnDnnPlan* p = it->second.get();
  if (p && warm_up && !p->warmed) impl_->warm_up(*p, s);
  return p;
}

void AttnDnn::run(const AttnDnnPlan& p, const OpCall& c, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  const size_t need = p.layout.total;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!workspace) {
    if (impl_->workspace.bytes() < need) {
      if (stream_capturing(s))
        throw std::invalid_argument(fmt::format(
            "cuDNN attention {}: its first call without a workspace is being captured; it needs {} bytes of "
            "workspace, allocated at a call outside capture: run the step once before capturing",
            describe(p.key), need));
      TG_CUDA_CHECK(cudaStreamSynchronize(s));  // the old buffer may still be in use
      impl_->workspace = tg::cuda::DeviceBuffer::allocate(need);
    }
    workspace = impl_->workspace.get();
    workspace_bytes = impl_->workspace.bytes();
  }
  if (workspace_bytes < need)
    throw std::invalid_argument(fmt::format("cuDNN attention {}: needs {} bytes of workspace, the call has {}",
                                            describe(p.key), need, workspace_bytes));
  Operands x;
  const bool grad = c.op == OpKind::attention_grad;
  const int first = grad ? 1 : 0;
  x.q = c.in[first].data;
  x.k = c.in[first + 1].data;
  // attention_lse has no v; its output (which the op drops) reads k in its place.
  x.v = c.op == OpKind::attention_lse ? c.in[1].data : c.in[first + 2].data;
  if (grad) {
    x.dout = c.in[0].data;
    x.o = c.in[4].data;
    x.lse = c.in[5].data;
  }
  x.out = c.out.data;
  x.out2 = c.out2.data;
  if (p.key.masked) {
    const TensorView& len = c.input(c.num_inputs - 1);
    x.lengths = len.data;
    x.lengths_dtype = len.dtype;
  }
  impl_->enqueue(p, x, static_cast<char*>(workspace), s);
}

std::vector<AttnDnnChoice> AttnDnn::choices() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->chosen;
}

bool run_attention_dnn(const OpCall& c, const CudaExecContext& ctx) {
  if (!ctx.attn_dnn) return false;
  const AttnDnnPlan* p =
      c.prepared ? static_cast<const AttnDnnPlan*>(c.prepared) : ctx.attn_dnn->plan(c, ctx.stream, false);
  if (!p) return false;
  // cuDNN reads and writes 16-byte vectors; a view at an odd offset runs on the own kernels.
  for (int i = 0; i < c.num_inputs; ++i)
    if (!aligned16(c.input(i).data)) return false;
  if (!aligned16(c.out.data)) return false;
  if (c.out2.data && !aligned16(c.out2.data)) return false;
  ctx.attn_dnn->run(*p, c, c.workspace, c.workspace_bytes, ctx.stream);
  return true;
}

}  // namespace tg::kernels::cuda
