// The GEMM-family ops through cuBLASLt (matmul_lt.h), and cuBLAS's sgemm for tg-matmul's
// direct measurement. cuBLAS is column-major; a row-major [m,n] matrix is the
// column-major [n,m] one, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: the
// operands swap places and keep their own leading dims.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "graph/errors.h"
#include "graph/heads.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm/gemm_heads_pointers.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/cuda/gemm/gemm_small.h"
#include "kernels/gemm/gemm_mode.h"
#include "kernels/gemm/gemm_plan.h"

namespace tg::kernels::cuda {

namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    input_error("matmul: {} = {} does not fit cuBLAS's 32-bit int; split the product into pieces below "
                "2^31 per dimension", what, v);
  return static_cast<int>(v);
}

void prepare(cublasHandle_t h, cudaStream_t s, bool tf32) {
  if (!h) throw std::invalid_argument("matmul: no cuBLAS handle; pass CudaExecContext::cublas");
  // cublasSetStream also resets the workspace to cuBLAS's own pool (which allocates,
  // and must not during capture), so only switch when the stream really differs; the
  // CUDA backend binds its handle to its stream and workspace once.
  cudaStream_t cur = nullptr;
  TG_CUBLAS_CHECK(cublasGetStream(h, &cur));
  if (cur != s) TG_CUBLAS_CHECK(cublasSetStream(h, s));
  TG_CUBLAS_CHECK(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

// The operands of a GEMM-family call: A, B, the accumulated C, the bias (or bias
// gradient output) and D, with the product's row-major folding.
struct GemmCall {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  const float* bias = nullptr;
  float* d = nullptr;
  MatmulPlan plan;
  LtEpilogue epilogue = LtEpilogue::none;
  bool accumulate = false;
  // matmul_act_grad: the activation whose gradient follows the product, and its input
  // (cuBLASLt's DRELU/DGELU epilogues need a mask saved by the forward GEMM, which the
  // graph does not have: on the cuBLASLt path the gradient is a kernel after the product).
  Act act_grad = Act::none;
  const float* act_in = nullptr;
};

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
  const Attrs& at = *c.attrs;
  const TensorView& x = c.in[0];
  const TensorView& w = c.in[1];
  g.a = x.data;
  g.b = w.data;
  g.d = c.out.data;
  const int64_t* xd = x.shape.dims.data();
  const int64_t* wd = w.shape.dims.data();
  if (c.op == OpKind::matmul) {
    g.plan = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
  } else if (c.op == OpKind::linear || c.op == OpKind::linear_add) {
    g.plan = plan_matmul(false, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    g.bias = c.in[2].data;
    g.epilogue = c.op == OpKind::linear ? linear_epilogue(at.act) : LtEpilogue::bias;
    g.accumulate = c.op == OpKind::linear_add;
    g.c = g.accumulate ? c.in[3].data : nullptr;
  } else if (c.op == OpKind::matmul_add) {
    g.plan = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    g.accumulate = true;
    g.c = c.in[2].data;
  } else if (c.op == OpKind::matmul_act_grad) {
    g.plan = plan_matmul(at.trans_a, at.trans_b, xd, x.shape.rank, wd, w.shape.rank);
    g.act_grad = at.act;
    g.act_in = c.in[2].data;
  } else if (c.op == OpKind::matmul_bias_grad) {
    g.plan = plan_matmul(true, false, xd, x.shape.rank, wd, w.shape.rank);
    g.epilogue = LtEpilogue::bias_grad;
    g.bias = c.out2.data;
  } else {
    throw std::logic_error(fmt::format("gemm_op: {} is not a GEMM", op_name(c.op)));
  }
  return g;
}

// The leading dims of the stored A, B and D: a strided batch keeps every matrix
// contiguous; a single (folded) GEMM has the plan's.
struct Lead {
  int64_t a, b, d;
};
Lead leading_dims(const MatmulPlan& p) {
  if (!p.batched) return {p.lda, p.ldb, p.ldc};
  return {p.trans_a ? p.m : p.k, p.trans_b ? p.k : p.n, p.n};
}

// The product's geometry, into the fields LtKey and SmallGemm share by name: the
// transposes, m, n, k, the leading dims and, for a strided batch, the batch and strides.
template <typename Product>
void set_geometry(Product& out, const MatmulPlan& p) {
  out.trans_a = p.trans_a;
  out.trans_b = p.trans_b;
  out.m = p.m;
  out.n = p.n;
  out.k = p.k;
  const Lead ld = leading_dims(p);
  out.lda = ld.a;
  out.ldb = ld.b;
  out.ldd = ld.d;
  if (p.batched) {
    out.batch = p.batch;
    out.stride_a = p.stride_a;
    out.stride_b = p.stride_b;
  }
}

LtKey lt_key(const GemmCall& g, bool tf32) {
  LtKey k;
  set_geometry(k, g.plan);
  k.tf32 = tf32;
  k.accumulate = g.accumulate;
  k.epilogue = g.epilogue;
  k.align_a = lt_alignment(g.a);
  k.align_b = lt_alignment(g.b);
  k.align_c = lt_alignment(g.accumulate ? g.c : g.d);
  k.align_d = lt_alignment(g.d);
  k.align_bias = lt_alignment(g.bias);
  return k;
}

// matmul_heads (graph/heads.h): a head view's matrix (b, h) starts at b*rows*ld + h*cols,
// not an affine function of one batch index, so one strided-batched GEMM cannot walk it.
// One pointer-array GEMM over all N matrices does (their addresses written by
// heads_pointers on the device). H strided-batched GEMMs, one per head, were slower on an
// H200 than the transposes they replace (docs/results/h200-probes/attention-heads-*.txt):
// the attention's products per head are small, and 8 launches of a 32-matrix batch fill
// the GPU worse than one launch of 256.
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
  k.tf32 = tf32;
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
  auto align = [&](const float* base, const HeadsMatrix& x) {
    uint16_t a = lt_alignment(base);
    auto with_step = [&](int64_t floats) {
      if (floats > 0) a = std::min(a, lt_alignment(reinterpret_cast<const void*>(static_cast<uintptr_t>(floats) * 4)));
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

// Whether the call runs on the small-GEMM kernel (gemm_small.h) rather than cuBLASLt:
// by the backend's options and the shape alone, so both executors on one backend choose alike.
bool use_small(const GemmCall& g, const CudaBackendOptions& o) {
  const MatmulPlan& p = g.plan;
  return o.small_gemm && small_gemm_fits(p.batch, p.m, p.n, p.k) &&
         (g.epilogue != LtEpilogue::bias_grad || p.batch == 1);
}

// The skinny kernels (gemm_small.h) where the small one does not fit, by shape alone.
bool use_skinny(const GemmCall& g, const CudaBackendOptions& o) {
  const MatmulPlan& p = g.plan;
  const SkinnyGemm kind = skinny_gemm_kind(p.batch, p.m, p.n, p.k, p.trans_a);
  return o.small_gemm && o.skinny_gemm && kind != SkinnyGemm::none &&
         (g.epilogue != LtEpilogue::bias_grad || kind == SkinnyGemm::thin_n_trans_a);
}

SmallGemm small_of(const GemmCall& g) {
  const MatmulPlan& p = g.plan;
  SmallGemm s;
  s.a = g.a;
  s.b = g.b;
  s.d = g.d;
  s.c = g.accumulate ? g.c : nullptr;
  set_geometry(s, p);
  if (p.batched) s.stride_d = p.m * p.n;
  switch (g.epilogue) {
    case LtEpilogue::none: break;
    case LtEpilogue::bias: s.bias = g.bias; break;
    case LtEpilogue::bias_relu: s.bias = g.bias; s.act = SmallGemmAct::relu; break;
    case LtEpilogue::bias_gelu: s.bias = g.bias; s.act = SmallGemmAct::gelu; break;
    case LtEpilogue::bias_grad: s.bias_grad = const_cast<float*>(g.bias); break;  // matmul_bias_grad's out2
  }
  s.act_in = g.act_in;
  s.act_grad = g.act_grad == Act::relu ? SmallGemmAct::relu : g.act_grad == Act::gelu ? SmallGemmAct::gelu : SmallGemmAct::none;
  return s;
}

// matmul_act_grad after a product that did not apply it: relu_grad / gelu_grad in place,
// the unfused op's kernel, so the bits are the unfused graph's.
void apply_act_grad(const GemmCall& g, int64_t n, cudaStream_t s) {
  if (g.act_grad == Act::relu) relu_grad(g.d, g.act_in, g.d, n, s);
  if (g.act_grad == Act::gelu) gelu_grad(g.d, g.act_in, g.d, n, s);
}

// The batch-invariant mode: the plain kernel summing over k in order, then the unfused
// epilogue ops, so that fused and unfused graphs give the same bits there too.
void gemm_invariant(const OpCall& c, const GemmCall& g, const CudaExecContext& ctx) {
  const cudaStream_t s = ctx.stream;
  const MatmulPlan& p = g.plan;
  matmul_invariant(p.trans_a, p.trans_b, p.batch, p.m, p.n, p.k, g.a, p.stride_a, g.b, p.stride_b, g.d, s);
  const int64_t rows = p.batch * p.m, n = rows * p.n;
  if (c.op == OpKind::linear || c.op == OpKind::linear_add) bias_add(g.d, g.bias, g.d, rows, p.n, s);
  if (c.op == OpKind::linear && c.attrs->act == Act::relu) relu(g.d, g.d, n, s);
  if (c.op == OpKind::linear && c.attrs->act == Act::gelu) gelu(g.d, g.d, n, s);
  if (g.accumulate) add(g.c, g.d, g.d, n, s);
  apply_act_grad(g, n, s);
  if (c.op == OpKind::matmul_bias_grad)
    reduce_sum(c.in[1].data, c.out2.data, 1, c.in[1].shape[0], c.in[1].shape[1], ctx.scratch, ctx.scratch_bytes, s);
}

}  // namespace

void sgemm(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t m, int64_t n,
           int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = 0
    if (ldc == n) return fill(c, 0.0f, m * n, s);
    for (int64_t i = 0; i < m; ++i) fill(c + i * ldc, 0.0f, n, s);
    return;
  }
  prepare(h, s, tf32);
  const float one = 1.0f, zero = 0.0f;
  TG_CUBLAS_CHECK(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                              blas_int(n, "n"), blas_int(m, "m"), blas_int(k, "k"), &one, b, blas_int(ldb, "ldb"), a,
                              blas_int(lda, "lda"), &zero, c, blas_int(ldc, "ldc")));
}

void sgemm_batched(cublasHandle_t h, cudaStream_t s, bool tf32, bool trans_a, bool trans_b, int64_t batch,
                   int64_t m, int64_t n, int64_t k, const float* a, int64_t stride_a, const float* b,
                   int64_t stride_b, float* c) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) return fill(c, 0.0f, batch * m * n, s);
  prepare(h, s, tf32);
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  const float one = 1.0f, zero = 0.0f;
  TG_CUBLAS_CHECK(cublasSgemmStridedBatched(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, blas_int(n, "n"), blas_int(m, "m"),
      blas_int(k, "k"), &one, b, blas_int(ldb, "ldb"), stride_b, a, blas_int(lda, "lda"), stride_a, &zero, c,
      blas_int(n, "ldc"), m * n, blas_int(batch, "batch")));
}

void gemm_op(const OpCall& c, const CudaExecContext& ctx) {
  const GemmCall g = gemm_call(c);
  if (batch_invariant_matmul()) return gemm_invariant(c, g, ctx);
  const MatmulPlan& p = g.plan;
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  if (p.k == 0) {  // an empty sum: only the plain product has a meaning for it (zeros)
    if (c.op != OpKind::matmul)
      throw std::invalid_argument(fmt::format("run_cuda {}: the product has k = 0; give it a non-empty inner dim",
                                              op_name(c.op)));
    return fill(g.d, 0.0f, p.batch * p.m * p.n, ctx.stream);
  }
  if (use_small(g, ctx.options)) return small_gemm(small_of(g), ctx.stream);
  if (use_skinny(g, ctx.options)) return skinny_gemm(small_of(g), ctx.stream);
  const LtGemm* gemm = static_cast<const LtGemm*>(c.prepared);
  if (!gemm) gemm = prepare_cuda(c, ctx);
  void* ws = c.workspace ? c.workspace : ctx.workspace;
  const size_t ws_bytes = c.workspace ? c.workspace_bytes : ctx.workspace_bytes;
  gemm->run(ctx.lt->handle(), g.a, g.b, g.c, g.d, g.bias, ws, ws_bytes, ctx.stream);
  apply_act_grad(g, p.batch * p.m * p.n, ctx.stream);
}

LtKey gemm_key(const OpCall& c, bool tf32) {
  return c.op == OpKind::matmul_heads ? heads_call(c, tf32).key : lt_key(gemm_call(c), tf32);
}

void gemm_heads_op(const OpCall& c, const CudaExecContext& ctx) {
  if (batch_invariant_matmul())
    throw std::invalid_argument(
        "run_cuda matmul_heads: the batch-invariant matmul mode has no head-view kernel; compile without the heads "
        "pass (it leaves the transposes in that mode)");
  if (!ctx.lt) throw std::invalid_argument("run_cuda matmul_heads: no cuBLASLt cache; pass CudaExecContext::lt");
  const HeadsCall h = heads_call(c, ctx.tf32);
  if (h.g.batch == 0 || h.g.m == 0 || h.g.n == 0) return;
  if (h.g.k == 0) return fill(c.out.data, 0.0f, c.out.shape.numel(), ctx.stream);  // an empty sum
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
  heads_pointers(c.in[0].data, g.a, c.in[1].data, g.b, c.out.data, g.out, g.heads, g.batch, arrays, ctx.stream);
  const size_t room = h.key.pointer_array_bytes();
  gemm->run(ctx.lt->handle(), reinterpret_cast<const float*>(arrays), reinterpret_cast<const float*>(arrays + g.batch),
            nullptr, reinterpret_cast<float*>(arrays + 2 * g.batch), nullptr, ws + room, ws_bytes - room, ctx.stream);
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
  if (g.plan.m == 0 || g.plan.n == 0 || g.plan.k == 0 || g.plan.batch == 0 || cuda::use_small(g, ctx.options) ||
      cuda::use_skinny(g, ctx.options))
    return nullptr;
  return &ctx.lt->get(cuda::lt_key(g, ctx.tf32), ctx.stream);
}

}  // namespace tg::kernels
