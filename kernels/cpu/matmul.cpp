// matmul: OpenBLAS sgemm, row-major. Batched forms are a loop of sgemm calls:
// the batches in our models are small and a loop keeps the order (and so the
// bits) independent of any batched-GEMM heuristics.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/heads.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/gemm/gemm_mode.h"
#include "kernels/gemm/gemm_plan.h"

namespace tg::kernels {

namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    input_error("matmul: {} = {} does not fit OpenBLAS's 32-bit int; split the product into pieces below "
                "2^31 elements per dimension", what, v);
  return static_cast<int>(v);
}

}  // namespace

void set_cpu_blas_threads(int n) {
  if (n < 1)
    throw std::invalid_argument(fmt::format("set_cpu_blas_threads: n = {} must be >= 1 (the number of OpenBLAS threads)", n));
  openblas_set_num_threads(n);
}

int cpu_blas_threads() { return openblas_get_num_threads(); }

void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; sgemm with k = 0 is legal, but say what it means
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blas_int(m, "m"), blas_int(n, "n"), blas_int(k, "k"), 1.0f, a, blas_int(lda, "lda"), b,
              blas_int(ldb, "ldb"), 0.0f, c, blas_int(ldc, "ldc"));
}

void cpu_sgemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t stride_a, const float* b, int64_t stride_b, float* c) {
  // Row-major leading dims of the stored (untransposed) operands.
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  for (int64_t i = 0; i < batch; ++i)
    cpu_sgemm(trans_a, trans_b, m, n, k, a + i * stride_a, lda, b + i * stride_b, ldb, c + i * m * n, n);
}

void cpu_matmul(bool trans_a, bool trans_b, const float* a, const int64_t* a_dims, int a_rank,
                const float* b, const int64_t* b_dims, int b_rank, float* c) {
  const MatmulPlan p = plan_matmul(trans_a, trans_b, a_dims, a_rank, b_dims, b_rank);
  if (batch_invariant_matmul()) {
    // The folded form is one [m, k] x B product; the batched one a loop, as below.
    for (int64_t i = 0; i < p.batch; ++i)
      cpu_gemm_invariant(p.trans_a, p.trans_b, p.m, p.n, p.k, a + i * p.stride_a, b + i * p.stride_b, c + i * p.m * p.n);
    return;
  }
  if (p.batched)
    cpu_sgemm_batched(p.trans_a, p.trans_b, p.batch, p.m, p.n, p.k, a, p.stride_a, b, p.stride_b, c);
  else
    cpu_sgemm(false, p.trans_b, p.m, p.n, p.k, a, p.lda, b, p.ldb, c, p.ldc);
}

void cpu_gemm_op(const OpCall& c) {
  const TensorView& x = c.in[0];
  const TensorView& w = c.in[1];
  const Attrs& at = *c.attrs;
  const bool linear = c.op == OpKind::linear || c.op == OpKind::linear_add;
  const bool bias_grad = c.op == OpKind::matmul_bias_grad;
  cpu_matmul(bias_grad || (!linear && at.trans_a), !bias_grad && at.trans_b, x.data, x.shape.dims.data(),
             x.shape.rank, w.data, w.shape.dims.data(), w.shape.rank, c.out.data);
  const int64_t n = c.out.shape.numel(), cols = c.out.shape.last(), rows = n / cols;
  if (linear) cpu_bias_add(c.out.data, c.in[2].data, c.out.data, rows, cols);
  if (c.op == OpKind::linear && at.act == Act::relu) cpu_relu(c.out.data, c.out.data, n);
  if (c.op == OpKind::linear && at.act == Act::gelu) cpu_gelu(c.out.data, c.out.data, n);
  // The residual / the accumulated gradient is added last, as add(r, product) adds it.
  if (c.op == OpKind::linear_add) cpu_add(c.in[3].data, c.out.data, c.out.data, n);
  if (c.op == OpKind::matmul_add) cpu_add(c.in[2].data, c.out.data, c.out.data, n);
  // The activation's gradient of the product, as relu_grad(product, y) / gelu_grad(product, x).
  if (c.op == OpKind::matmul_act_grad && at.act == Act::relu) cpu_relu_grad(c.out.data, c.in[2].data, c.out.data, n);
  if (c.op == OpKind::matmul_act_grad && at.act == Act::gelu) cpu_gelu_grad(c.out.data, c.in[2].data, c.out.data, n);
  if (bias_grad) cpu_reduce_sum(w.data, c.out2.data, 1, w.shape[0], w.shape[1]);
}

namespace {

// The N matrices of a head-view operand, packed: matrix i of rows x cols at i*rows*cols.
std::vector<float> pack_heads(const float* x, const HeadsMatrix& m, int64_t batch, int64_t heads) {
  std::vector<float> out(static_cast<size_t>(batch * m.rows * m.cols));
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m.rows; ++r) {
      const float* src = x + m.offset(i, heads) + r * m.ld;
      std::copy(src, src + m.cols, out.begin() + (i * m.rows + r) * m.cols);
    }
  return out;
}

}  // namespace

void cpu_matmul_heads(const OpCall& c) {
  HeadsGeometry g;
  std::string why;
  if (!heads_geometry(c.in[0].shape, c.in[1].shape, *c.attrs, g, &why))
    throw std::invalid_argument("run_cpu matmul_heads: " + why);
  std::vector<float> pa, pb, po;
  const float* a = c.in[0].data;
  const float* b = c.in[1].data;
  if (g.a.view) a = (pa = pack_heads(a, g.a, g.batch, g.heads)).data();
  if (g.b.view) b = (pb = pack_heads(b, g.b, g.batch, g.heads)).data();
  float* out = c.out.data;
  if (g.out.view) {
    po.resize(static_cast<size_t>(g.batch * g.m * g.n));
    out = po.data();
  }
  const int64_t a_dims[3] = {g.batch, g.a.rows, g.a.cols}, b_dims[3] = {g.batch, g.b.rows, g.b.cols};
  cpu_matmul(c.attrs->trans_a, c.attrs->trans_b, a, a_dims, 3, b, b_dims, 3, out);
  if (!g.out.view) return;
  for (int64_t i = 0; i < g.batch; ++i)
    for (int64_t r = 0; r < g.m; ++r) {
      const float* src = po.data() + (i * g.m + r) * g.n;
      std::copy(src, src + g.n, c.out.data + g.out.offset(i, g.heads) + r * g.out.ld);
    }
}

}  // namespace tg::kernels
