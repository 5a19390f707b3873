// The GEMM family against OpenBLAS: every transpose combination, rank-2, rank-3 with
// shared B (folded and, with trans_a, batched), and batched B; fp32 and TF32; through
// cuBLASLt and through the small-GEMM kernel (kernels/cuda/gemm/gemm_small.h), each alone, and
// the skinny-GEMM kernels (thin k or thin n) on shapes the small one does not take.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/heads.h"
#include "graph/shape_inference.h"
#include "kernels/cuda/gemm/gemm_heads_pointers.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/cuda/gemm/gemm_small.h"
#include "kernels/cuda/raii.h"
#include "kernels/gemm/gemm_mode.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

struct MM {
  int64_t batch, m, n, k;  // batch 0: rank-2 A; batch > 0 with shared: A [batch, ., .], B [k, n]
  bool batched_b;
};

// invariant: the batch-invariant mode (kernels/gemm/gemm_mode.h) on both sides, which
// must then agree bit for bit. o: the backend's GEMM kernels.
void matmul_cases(bool tf32, bool invariant = false, const CudaBackendOptions& o = {}) {
  const std::vector<MM> sizes = {{0, 1, 1, 1, false},     {0, 7, 5, 3, false},     {0, 33, 65, 17, false},
                                 {0, 1023, 7, 129, false}, {0, 256, 256, 256, false}, {3, 7, 9, 5, false},
                                 {4, 33, 17, 65, true},    {2, 1, 1023, 7, true},    {5, 64, 64, 64, false}};
  uint64_t seed = 11000;
  CudaBackend tb(0, tf32, o);
  for (const MM& s : sizes)
    for (bool ta : {false, true})
      for (bool tb_ : {false, true}) {
        OpCase c;
        c.op = OpKind::matmul;
        c.attrs.trans_a = ta;
        c.attrs.trans_b = tb_;
        const Shape a2 = ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
        const Shape b2 = tb_ ? Shape{s.n, s.k} : Shape{s.k, s.n};
        if (s.batch == 0) {
          c.in = {a2, b2};
          c.out = Shape{s.m, s.n};
        } else {
          c.in = {Shape{s.batch, a2[0], a2[1]}, s.batched_b ? Shape{s.batch, b2[0], b2[1]} : b2};
          c.out = Shape{s.batch, s.m, s.n};
        }
        // fp32: both sides accumulate k products in float in some order; TF32 rounds
        // the inputs to 10 mantissa bits (relative 2^-11 each), so scale with sqrt(k).
        const double k = static_cast<double>(s.k);
        c.tol = invariant ? Tol{0, 0} : tf32 ? Tol{2e-3 * std::sqrt(k), 1e-2} : Tol{1e-5 * std::sqrt(k), 1e-4};
        c.seed = seed++;
        CHECK(run_case_on(tb, c) == 0);
      }
}

// The options of a backend whose GEMMs take the small-GEMM kernel (and the skinny ones) or
// not, tuned or not; the rest the defaults.
CudaBackendOptions gemm_options(bool small, bool skinny = true, bool tune = false) {
  CudaBackendOptions o;
  o.small_gemm = small;
  o.skinny_gemm = skinny;
  o.gemm_autotune = tune;
  return o;
}

// A GEMM-family op on operands of these shapes, its output shape inferred.
OpCase gemm_case(OpKind op, const std::vector<Shape>& in, bool trans_a, bool trans_b, Act act) {
  OpCase c;
  c.op = op;
  c.attrs.trans_a = trans_a;
  c.attrs.trans_b = trans_b;
  c.attrs.act = act;
  c.in = in;
  c.out = infer_shape(op, in, c.attrs, op_name(op));
  return c;
}

// Every GEMM-family op's samples, and the products of tg-train's width-256 MLP at batch
// 32 (its forward linear, its input-gradient and weight-gradient GEMMs, the last layer),
// through backend b.
void gemm_family_cases(uint64_t seed, CudaBackend& b) {
  int ops = 0;
  for (OpKind op : all_ops()) {
    if (!op_in_family(op, "matmul")) continue;
    ++ops;
    const std::string label = op_name(op);
    CAPTURE(label);
    for (const OpSample& s : op_samples(op)) {
      CAPTURE(s.what);
      CHECK(run_case_on(b, sample_case(op, s, seed++)) == 0);
    }
  }
  CHECK(ops == 7);
  struct Mlp {
    OpKind op;
    std::vector<Shape> in;
    bool trans_a, trans_b;
    Act act;
  };
  const std::vector<Mlp> mlp = {{OpKind::linear, {{32, 256}, {256, 256}, {256}}, false, false, Act::relu},
                                {OpKind::linear, {{32, 256}, {256, 10}, {10}}, false, false, Act::none},
                                {OpKind::matmul, {{32, 256}, {256, 256}}, false, true, Act::none},
                                {OpKind::matmul, {{32, 256}, {32, 256}}, true, false, Act::none},
                                {OpKind::matmul_bias_grad, {{32, 256}, {32, 256}}, false, false, Act::none},
                                {OpKind::matmul_add, {{32, 256}, {32, 256}, {256, 256}}, true, false, Act::none},
                                {OpKind::matmul_act_grad, {{32, 256}, {256, 256}, {32, 256}}, false, true, Act::relu}};
  for (const Mlp& g : mlp) {
    OpCase c = gemm_case(g.op, g.in, g.trans_a, g.trans_b, g.act);
    c.tol = Tol{1e-5 * 16, 1e-4};  // k = 256 or 32 products summed in float, in different orders
    c.seed = seed++;
    CHECK(run_case_on(b, c) == 0);
  }
}

}  // namespace

TEST_CASE("cuda GEMM family: the small-GEMM kernel and cuBLASLt each match the CPU") {
  TG_REQUIRE_GPU();
  for (bool small : {true, false}) {
    CAPTURE(small);
    gemm_family_cases(small ? 12000 : 13000, backend(gemm_options(small)));
    matmul_cases(false, false, gemm_options(small));
  }
}

TEST_CASE("cuda skinny GEMMs: which products they take, by shape alone (no GPU needed)") {
  using kernels::cuda::SkinnyGemm;
  using kernels::cuda::skinny_gemm_kind;
  // The w4096 MLP's last layer: its input gradient, forward and weight gradient.
  CHECK(skinny_gemm_kind(1, 1024, 4096, 10, false) == SkinnyGemm::thin_k);
  CHECK(skinny_gemm_kind(1, 1024, 10, 4096, false) == SkinnyGemm::thin_n);
  CHECK(skinny_gemm_kind(1, 4096, 10, 1024, true) == SkinnyGemm::thin_n_trans_a);
  // k <= 16 wins over n <= 16; 17 of either is no longer thin; batches are not taken.
  CHECK(skinny_gemm_kind(1, 100, 5, 16, true) == SkinnyGemm::thin_k);
  CHECK(skinny_gemm_kind(1, 1024, 17, 17, false) == SkinnyGemm::none);
  CHECK(skinny_gemm_kind(2, 1024, 4096, 10, false) == SkinnyGemm::none);
  CHECK(skinny_gemm_kind(1, 0, 10, 10, false) == SkinnyGemm::none);
}

TEST_CASE("cuda skinny GEMMs: thin-k and thin-n products match the CPU, epilogues included") {
  TG_REQUIRE_GPU();
  CudaBackend& b = backend(gemm_options(true, true));
  struct Skinny {
    OpKind op;
    std::vector<Shape> in;
    bool trans_a, trans_b;
    Act act;
    kernels::cuda::SkinnyGemm kind;
  };
  using kernels::cuda::SkinnyGemm;
  // Each too large for the small-GEMM kernel (more than 2^23 multiply-adds, or k > 1024).
  const std::vector<Skinny> cases = {
      {OpKind::matmul, {{1000, 10}, {10, 900}}, false, false, Act::none, SkinnyGemm::thin_k},
      {OpKind::matmul, {{1000, 10}, {900, 10}}, false, true, Act::none, SkinnyGemm::thin_k},
      {OpKind::matmul, {{10, 1000}, {10, 900}}, true, false, Act::none, SkinnyGemm::thin_k},
      {OpKind::linear, {{1000, 12}, {12, 801}, {801}}, false, false, Act::relu, SkinnyGemm::thin_k},
      {OpKind::matmul_add, {{1000, 16}, {16, 700}, {1000, 700}}, false, false, Act::none, SkinnyGemm::thin_k},
      // whole blocks of skinny_k (16 rows x 1024 columns): its paths without bounds tests
      {OpKind::matmul, {{1024, 10}, {10, 2048}}, false, false, Act::none, SkinnyGemm::thin_k},
      {OpKind::linear, {{1024, 12}, {12, 1024}, {1024}}, false, false, Act::relu, SkinnyGemm::thin_k},
      {OpKind::matmul_act_grad, {{1024, 10}, {4096, 10}, {1024, 4096}}, false, true, Act::relu, SkinnyGemm::thin_k},
      {OpKind::matmul_act_grad, {{2000, 3}, {1501, 3}, {2000, 1501}}, false, true, Act::gelu, SkinnyGemm::thin_k},
      {OpKind::linear, {{300, 2048}, {2048, 10}, {10}}, false, false, Act::none, SkinnyGemm::thin_n},
      {OpKind::linear, {{1024, 4096}, {4096, 10}, {10}}, false, false, Act::none, SkinnyGemm::thin_n},
      {OpKind::linear, {{17, 3000}, {3000, 3}, {3}}, false, false, Act::relu, SkinnyGemm::thin_n},
      {OpKind::linear, {{301, 1500}, {1500, 16}, {16}}, false, false, Act::gelu, SkinnyGemm::thin_n},
      {OpKind::matmul, {{129, 2050}, {2050, 7}}, false, false, Act::none, SkinnyGemm::thin_n},
      {OpKind::matmul, {{129, 2050}, {7, 2050}}, false, true, Act::none, SkinnyGemm::thin_n},
      {OpKind::matmul_act_grad, {{200, 1100}, {10, 1100}, {200, 10}}, false, true, Act::relu, SkinnyGemm::thin_n},
      {OpKind::matmul, {{1500, 300}, {1500, 10}}, true, false, Act::none, SkinnyGemm::thin_n_trans_a},
      {OpKind::matmul, {{1100, 257}, {9, 1100}}, true, true, Act::none, SkinnyGemm::thin_n_trans_a},
      {OpKind::matmul, {{1500, 300}, {1500, 16}}, true, false, Act::none, SkinnyGemm::thin_n_trans_a},
      {OpKind::matmul, {{2000, 130}, {2000, 4}}, true, false, Act::none, SkinnyGemm::thin_n_trans_a},
      // a^T dz and dz's column sums (the bias gradient, the op's second output), always a^T
      {OpKind::matmul_bias_grad, {{1024, 4096}, {1024, 10}}, false, false, Act::none, SkinnyGemm::thin_n_trans_a}};
  uint64_t seed = 14000;
  for (const Skinny& g : cases) {
    OpCase c = gemm_case(g.op, g.in, g.trans_a, g.trans_b, g.act);
    const bool trans_a = g.trans_a || g.op == OpKind::matmul_bias_grad;
    const int64_t m = c.out[0], n = c.out[1], k = trans_a ? g.in[0][0] : g.in[0][1];
    CAPTURE(op_name(g.op));
    CAPTURE(c.out.str());
    REQUIRE(!kernels::cuda::small_gemm_fits(1, m, n, k));
    REQUIRE(kernels::cuda::skinny_gemm_kind(1, m, n, k, trans_a) == g.kind);
    c.tol = Tol{1e-5 * std::sqrt(static_cast<double>(k)), 1e-4};  // k products summed in float, in other orders
    for (bool unaligned : {false, true}) {  // unaligned: thin_n's scalar loads of A
      CAPTURE(unaligned);
      c.unaligned = unaligned;
      c.seed = seed++;
      CHECK(run_case_on(b, c) == 0);
    }
  }
  // matmul_act_grad on a skinny product gives the bits of that product, then relu_grad.
  const int64_t m = 1024, k = 10, n = 4096;
  DevTensor dz(random_vector(m * k, 61), false), w(random_vector(n * k, 62), false), y(random_vector(m * n, 63), false);
  const kernels::TensorView DZ{dz.ptr, Shape{m, k}}, W{w.ptr, Shape{n, k}}, Y{y.ptr, Shape{m, n}};
  const Shape mn{m, n};
  Attrs tb;
  tb.trans_b = true;
  Attrs at = tb;
  at.act = Act::relu;
  DevTensor fused(m * n, false), prod(m * n, false), want(m * n, false);
  run_op_on(b, OpKind::matmul_act_grad, {DZ, W, Y}, {fused.ptr, mn}, at);
  run_op_on(b, OpKind::matmul, {DZ, W}, {prod.ptr, mn}, tb);
  run_op_on(b, OpKind::relu_grad, {{prod.ptr, mn}, Y}, {want.ptr, mn}, Attrs{});
  CHECK(compare("skinny matmul_act_grad vs matmul, relu_grad", fused.download(), want.download(), Tol{}) == 0);
}

TEST_CASE("cuda small GEMM: a fused GEMM gives the bits of its product and the unfused epilogue ops") {
  TG_REQUIRE_GPU();
  CudaBackend& be = backend(gemm_options(true));
  const int64_t m = 33, k = 300, n = 37;  // two k chunks, partial tiles
  REQUIRE(kernels::cuda::small_gemm_fits(1, m, n, k));
  DevTensor x(random_vector(m * k, 41), false), w(random_vector(k * n, 42), false), b(random_vector(n, 43), false),
      r(random_vector(m * n, 44), false);
  const kernels::TensorView X{x.ptr, Shape{m, k}}, W{w.ptr, Shape{k, n}}, B{b.ptr, Shape{n}}, R{r.ptr, Shape{m, n}};
  auto out = [&] { return std::make_unique<DevTensor>(m * n, false); };
  const Shape mn{m, n};
  Attrs none;
  for (Act act : {Act::none, Act::relu, Act::gelu}) {
    CAPTURE(static_cast<int>(act));
    Attrs at;
    at.act = act;
    auto fused = out(), prod = out(), biased = out(), actd = out();
    run_op_on(be, OpKind::linear, {X, W, B}, {fused->ptr, mn}, at);
    run_op_on(be, OpKind::matmul, {X, W}, {prod->ptr, mn}, none);
    run_op_on(be, OpKind::bias_add, {{prod->ptr, mn}, B}, {biased->ptr, mn}, none);
    const DevTensor* want = biased.get();
    if (act != Act::none) {
      run_op_on(be, act == Act::relu ? OpKind::relu : OpKind::gelu, {{biased->ptr, mn}}, {actd->ptr, mn}, none);
      want = actd.get();
    }
    CHECK(compare("linear vs matmul, bias_add, act", fused->download(), want->download(), Tol{}) == 0);
  }
  // linear_add: (x w + b) + r, the residual added last.
  auto fused = out(), prod = out(), biased = out(), sum = out();
  run_op_on(be, OpKind::linear_add, {X, W, B, R}, {fused->ptr, mn}, none);
  run_op_on(be, OpKind::matmul, {X, W}, {prod->ptr, mn}, none);
  run_op_on(be, OpKind::bias_add, {{prod->ptr, mn}, B}, {biased->ptr, mn}, none);
  run_op_on(be, OpKind::add, {R, {biased->ptr, mn}}, {sum->ptr, mn}, none);
  CHECK(compare("linear_add vs matmul, bias_add, add", fused->download(), sum->download(), Tol{}) == 0);
}

TEST_CASE("cuda GEMM tuning: the tuned algorithms match the CPU, and every cache of the process gets the same one") {
  TG_REQUIRE_GPU();
  const CudaBackendOptions tuned = gemm_options(false, true, true);  // every product through cuBLASLt, tuned
  gemm_family_cases(14000, backend(tuned));
  matmul_cases(false, false, tuned);
  // Two handles and caches (as two backends have) ask for the same new key: one timing,
  // one algorithm, so the static and the dynamic executor keep identical kernels.
  tg::cuda::Stream stream = tg::cuda::Stream::create();
  tg::cuda::CublasLtHandle h1 = tg::cuda::CublasLtHandle::create(), h2 = tg::cuda::CublasLtHandle::create();
  kernels::cuda::LtCache c1(h1.get(), 1 << 22, true), c2(h2.get(), 1 << 22, true);
  kernels::cuda::LtKey key;
  key.m = 96;
  key.n = 200;
  key.k = 77;
  key.lda = 77;
  key.ldb = 200;
  key.ldd = 200;
  key.epilogue = kernels::cuda::LtEpilogue::bias_relu;
  const kernels::cuda::LtGemm& g1 = c1.get(key, stream.get());
  const kernels::cuda::LtGemm& g2 = c2.get(key, stream.get());
  CHECK(std::memcmp(&g1.algo(), &g2.algo(), sizeof(cublasLtMatmulAlgo_t)) == 0);
  CHECK(g1.workspace_bytes() == g2.workspace_bytes());
}

TEST_CASE("cuda GEMM floor pieces: LtOperands fills as asked, LtTuner::best computes the product") {
  TG_REQUIRE_GPU();
  tg::cuda::Stream stream = tg::cuda::Stream::create();
  tg::cuda::CublasLtHandle h = tg::cuda::CublasLtHandle::create();
  kernels::cuda::LtKey key;  // row-major [96, 200] = [96, 77] x [77, 200], A with a wider row (lda 80)
  key.m = 96;
  key.n = 200;
  key.k = 77;
  key.lda = 80;
  key.ldb = 200;
  key.ldd = 200;
  using kernels::cuda::LtOperandFill;
  double seconds = 0;
  auto g = kernels::cuda::LtTuner::best(h.get(), key, 1 << 22, 8, stream.get(), LtOperandFill::random, &seconds);
  CHECK(seconds > 0);
  const kernels::cuda::LtOperands x(key, g->workspace_bytes(), LtOperandFill::random, stream.get());
  const kernels::cuda::LtOperands flat(key, 0, LtOperandFill::constant, stream.get());
  g->run(h.get(), x.a, x.b, x.c, x.d, x.bias, x.ws, x.ws_bytes, stream.get());
  std::vector<float> a(static_cast<size_t>(key.m * key.lda)), b(static_cast<size_t>(key.k * key.n)),
      d(static_cast<size_t>(key.m * key.n)), c0(16);
  TG_CUDA_CHECK(cudaMemcpyAsync(a.data(), x.a, a.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
  TG_CUDA_CHECK(cudaMemcpyAsync(b.data(), x.b, b.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
  TG_CUDA_CHECK(cudaMemcpyAsync(d.data(), x.d, d.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
  TG_CUDA_CHECK(cudaMemcpyAsync(c0.data(), flat.a, c0.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
  TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  // Random: varied values in [-1, 1); constant: one value everywhere.
  float lo = 1, hi = -1;
  for (float v : a) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= -1.0f);
  CHECK(hi < 1.0f);
  CHECK(hi - lo > 1.5f);
  for (float v : c0) CHECK(v == c0[0]);
  // The product, against a double-precision reference over the stored operands.
  int bad = 0;
  for (int64_t i = 0; i < key.m; ++i)
    for (int64_t j = 0; j < key.n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < key.k; ++p)
        ref += static_cast<double>(a[static_cast<size_t>(i * key.lda + p)]) * b[static_cast<size_t>(p * key.n + j)];
      const float got = d[static_cast<size_t>(i * key.n + j)];
      if (std::fabs(got - ref) > 1e-4 * std::sqrt(static_cast<double>(key.k)) + 1e-4 * std::fabs(ref) && bad++ < 5)
        MESSAGE("D[" << i << "," << j << "] = " << got << ", expected " << ref);
    }
  CHECK(bad == 0);
}

TEST_CASE("cuda heads_pointers: the matrices' addresses of head views and packed operands, as HeadsMatrix::offset") {
  TG_REQUIRE_GPU();
  tg::cuda::Stream stream = tg::cuda::Stream::create();
  // A head view (rows 5, cols 3, 4 heads: ld 12), a packed operand, and a view of another
  // shape; 300 matrices take more than one block of the kernel.
  const HeadsMatrix ga{true, 5, 3, 12}, gb{false, 3, 7, 7}, gd{true, 5, 7, 28};
  // Element sizes 4 (f32) and 2 (bf16, f16): the offsets are in elements.
  for (int64_t batch : {int64_t{8}, int64_t{300}})
    for (int size : {4, 2}) {
      CAPTURE(batch);
      CAPTURE(size);
      const int64_t heads = 4;
      tg::cuda::DeviceBuffer arrays = tg::cuda::DeviceBuffer::allocate(static_cast<size_t>(3 * batch) * sizeof(void*));
      // Fake bases: the kernel only adds offsets, it never dereferences them.
      const char* a = reinterpret_cast<const char*>(uintptr_t{1} << 20);
      const char* b = reinterpret_cast<const char*>(uintptr_t{2} << 20);
      char* d = reinterpret_cast<char*>(uintptr_t{3} << 20);
      kernels::cuda::heads_pointers(a, ga, b, gb, d, gd, heads, batch, size, static_cast<void**>(arrays.get()),
                                    stream.get());
      std::vector<const char*> got(static_cast<size_t>(3 * batch));
      TG_CUDA_CHECK(cudaMemcpyAsync(got.data(), arrays.get(), got.size() * sizeof(void*), cudaMemcpyDeviceToHost,
                                    stream.get()));
      TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      int bad = 0;
      for (int64_t i = 0; i < batch; ++i) {
        const size_t u = static_cast<size_t>(i), n = static_cast<size_t>(batch);
        const bool ok = got[u] == a + ga.offset(i, heads) * size && got[n + u] == b + gb.offset(i, heads) * size &&
                        got[2 * n + u] == d + gd.offset(i, heads) * size;
        if (!ok && bad++ < 5) MESSAGE("matrix " << i << ": wrong address in one of the three arrays");
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("cuda GEMM with pointer arrays: LtOperands' arrays, LtTuner::best and run compute every matrix") {
  TG_REQUIRE_GPU();
  tg::cuda::Stream stream = tg::cuda::Stream::create();
  tg::cuda::CublasLtHandle h = tg::cuda::CublasLtHandle::create();
  kernels::cuda::LtKey key;  // 3 x row-major [20, 24] = [20, 16] x [24, 16]^T, A with a wider row
  key.batch = 3;
  key.m = 20;
  key.n = 24;
  key.k = 16;
  key.lda = 19;
  key.ldb = 16;
  key.ldd = 24;
  key.trans_b = true;
  key.align_a = 4;  // lda 19: the matrices' rows start 4-byte aligned
  key.pointer_arrays = true;
  using kernels::cuda::LtOperandFill;
  auto g = kernels::cuda::LtTuner::best(h.get(), key, 1 << 22, 4, stream.get(), LtOperandFill::random, nullptr);
  CHECK(g->workspace_bytes() >= key.pointer_array_bytes());
  const kernels::cuda::LtOperands x(key, g->workspace_bytes(), LtOperandFill::random, stream.get());
  g->run(h.get(), x.a, x.b, nullptr, x.d, nullptr, x.ws, x.ws_bytes, stream.get());
  const size_t n = static_cast<size_t>(key.batch);
  std::vector<const float*> ptr(3 * n);
  TG_CUDA_CHECK(cudaMemcpyAsync(ptr.data(), x.a, ptr.size() * sizeof(void*), cudaMemcpyDeviceToHost, stream.get()));
  TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<float> a(static_cast<size_t>(key.m * key.lda)), b(static_cast<size_t>(key.n * key.ldb)),
        d(static_cast<size_t>(key.m * key.ldd));
    TG_CUDA_CHECK(cudaMemcpyAsync(a.data(), ptr[i], a.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
    TG_CUDA_CHECK(cudaMemcpyAsync(b.data(), ptr[n + i], b.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
    TG_CUDA_CHECK(cudaMemcpyAsync(d.data(), ptr[2 * n + i], d.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
    TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (int64_t r = 0; r < key.m; ++r)
      for (int64_t c = 0; c < key.n; ++c) {
        double ref = 0;
        for (int64_t p = 0; p < key.k; ++p)
          ref += static_cast<double>(a[static_cast<size_t>(r * key.lda + p)]) * b[static_cast<size_t>(c * key.ldb + p)];
        const float got = d[static_cast<size_t>(r * key.ldd + c)];
        if (std::fabs(got - ref) > 1e-4 * std::sqrt(static_cast<double>(key.k)) + 1e-4 * std::fabs(ref) && bad++ < 5)
          MESSAGE("matrix " << i << " D[" << r << "," << c << "] = " << got << ", expected " << ref);
      }
  }
  CHECK(bad == 0);
  // An accumulating or fused pointer-array GEMM is refused with its reason.
  kernels::cuda::LtKey fused = key;
  fused.accumulate = true;
  CHECK_THROWS_WITH_AS(kernels::cuda::LtGemm(h.get(), fused, 1 << 22),
                       doctest::Contains("pointer arrays take no C and no epilogue"), std::invalid_argument);
}

TEST_CASE("cuda matmul_act_grad: the bits of matmul then relu_grad / gelu_grad, on both GEMM paths") {
  TG_REQUIRE_GPU();
  // [32,256] x [256,256]^T fits the small-GEMM kernel; [300,512] x [512,256]^T does not.
  for (int64_t m : {32, 300}) {
    const int64_t k = m == 32 ? 256 : 512, n = 256;
    for (bool small : {true, false}) {
      CAPTURE(m);
      CAPTURE(small);
      CudaBackend& be = backend(gemm_options(small));
      DevTensor dz(random_vector(m * k, 51), false), w(random_vector(n * k, 52), false), y(random_vector(m * n, 53), false);
      const kernels::TensorView DZ{dz.ptr, Shape{m, k}}, W{w.ptr, Shape{n, k}}, Y{y.ptr, Shape{m, n}};
      const Shape mn{m, n};
      Attrs tb;
      tb.trans_b = true;
      for (Act act : {Act::relu, Act::gelu}) {
        CAPTURE(static_cast<int>(act));
        Attrs at = tb;
        at.act = act;
        DevTensor fused(m * n, false), prod(m * n, false), want(m * n, false);
        run_op_on(be, OpKind::matmul_act_grad, {DZ, W, Y}, {fused.ptr, mn}, at);
        run_op_on(be, OpKind::matmul, {DZ, W}, {prod.ptr, mn}, tb);
        run_op_on(be, act == Act::relu ? OpKind::relu_grad : OpKind::gelu_grad, {{prod.ptr, mn}, Y}, {want.ptr, mn}, Attrs{});
        CHECK(compare("matmul_act_grad vs matmul, act grad", fused.download(), want.download(), Tol{}) == 0);
      }
    }
  }
}

TEST_CASE("cuda matmul fp32") { TG_REQUIRE_GPU(); matmul_cases(false); }
TEST_CASE("cuda matmul tf32") { TG_REQUIRE_GPU(); matmul_cases(true); }
TEST_CASE("cuda matmul batch-invariant: the CPU's bits") {
  TG_REQUIRE_GPU();
  kernels::BatchInvariantMatmul on;
  matmul_cases(false, true);
}

}  // namespace tg::testing
