// gemm_op and gemm_heads_op: the GEMM-family ops onto the path gemm.h's routing table gives
// them, and prepare_cuda, which prepares the cuBLASLt GEMM of the calls that reach it. The
// routing reads the backend's options, the batch-invariant switch and the shape alone, so
// that both executors on one backend route a call alike.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "graph/heads.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda/gemm/gemm_args.h"
#include "kernels/cuda/gemm/gemm_epilogue16.h"
#include "kernels/cuda/gemm/gemm_heads_pointers.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/cuda/gemm/gemm_small.h"
#include "kernels/cuda/gemm/gemm_staging.h"
#include "kernels/gemm/gemm_mode.h"
#include "kernels/gemm/gemm_plan.h"
#include "kernels/gemm/gemm_staging.h"

namespace tg::kernels::cuda {

namespace {

// A GEMM-family call resolved: the product and its epilogue as the project's kernels take
// them, and cuBLASLt's form of the same epilogue. matmul_act_grad's gradient stays in args on
// every path: cuBLASLt's DRELU/DGELU epilogues need a mask saved by the forward GEMM, which
// the graph does not have, so on that path it is a kernel after the product.
struct GemmCall {
  GemmArgs args;  // its pointers are the views' (of dtype's elements)
  DType dtype = DType::F32;
  LtEpilogue epilogue = LtEpilogue::none;
  bool accumulate = false;
  // cuBLASLt's bias operand: the bias, or the bias gradient's output.
  const float* lt_bias() const { return epilogue == LtEpilogue::bias_grad ? args.bias_grad : args.bias; }
};

// The stored geometry of a folded product: a strided batch keeps every matrix contiguous;
// a single (folded) GEMM has the plan's leading dims.
void set_shape(GemmArgs& s, const MatmulPlan& p) {
  s.trans_a = p.trans_a;
  s.trans_b = p.trans_b;
  s.m = p.m;
  s.n = p.n;
  s.k = p.k;
  if (!p.batched) {
    s.lda = p.lda;
    s.ldb = p.ldb;
    s.ldd = p.ldc;
    return;
  }
  s.lda = p.trans_a ? p.m : p.k;
  s.ldb = p.trans_b ? p.k : p.n;
  s.ldd = p.n;
  s.batch = p.batch;
  s.stride_a = p.stride_a;
  s.stride_b = p.stride_b;
  s.stride_d = p.m * p.n;
}

LtEpilogue linear_epilogue(Act act) {
  switch (act) {
    case Act::none: return LtEpilogue::bias;
    case Act::relu: return LtEpilogue::bias_relu;
    case Act::gelu: return LtEpilogue::bias_gelu;
  }
  return LtEpilogue::bias;
}

GemmCall gemm_call(const OpCall& c) {
  GemmCall g;
  GemmArgs& s = g.args;
  const Attrs& at = *c.attrs;
  const TensorView& x = c.in[0];
  const TensorView& w = c.in[1];
  s.a = x.data;
  s.b = w.data;
  s.d = c.out.data;
  g.dtype = x.dtype;
  const int64_t* xd = x.shape.dims.data();
  const int64_t* wd = w.shape.dims.data();
  MatmulPlan p;
  if (c.op == OpKind::matmul) {
    p = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
  } else if (c.op == OpKind::linear || c.op == OpKind::linear_add) {
    p = plan_matmul(false, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    s.bias = c.in[2].data;
    if (c.op == OpKind::linear) s.act = at.act;
    g.epilogue = linear_epilogue(s.act);
    g.accumulate = c.op == OpKind::linear_add;
    s.c = g.accumulate ? c.in[3].data : nullptr;
  } else if (c.op == OpKind::matmul_add) {
    p = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    g.accumulate = true;
    s.c = c.in[2].data;
  } else if (c.op == OpKind::matmul_act_grad) {
    p = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    s.act_grad = at.act;
    s.act_in = c.in[2].data;
  } else if (c.op == OpKind::matmul_bias_grad) {
    p = plan_matmul(true, false, xd, x.shape.rank, wd, w.shape.rank);
    g.epilogue = LtEpilogue::bias_grad;
    s.bias_grad = c.out2.data;
  } else {
    throw std::logic_error(fmt::format("gemm_op: {} is not a GEMM", op_name(c.op)));
  }
  set_shape(s, p);
  return g;
}

// Path 5's staging (kernels/gemm/gemm_staging.h): which operands of a single (not batched)
// product run on padded copies; nothing with the option off.
GemmStaging staging_of(const GemmCall& g, const CudaBackendOptions& o) {
  const GemmArgs& p = g.args;
  if (!o.gemm_align_staging || p.batch != 1) return {};
  GemmStagingShape s;
  s.trans_a = p.trans_a, s.trans_b = p.trans_b;
  s.bias = g.epilogue != LtEpilogue::none;  // a bias, or the bias gradient's output
  s.m = p.m, s.n = p.n, s.k = p.k, s.lda = p.lda, s.ldb = p.ldb, s.ldd = p.ldd;
  s.esize = dtype_size(g.dtype);
  return plan_gemm_staging(s);
}

// The call as cuBLASLt runs it: the padded product, the staged operands at their copies in
// `ws` (null when only the key is wanted: a copy's alignment class is then 256, what
// ws + offset has at run time, the offsets being 256-byte multiples and ws checked 256-byte
// aligned).
GemmCall staged_call(const GemmCall& g, const GemmStaging& st, char* ws) {
  if (!st.bytes) return g;
  GemmCall out = g;
  GemmArgs& p = out.args;
  auto at = [&](const GemmStaging::Operand& o) { return ws ? reinterpret_cast<float*>(ws + o.offset) : nullptr; };
  p.m = st.m, p.n = st.n, p.k = st.k;
  if (st.a.staged) p.a = at(st.a), p.lda = st.a.padded_cols;
  if (st.b.staged) p.b = at(st.b), p.ldb = st.b.padded_cols;
  if (st.d.staged) {
    p.d = at(st.d), p.ldd = st.d.padded_cols;
    if (g.accumulate) p.c = p.d;  // C copied into D's copy first
  }
  if (st.bias.staged) {
    if (g.epilogue == LtEpilogue::bias_grad) p.bias_grad = at(st.bias);
    else p.bias = at(st.bias);
  }
  return out;
}

// tf32 rounds f32 inputs inside the product; 16-bit inputs have fewer bits already and
// are multiplied exactly, so their keys carry tf32 off whatever the backend's setting.
bool tf32_for(bool tf32, DType dt) { return tf32 && dt == DType::F32; }

LtKey lt_key(const GemmCall& g, bool tf32) {
  const GemmArgs& s = g.args;
  LtKey k;
  k.trans_a = s.trans_a, k.trans_b = s.trans_b;
  k.batch = s.batch, k.m = s.m, k.n = s.n, k.k = s.k;
  k.lda = s.lda, k.ldb = s.ldb, k.ldd = s.ldd, k.stride_a = s.stride_a, k.stride_b = s.stride_b;
  k.dtype = g.dtype;
  k.tf32 = tf32_for(tf32, g.dtype);
  k.accumulate = g.accumulate;
  k.epilogue = g.epilogue;
  k.align_a = lt_alignment(s.a);
  k.align_b = lt_alignment(s.b);
  k.align_c = lt_alignment(g.accumulate ? s.c : s.d);
  k.align_d = lt_alignment(s.d);
  k.align_bias = lt_alignment(g.lt_bias());
  return k;
}

// matmul_heads (graph/heads.h): a head view's matrix (b, h) starts at b*rows*ld + h*cols,
// not an affine function of one batch index, so one strided-batched GEMM cannot walk it.
// One pointer-array GEMM over all N matrices does (their addresses written by
// heads_pointers on the device). Not one strided-batched GEMM per head: an attention's
// products per head are small, and H launches of a batch of N / H matrices fill the GPU
// worse than one launch of N, enough to lose what removing the transposes gains.
struct HeadsCall {
  HeadsGeometry g;
  LtKey key;
};

HeadsCall heads_call(const OpCall& c, bool tf32) {
  HeadsCall h;
  std::string why;
  if (!heads_geometry(c.in[0].shape, c.in[1].shape, *c.attrs, h.g, &why))
    throw std::invalid_argument("run_cuda matmul_heads: " + why);
  const HeadsGeometry& g = h.g;
  LtKey& k = h.key;
  k.trans_a = c.attrs->trans_a;
  k.trans_b = c.attrs->trans_b;
  k.dtype = c.in[0].dtype;
  k.tf32 = tf32_for(tf32, k.dtype);
  k.m = g.m;
  k.n = g.n;
  k.k = g.k;
  k.lda = g.a.ld;
  k.ldb = g.b.ld;
  k.ldd = g.out.ld;
  k.batch = g.batch;
  k.pointer_arrays = true;
  // The alignment class of every matrix: that of the base and of the two steps between
  // matrices (a sum is at least as aligned as its least aligned term). Integer arithmetic:
  // the pointers are null when only the workspace is asked for.
  const auto size = static_cast<uintptr_t>(dtype_size(k.dtype));
  auto align = [&](const float* base, const HeadsMatrix& x) {
    uint16_t a = lt_alignment(base);
    auto with_step = [&](int64_t elems) {
      if (elems > 0) a = std::min(a, lt_alignment(reinterpret_cast<const void*>(static_cast<uintptr_t>(elems) * size)));
    };
    if (g.batch > 1) with_step(x.offset(1, g.heads));
    if (g.batch > g.heads) with_step(x.offset(g.heads, g.heads));
    return a;
  };
  k.align_a = align(c.in[0].data, g.a);
  k.align_b = align(c.in[1].data, g.b);
  k.align_d = k.align_c = align(c.out.data, g.out);
  return h;
}

// Path 3 of gemm.h's table: the small-GEMM kernel (f32 only, as the skinny ones).
bool use_small(const GemmCall& g, const CudaBackendOptions& o) {
  const GemmArgs& p = g.args;
  return g.dtype == DType::F32 && o.small_gemm && small_gemm_fits(p.batch, p.m, p.n, p.k) &&
         (g.epilogue != LtEpilogue::bias_grad || p.batch == 1);
}

// Path 4 of gemm.h's table: the skinny kernels, where the small one does not fit.
bool use_skinny(const GemmCall& g, const CudaBackendOptions& o) {
  const GemmArgs& p = g.args;
  const SkinnyGemm kind = skinny_gemm_kind(p.batch, p.m, p.n, p.k, p.trans_a);
  return g.dtype == DType::F32 && o.small_gemm && o.skinny_gemm && kind != SkinnyGemm::none &&
         (g.epilogue != LtEpilogue::bias_grad || kind == SkinnyGemm::thin_n_trans_a);
}

// Whether a call reaches path 5 (cuBLASLt): a product with something to sum that neither the
// small nor the skinny kernels take.
bool on_lt_path(const GemmCall& g, const CudaBackendOptions& o) {
  const GemmArgs& p = g.args;
  return p.m != 0 && p.n != 0 && p.k != 0 && p.batch != 0 && !use_small(g, o) && !use_skinny(g, o);
}

// matmul_act_grad after a product that did not apply it: relu_grad / gelu_grad in place,
// the unfused op's kernel (f32) or functor (16-bit), so the bits are the unfused graph's.
void apply_act_grad(const GemmCall& call, int64_t n, cudaStream_t s) {
  const GemmArgs& g = call.args;
  if (call.dtype != DType::F32) return act_grad_16bit(call.dtype, g.act_grad, g.d, g.act_in, n, s);
  if (g.act_grad == Act::relu) relu_grad(g.d, g.act_in, g.d, n, s);
  if (g.act_grad == Act::gelu) gelu_grad(g.d, g.act_in, g.d, n, s);
}

// An empty sum's zeros: f32 by the fill kernel; 16-bit zeros are all-zero bits.
void zero_fill(float* d, DType dt, int64_t n, cudaStream_t s) {
  if (dt == DType::F32) return fill(d, 0.0f, n, s);
  TG_CUDA_CHECK(cudaMemsetAsync(d, 0, static_cast<size_t>(n) * static_cast<size_t>(dtype_size(dt)), s));
}

// The cuBLASLt GEMM of a call on path 5: its key's, or, for a 16-bit bias gradient that
// cuBLASLt offers no epilogue for (or with option gemm_bias_grad_sums), the plain product's
// (gemm_op then sums the columns).
const LtGemm& lt_gemm(const GemmCall& g, const CudaExecContext& ctx) {
  const LtKey key = lt_key(g, ctx.tf32);
  if (g.epilogue != LtEpilogue::bias_grad || g.dtype == DType::F32) return ctx.lt->get(key, ctx.stream);
  if (!ctx.options.gemm_bias_grad_sums)
    if (const LtGemm* fused = ctx.lt->find(key, ctx.stream)) return *fused;
  LtKey plain = key;
  plain.epilogue = LtEpilogue::none;
  plain.align_bias = 256;
  return ctx.lt->get(plain, ctx.stream);
}

// The cuBLASLt GEMM of a path-5 call with staging st: that of its padded product.
const LtGemm& staged_lt_gemm(const OpCall& c, const GemmCall& g, const GemmStaging& st, const CudaExecContext& ctx) {
  if (!ctx.lt) throw std::invalid_argument(fmt::format("run_cuda {}: no cuBLASLt cache; pass CudaExecContext::lt",
                                                       op_name(c.op)));
  return lt_gemm(staged_call(g, st, nullptr), ctx);
}

// The batch-invariant mode: the plain kernel summing over k in order, then the unfused
// epilogue ops, so that fused and unfused graphs give the same bits there too.
void gemm_invariant(const OpCall& c, const GemmCall& call, const CudaExecContext& ctx) {
  if (call.dtype != DType::F32)
    throw std::invalid_argument(fmt::format("run_cuda {}: the batch-invariant matmul mode has f32 kernels only, and "
                                            "this call is {}; run it in f32 (--precision fp32) or on the CPU backend",
                                            op_name(c.op), dtype_name(call.dtype)));
  const cudaStream_t s = ctx.stream;
  const GemmArgs& g = call.args;
  matmul_invariant(g.trans_a, g.trans_b, g.batch, g.m, g.n, g.k, g.a, g.stride_a, g.b, g.stride_b, g.d, s);
  const int64_t rows = g.batch * g.m, n = rows * g.n;
  if (c.op == OpKind::linear || c.op == OpKind::linear_add) bias_add(g.d, g.bias, g.d, rows, g.n, s);
  if (c.op == OpKind::linear && c.attrs->act == Act::relu) relu(g.d, g.d, n, s);
  if (c.op == OpKind::linear && c.attrs->act == Act::gelu) gelu(g.d, g.d, n, s);
  if (call.accumulate) add(g.c, g.d, g.d, n, s);
  apply_act_grad(call, n, s);
  if (c.op == OpKind::matmul_bias_grad)
    reduce_sum(c.in[1].data, c.out2.data, 1, c.in[1].shape[0], c.in[1].shape[1], ctx.scratch, ctx.scratch_bytes, s);
}

}  // namespace

void gemm_op(const OpCall& c, const CudaExecContext& ctx) {
  const GemmCall g = gemm_call(c);
  if (batch_invariant_matmul()) return gemm_invariant(c, g, ctx);
  const GemmArgs& p = g.args;
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  if (p.k == 0) {  // an empty sum: only the plain product has a meaning for it (zeros)
    if (c.op != OpKind::matmul)
      throw std::invalid_argument(fmt::format("run_cuda {}: the product has k = 0; give it a non-empty inner dim",
                                              op_name(c.op)));
    return zero_fill(p.d, g.dtype, p.batch * p.m * p.n, ctx.stream);
  }
  if (use_small(g, ctx.options)) return small_gemm(p, ctx.stream);
  if (use_skinny(g, ctx.options)) return skinny_gemm(p, ctx.stream);
  const GemmStaging st = staging_of(g, ctx.options);
  const LtGemm* gemm = static_cast<const LtGemm*>(c.prepared);
  if (!gemm) gemm = &staged_lt_gemm(c, g, st, ctx);
  char* ws = static_cast<char*>(c.workspace ? c.workspace : ctx.workspace);
  size_t ws_bytes = c.workspace ? c.workspace_bytes : ctx.workspace_bytes;
  const size_t need = st.bytes + gemm->workspace_bytes();  // with staging: the copies, then the GEMM's own
  if (st.bytes && !c.workspace) {
    ws_bytes = need;
    ws = static_cast<char*>(ctx.lt->staging_workspace(need, ctx.stream));
  }
  if (st.bytes && (ws_bytes < need || reinterpret_cast<uintptr_t>(ws) % 256 != 0))
    throw std::invalid_argument(fmt::format("run_cuda {}: its operands are staged into padded copies and need {} "
                                            "bytes of 256-byte aligned workspace; the call has {} at {}",
                                            op_name(c.op), need, ws_bytes, static_cast<const void*>(ws)));
  const GemmCall run = staged_call(g, st, ws);
  const GemmArgs& r = run.args;
  const int esize = dtype_size(g.dtype);
  const cudaStream_t s = ctx.stream;
  // Into a copy: the call's matrix, zeros in the padding.
  auto stage_in = [&](const GemmStaging::Operand& o, const void* src) {
    copy_padded(src, o.ld, o.rows, o.cols, ws + o.offset, o.padded_cols, o.padded_rows, o.padded_cols, esize, s);
  };
  // Out of a copy: its part that the call's matrix holds.
  auto stage_out = [&](const GemmStaging::Operand& o, void* dst) {
    copy_padded(ws + o.offset, o.padded_cols, o.padded_rows, o.padded_cols, dst, o.ld, o.rows, o.cols, esize, s);
  };
  const bool fused = gemm->key().epilogue == g.epilogue;
  if (st.a.staged) stage_in(st.a, p.a);
  if (st.b.staged) stage_in(st.b, p.b);
  if (st.d.staged && g.accumulate) stage_in(st.d, p.c);
  if (st.bias.staged && fused && g.epilogue != LtEpilogue::bias_grad) stage_in(st.bias, p.bias);
  gemm->run(ctx.lt->handle(), r.a, r.b, r.c, r.d, fused ? run.lt_bias() : nullptr, ws + st.bytes,
            ws_bytes - st.bytes, s);
  if (st.d.staged) stage_out(st.d, p.d);
  if (st.bias.staged && fused && g.epilogue == LtEpilogue::bias_grad) stage_out(st.bias, p.bias_grad);
  if (!fused)
    column_sums_16bit(g.dtype, c.in[1].data, p.bias_grad, c.in[1].shape[0], c.in[1].shape[1], ctx.scratch,
                      ctx.scratch_bytes, s);
  apply_act_grad(g, p.batch * p.m * p.n, s);
}

size_t gemm_staging_bytes(const OpCall& c, const CudaExecContext& ctx) {
  if (!op_in_family(c.op, "matmul") || c.op == OpKind::matmul_heads || batch_invariant_matmul()) return 0;
  const GemmCall g = gemm_call(c);
  return on_lt_path(g, ctx.options) ? staging_of(g, ctx.options).bytes : 0;
}

LtKey gemm_key(const OpCall& c, const CudaExecContext& ctx) {
  if (c.op == OpKind::matmul_heads) return heads_call(c, ctx.tf32).key;
  const GemmCall g = gemm_call(c);
  return lt_key(staged_call(g, staging_of(g, ctx.options), nullptr), ctx.tf32);
}

void gemm_heads_op(const OpCall& c, const CudaExecContext& ctx) {
  if (batch_invariant_matmul())
    throw std::invalid_argument(
        "run_cuda matmul_heads: the batch-invariant matmul mode has no head-view kernel; compile without the heads "
        "pass (it leaves the transposes in that mode)");
  if (!ctx.lt) throw std::invalid_argument("run_cuda matmul_heads: no cuBLASLt cache; pass CudaExecContext::lt");
  const HeadsCall h = heads_call(c, ctx.tf32);
  if (h.g.batch == 0 || h.g.m == 0 || h.g.n == 0) return;
  if (h.g.k == 0) return zero_fill(c.out.data, c.out.dtype, c.out.shape.numel(), ctx.stream);  // an empty sum
  const LtGemm* gemm = static_cast<const LtGemm*>(c.prepared);
  if (!gemm) gemm = &ctx.lt->get(h.key, ctx.stream);
  char* ws = static_cast<char*>(c.workspace ? c.workspace : ctx.workspace);
  const size_t ws_bytes = c.workspace ? c.workspace_bytes : ctx.workspace_bytes;
  if (ws_bytes < gemm->workspace_bytes())
    throw std::invalid_argument(fmt::format("run_cuda matmul_heads: needs {} bytes of workspace (pointer arrays and "
                                            "GEMM), the call has {}",
                                            gemm->workspace_bytes(), ws_bytes));
  const HeadsGeometry& g = h.g;
  void** arrays = reinterpret_cast<void**>(ws);
  heads_pointers(c.in[0].data, g.a, c.in[1].data, g.b, c.out.data, g.out, g.heads, g.batch, dtype_size(h.key.dtype),
                 arrays, ctx.stream);
  const size_t room = h.key.pointer_array_bytes();
  gemm->run(ctx.lt->handle(), arrays, arrays + g.batch, nullptr, arrays + 2 * g.batch, nullptr, ws + room,
            ws_bytes - room, ctx.stream);
}

}  // namespace tg::kernels::cuda

namespace tg::kernels {

const cuda::LtGemm* prepare_cuda(const OpCall& c, const CudaExecContext& ctx) {
  // The GEMM family is the op table's "matmul" kernel family.
  if (!op_in_family(c.op, "matmul") || batch_invariant_matmul()) return nullptr;
  if (!ctx.lt) throw std::invalid_argument(fmt::format("run_cuda {}: no cuBLASLt cache; pass CudaExecContext::lt",
                                                       op_name(c.op)));
  if (c.op == OpKind::matmul_heads) {
    const cuda::HeadsCall h = cuda::heads_call(c, ctx.tf32);
    if (h.g.batch == 0 || h.g.m == 0 || h.g.n == 0 || h.g.k == 0) return nullptr;
    return &ctx.lt->get(h.key, ctx.stream);
  }
  const cuda::GemmCall g = cuda::gemm_call(c);
  if (!cuda::on_lt_path(g, ctx.options)) return nullptr;
  return &cuda::staged_lt_gemm(c, g, cuda::staging_of(g, ctx.options), ctx);
}

}  // namespace tg::kernels
