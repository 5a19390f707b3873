// The GEMM family in bf16 and f16 (kernels/cuda/gemm/gemm.h) against the CPU reference, which
// widens the 16-bit inputs, computes in f32 and rounds each output once (kernels/cpu/widen.cpp):
// every op's shared samples and larger shapes that reach the epilogues, the batched and the
// head-view products, aligned and one element off; the static executor's prepared path, the
// TF32 setting (which must leave 16-bit GEMMs alone), the batch-invariant mode's refusal and
// the kernels that finish what cuBLASLt's epilogue does not.
//
// The tolerance, per output element i (stated once, in gemm16_tolerance):
//   |got - want| <= 1.5 eps (|want| + g |P|) + 1.5 g delta + gelu + 2^-24
// Both sides hold the same 16-bit inputs and sum the same k products in f32, in different
// orders: each sum is within (k + 2) u S of the exact one (u = 2^-24, S = sum |a||b| + |bias|
// + |c|, the bound of any order of a sum of k + 2 terms), doubled for the tensor cores' adds,
// which truncate; so the two f32 results differ by at most delta = 4 (k + 2) u S. Each is then
// rounded once into the 16-bit type, whose values at v are at most eps |v| apart (eps = 2^-7
// for bf16, 2^-10 for f16): one ulp of the result at most, the 1.5 eps |want| term. The
// 2^-24 covers f16's subnormal spacing. matmul_act_grad's gelu_grad multiplies the product,
// rounded first on the GPU (as the unfused matmul then gelu_grad round it), by gelu', at most
// g = 1.13 in size, so the product's own rounding, eps |P| with P its f32 value, counts too
// (g = 1 and no P term elsewhere: relu_grad passes the rounded product or zero). linear's
// GELU epilogue gets the same term with P = A B (no bias): on operands of the smallest
// alignment cuBLASLt's bf16 epilogue may see the product rounded to the output type before
// it adds the bias (an H100 put one sample element 6 ulps off, inside this term only). gelu: the GELU approximations' own difference, 1e-4 + 1e-3 |want| (the f32
// samples' tolerance for cuBLASLt's GELU epilogue), on the cases with a GELU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "graph/float_formats.h"
#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/dtype_support.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda/gemm/gemm_epilogue16.h"
#include "kernels/cuda/gemm/gemm_lt.h"
#include "kernels/gemm/gemm_mode.h"
#include "tests/common/op_samples.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

constexpr DType kLowTypes[] = {DType::BF16, DType::F16};
constexpr double kU32 = 1.0 / (1 << 24);

// The spacing of dt's values relative to their size (f32: its own rounding of the result).
double eps_of(DType dt) { return dt == DType::BF16 ? 1.0 / 128 : dt == DType::F16 ? 1.0 / 1024 : kU32; }

struct GemmCase {
  std::string what;
  OpKind op;
  Attrs attrs;
  std::vector<Shape> in;
};

// The outputs of one run, widened to f32.
struct Outputs {
  std::vector<float> out, out2;
};

std::vector<Shape> out_shapes(const GemmCase& c) { return infer_shapes(c.op, c.in, c.attrs, c.what); }

// The case's inputs: random in [-1, 1), rounded to dt so that both sides read the same values.
std::vector<std::vector<float>> case_inputs(const GemmCase& c, DType dt, uint64_t seed) {
  std::vector<std::vector<float>> x;
  for (size_t i = 0; i < c.in.size(); ++i) {
    std::vector<float> v = random_vector(c.in[i].numel(), seed * 17 + i);
    for (float& f : v) f = round_to_dtype(f, dt);
    x.push_back(std::move(v));
  }
  return x;
}

// op on the CPU backend over host tensors of dtype dt (run_cpu widens 16-bit ones).
Outputs cpu_run(OpKind op, const Attrs& at, const std::vector<Shape>& in, const std::vector<std::vector<float>>& x,
                DType dt) {
  const size_t size = static_cast<size_t>(dtype_size(dt));
  std::vector<std::vector<char>> bytes;
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = static_cast<int>(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    bytes.emplace_back(x[i].size() * size);
    store_as_dtype(x[i].data(), x[i].size(), dt, bytes.back().data());
    c.in[i] = {reinterpret_cast<float*>(bytes.back().data()), in[i], dt};
  }
  const std::vector<Shape> outs = infer_shapes(op, in, at, "cpu_run");
  std::vector<std::vector<char>> out_bytes;
  for (const Shape& s : outs) out_bytes.emplace_back(static_cast<size_t>(s.numel()) * size);
  c.out = {reinterpret_cast<float*>(out_bytes[0].data()), outs[0], dt};
  if (outs.size() > 1) c.out2 = {reinterpret_cast<float*>(out_bytes[1].data()), outs[1], dt};
  kernels::run_cpu(c);
  Outputs r;
  std::vector<float>* dst[2] = {&r.out, &r.out2};
  for (size_t o = 0; o < outs.size(); ++o) {
    dst[o]->resize(static_cast<size_t>(outs[o].numel()));
    load_from_dtype(out_bytes[o].data(), dst[o]->size(), dt, dst[o]->data());
  }
  return r;
}

// The case on backend b. prepared: as the static executor runs it, with the algorithm
// Backend::prepare chose and a workspace of its size; else as the dynamic executor does.
Outputs gpu_run(CudaBackend& b, const GemmCase& c, const std::vector<std::vector<float>>& x, DType dt, bool unaligned,
                bool prepared) {
  std::vector<std::unique_ptr<DevTensor>> ins;
  kernels::OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.num_inputs = static_cast<int>(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i) {
    ins.push_back(std::make_unique<DevTensor>(x[i], unaligned, dt));
    call.in[i] = ins.back()->view(c.in[i]);
  }
  const std::vector<Shape> outs = out_shapes(c);
  std::vector<std::unique_ptr<DevTensor>> out;
  for (const Shape& s : outs) {
    out.push_back(std::make_unique<DevTensor>(s.numel(), unaligned, dt));
    out.back()->poison();
  }
  call.out = out[0]->view(outs[0]);
  if (outs.size() > 1) call.out2 = out[1]->view(outs[1]);
  cuda::DeviceBuffer ws;
  if (prepared) {
    const Backend::Prepared p = b.prepare(call);
    ws = cuda::DeviceBuffer::allocate(p.workspace_bytes);
    call.prepared = p.state;
    call.workspace = ws.get();
    call.workspace_bytes = p.workspace_bytes;
  }
  TG_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads and the poison ran on the legacy stream
  b.run(call);
  b.synchronize();
  Outputs r;
  r.out = out[0]->download();
  if (out.size() > 1) r.out2 = out[1]->download();
  return r;
}

std::vector<std::vector<float>> absolute(std::vector<std::vector<float>> x) {
  for (auto& v : x)
    for (float& f : v) f = std::fabs(f);
  return x;
}

// The per-element tolerance of the file's comment, for both outputs of the case.
Outputs gemm16_tolerance(const GemmCase& c, const std::vector<std::vector<float>>& x, const Outputs& want, DType dt) {
  // S: the op's product of the absolute values, its bias and its C (in f32; no activation,
  // which would only shrink it); matmul_act_grad's S and P are the plain product's.
  const bool act_grad = c.op == OpKind::matmul_act_grad;
  Attrs plain = c.attrs;
  plain.act = Act::none;
  const OpKind bound_op = act_grad ? OpKind::matmul : c.op;
  const std::vector<Shape> bound_in = act_grad ? std::vector<Shape>{c.in[0], c.in[1]} : c.in;
  std::vector<std::vector<float>> ax = absolute(x);
  if (act_grad) ax.resize(2);
  const Outputs s = cpu_run(bound_op, plain, bound_in, ax, DType::F32);
  const bool gelu_grad = act_grad && c.attrs.act == Act::gelu;
  const bool gelu_linear = c.op == OpKind::linear && c.attrs.act == Act::gelu;
  const bool gelu = gelu_grad || gelu_linear;
  Outputs p;
  if (gelu) p = cpu_run(OpKind::matmul, plain, {c.in[0], c.in[1]}, {x[0], x[1]}, DType::F32);
  // k is one of the inputs' extents: the largest bounds it.
  int64_t k = 0;
  for (size_t i = 0; i < std::min<size_t>(2, c.in.size()); ++i)
    for (int d = 0; d < c.in[i].rank; ++d) k = std::max(k, c.in[i][d]);
  const double eps = eps_of(dt), g = gelu ? 1.13 : 1.0;
  auto tol = [&](const std::vector<float>& w, const std::vector<float>& sv, const std::vector<float>* pv) {
    std::vector<float> t(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const double delta = 4.0 * static_cast<double>(k + 2) * kU32 * sv[i];
      const double prod = pv ? std::fabs((*pv)[i]) : 0.0;
      const double approx = gelu ? 1e-4 + 1e-3 * std::fabs(w[i]) : 0.0;
      t[i] = static_cast<float>(1.5 * eps * (std::fabs(w[i]) + g * prod) + 1.5 * g * delta + approx + kU32);
    }
    return t;
  };
  Outputs t;
  t.out = tol(want.out, s.out, gelu ? &p.out : nullptr);
  if (!want.out2.empty()) t.out2 = tol(want.out2, s.out2, nullptr);
  return t;
}

// Mismatches of got against want beyond the per-element tol (NaN in either is one); the
// first 10 printed under `what`.
int64_t compare_within(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                       const std::vector<float>& tol) {
  if (got.size() != want.size()) {
    std::printf("%s: got %zu elements, want %zu\n", what.c_str(), got.size(), want.size());
    return static_cast<int64_t>(std::max(got.size(), want.size()));
  }
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (err <= tol[i]) continue;  // false for NaN
    if (bad++ < 10)
      std::printf("  %s: mismatch at [%zu]: got %.9g, want %.9g, tolerance %.3g\n", what.c_str(), i, got[i], want[i],
                  tol[i]);
  }
  if (bad) std::printf("  %s: %lld of %zu elements outside the tolerance\n", what.c_str(), static_cast<long long>(bad), got.size());
  return bad;
}

// Both outputs of a run (the second where the op has one) within the tolerance.
int64_t compare_outputs(const std::string& what, const Outputs& got, const Outputs& want, const Outputs& tol) {
  int64_t bad = compare_within(what, got.out, want.out, tol.out);
  if (!want.out2.empty()) bad += compare_within(what + " second output", got.out2, want.out2, tol.out2);
  return bad;
}

std::string describe(const GemmCase& c, DType dt, bool unaligned) {
  std::string s = fmt::format("{} {} ({}) {}(", dtype_name(dt), op_name(c.op), c.what, op_name(c.op));
  for (size_t i = 0; i < c.in.size(); ++i) s += (i ? ", " : "") + c.in[i].str();
  return s + (unaligned ? ") unaligned" : ")");
}

// The case in dtype dt on backend b against the CPU reference; returns the mismatches.
int64_t check_case(CudaBackend& b, const GemmCase& c, DType dt, bool unaligned, uint64_t seed) {
  const auto x = case_inputs(c, dt, seed);
  const Outputs want = cpu_run(c.op, c.attrs, c.in, x, dt);
  const Outputs tol = gemm16_tolerance(c, x, want, dt);
  const Outputs got = gpu_run(b, c, x, dt, unaligned, false);
  const std::string name = describe(c, dt, unaligned);
  const int64_t bad = compare_outputs(name, got, want, tol);
  if (bad) std::printf("FAILED case: %s\n", name.c_str());
  return bad;
}

GemmCase gcase(std::string what, OpKind op, std::vector<Shape> in, Attrs at = {}) {
  return {std::move(what), op, at, std::move(in)};
}
Attrs trans(bool a, bool b) {
  Attrs t;
  t.trans_a = a;
  t.trans_b = b;
  return t;
}
Attrs with_act(Attrs t, Act act) {
  t.act = act;
  return t;
}
Attrs head_views(int64_t h, bool a, bool b, bool out, bool ta, bool tb) {
  Attrs t = trans(ta, tb);
  t.heads = HeadView{h, a, b, out};
  return t;
}

// Shapes past the samples' tiny ones: the epilogues on tiles of cuBLASLt's size, batched and
// folded products, a long k (split-K territory), and attention's head-view products.
std::vector<GemmCase> larger_cases() {
  const Attrs none;
  return {
      gcase("[96,200] x [200,136]", OpKind::matmul, {{96, 200}, {200, 136}}),
      gcase("A^T B^T", OpKind::matmul, {{200, 96}, {136, 200}}, trans(true, true)),
      gcase("batched", OpKind::matmul, {{4, 64, 96}, {4, 96, 80}}),
      gcase("batched A, shared B", OpKind::matmul, {{3, 50, 70}, {70, 90}}),
      gcase("batched A^T, shared B", OpKind::matmul, {{3, 70, 50}, {70, 90}}, trans(true, false)),
      gcase("long k", OpKind::matmul, {{64, 4096}, {4096, 64}}),
      gcase("bias", OpKind::linear, {{128, 256}, {256, 192}, {192}}),
      gcase("bias relu", OpKind::linear, {{128, 256}, {256, 192}, {192}}, with_act(none, Act::relu)),
      gcase("bias gelu", OpKind::linear, {{128, 256}, {256, 192}, {192}}, with_act(none, Act::gelu)),
      gcase("W^T, gelu", OpKind::linear, {{128, 256}, {192, 256}, {192}}, with_act(trans(false, true), Act::gelu)),
      gcase("rank-3 x, relu", OpKind::linear, {{4, 32, 256}, {256, 192}, {192}}, with_act(none, Act::relu)),
      gcase("bias + residual", OpKind::linear_add, {{128, 256}, {256, 192}, {192}, {128, 192}}),
      gcase("rank-3 x", OpKind::linear_add, {{4, 32, 256}, {192, 256}, {192}, {4, 32, 192}}, trans(false, true)),
      gcase("A B + C", OpKind::matmul_add, {{96, 200}, {200, 136}, {96, 136}}),
      gcase("A^T B + C", OpKind::matmul_add, {{512, 96}, {512, 160}, {96, 160}}, trans(true, false)),
      gcase("relu_grad(dz W^T, y)", OpKind::matmul_act_grad, {{128, 192}, {256, 192}, {128, 256}},
            with_act(trans(false, true), Act::relu)),
      gcase("gelu_grad(dz W^T, x)", OpKind::matmul_act_grad, {{128, 192}, {256, 192}, {128, 256}},
            with_act(trans(false, true), Act::gelu)),
      gcase("gelu, batched", OpKind::matmul_act_grad, {{2, 64, 96}, {2, 96, 80}, {2, 64, 80}},
            with_act(none, Act::gelu)),
      gcase("[512,96]^T [512,160]", OpKind::matmul_bias_grad, {{512, 96}, {512, 160}}),
      gcase("long k [4096,64]^T [4096,48]", OpKind::matmul_bias_grad, {{4096, 64}, {4096, 48}}),
      gcase("q k^T, both head views", OpKind::matmul_heads, {{2, 64, 128}, {2, 64, 128}},
            head_views(4, true, true, false, false, true)),
      gcase("p v, merged result", OpKind::matmul_heads, {{8, 64, 64}, {2, 64, 128}}, head_views(4, false, true, true, false, false)),
      gcase("p^T v, a transposed", OpKind::matmul_heads, {{8, 64, 64}, {2, 64, 128}},
            head_views(4, false, true, true, true, false)),
      gcase("packed, merged result", OpKind::matmul_heads, {{8, 64, 32}, {8, 32, 64}},
            head_views(4, false, false, true, false, false)),
  };
}

// The GEMM family's 16-bit ops: the op table's "matmul" kernels that take any float dtype.
std::vector<OpKind> gemm16_ops() {
  std::vector<OpKind> ops;
  for (OpKind op : all_ops())
    if (op_in_family(op, "matmul") && !op_is_f32_only(op)) ops.push_back(op);
  return ops;
}

std::vector<GemmCase> sample_cases() {
  std::vector<GemmCase> cases;
  for (OpKind op : gemm16_ops())
    for (const OpSample& s : op_samples(op)) cases.push_back({"sample " + s.what, op, s.attrs, s.in});
  return cases;
}

}  // namespace

TEST_CASE("the CUDA backend lists the GEMM family for bf16 and f16, and not matmul_sgd_momentum") {
  const std::vector<OpKind> ops = gemm16_ops();
  CHECK(ops.size() == 7);
  for (DType dt : kLowTypes) {
    for (OpKind op : ops) CHECK(kernels::cuda::has_kernel(op, dt));
    CHECK_FALSE(kernels::cuda::has_kernel(OpKind::matmul_sgd_momentum, dt));
  }
}

TEST_CASE("cuda GEMM family in bf16 and f16 == cpu within the stated tolerance (samples and larger shapes)") {
  TG_REQUIRE_GPU();
  std::vector<GemmCase> cases = sample_cases();
  for (const GemmCase& c : larger_cases()) cases.push_back(c);
  std::vector<bool> covered(kNumOps, false);
  uint64_t seed = 21000;
  for (const GemmCase& c : cases) {
    covered[static_cast<size_t>(c.op)] = true;
    for (DType dt : kLowTypes)
      for (bool unaligned : {false, true}) {
        CAPTURE(describe(c, dt, unaligned));
        CHECK(check_case(backend(), c, dt, unaligned, seed++) == 0);
      }
  }
  for (OpKind op : gemm16_ops()) CHECK(covered[static_cast<size_t>(op)]);
}

// One of two ways to run a case: on which backend, and whether prepared as the static
// executor runs it.
struct Way {
  CudaBackend* backend;
  bool prepared;
};

// Every larger case in both dtypes, run both ways: the same bits.
void check_same_bits(const std::string& what, Way first, Way second, uint64_t seed) {
  for (const GemmCase& c : larger_cases())
    for (DType dt : kLowTypes) {
      CAPTURE(describe(c, dt, false));
      const auto x = case_inputs(c, dt, seed++);
      const Outputs one = gpu_run(*first.backend, c, x, dt, false, first.prepared);
      const Outputs two = gpu_run(*second.backend, c, x, dt, false, second.prepared);
      CHECK(compare(what, two.out, one.out, Tol{}) == 0);
      if (!one.out2.empty()) CHECK(compare(what + ", second output", two.out2, one.out2, Tol{}) == 0);
    }
}

TEST_CASE("cuda 16-bit GEMMs: the static executor's prepared algorithm and workspace give the dynamic path's bits") {
  TG_REQUIRE_GPU();
  check_same_bits("prepared vs per call", {&backend(), false}, {&backend(), true}, 22000);
}

TEST_CASE("cuda 16-bit GEMMs ignore the backend's tf32 setting: same keys, same bits, and a tf32 16-bit key is refused") {
  TG_REQUIRE_GPU();
  CudaBackend tf32_backend(0, true, CudaBackendOptions{});
  check_same_bits("tf32 backend vs plain", {&backend(), false}, {&tf32_backend, false}, 23000);
  // The key of a call: tf32 only where the operands are f32.
  float* fake = reinterpret_cast<float*>(uintptr_t{1} << 20);
  const Attrs none;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    kernels::OpCall call;
    call.op = OpKind::matmul;
    call.attrs = &none;
    call.num_inputs = 2;
    call.in[0] = {fake, Shape{128, 256}, dt};
    call.in[1] = {fake, Shape{256, 128}, dt};
    call.out = {fake, Shape{128, 128}, dt};
    const kernels::cuda::LtKey key = kernels::cuda::gemm_key(call, tf32_backend.context());
    CHECK(key.dtype == dt);
    CHECK(key.tf32 == (dt == DType::F32));
  }
  tg::cuda::CublasLtHandle h = tg::cuda::CublasLtHandle::create();
  kernels::cuda::LtKey key;
  key.m = key.n = key.k = key.lda = key.ldb = key.ldd = 64;
  key.dtype = DType::BF16;
  key.tf32 = true;
  CHECK_THROWS_WITH_AS(kernels::cuda::LtGemm(h.get(), key, 1 << 22), doctest::Contains("tf32 is a mode of f32"),
                       std::invalid_argument);
}

TEST_CASE("cuda 16-bit GEMMs in the batch-invariant mode: refused with the reason") {
  TG_REQUIRE_GPU();
  kernels::BatchInvariantMatmul on;
  const GemmCase c = gcase("[96,200] x [200,136]", OpKind::matmul, {{96, 200}, {200, 136}});
  const auto x = case_inputs(c, DType::BF16, 1);
  CHECK_THROWS_WITH_AS(gpu_run(backend(), c, x, DType::BF16, false, false),
                       doctest::Contains("batch-invariant matmul mode has f32 kernels only"), std::invalid_argument);
}

TEST_CASE("cuda column_sums_16bit: matmul_bias_grad's bias gradient, one run of rows or many") {
  TG_REQUIRE_GPU();
  const cudaStream_t s = backend().stream();
  const kernels::CudaExecContext& ctx = backend().context();
  uint64_t seed = 24000;
  for (DType dt : kLowTypes)
    for (int64_t rows : {1, 7, 1000, 8192})
      for (int64_t cols : {1, 33, 100, 768})
        for (bool scratch : {true, false}) {  // many runs of rows, or one
          CAPTURE(dtype_name(dt));
          CAPTURE(rows);
          CAPTURE(cols);
          CAPTURE(scratch);
          std::vector<float> x = random_vector(rows * cols, seed++);
          for (float& f : x) f = round_to_dtype(f, dt);
          DevTensor dx(x, false, dt), out(cols, false, dt);
          out.poison();
          TG_CUDA_CHECK(cudaDeviceSynchronize());
          kernels::cuda::column_sums_16bit(dt, dx.ptr, out.ptr, rows, cols, scratch ? ctx.scratch : nullptr,
                                           scratch ? ctx.scratch_bytes : 0, s);
          TG_CUDA_CHECK(cudaStreamSynchronize(s));
          // Exact sums in double, rounded once; the kernel's f32 sums differ by at most rows u S.
          std::vector<float> want(static_cast<size_t>(cols)), tol(static_cast<size_t>(cols));
          for (int64_t j = 0; j < cols; ++j) {
            double sum = 0, abs_sum = 0;
            for (int64_t r = 0; r < rows; ++r) {
              sum += x[static_cast<size_t>(r * cols + j)];
              abs_sum += std::fabs(x[static_cast<size_t>(r * cols + j)]);
            }
            const auto u = static_cast<size_t>(j);
            want[u] = round_to_dtype(static_cast<float>(sum), dt);
            tol[u] = static_cast<float>(1.5 * eps_of(dt) * std::fabs(want[u]) + 2.0 * rows * kU32 * abs_sum + kU32);
          }
          CHECK(compare_within("column sums", out.download(), want, tol) == 0);
        }
}

namespace {

// Products whose rows are not 16 bytes apart in any dtype (2049 columns) and large enough
// for staging (kernels/gemm/gemm_staging.h): a vocabulary's three products, an accumulated
// one with two unaligned operands, and a fused bias.
std::vector<GemmCase> unaligned_row_cases() {
  return {
      gcase("logits h W^T", OpKind::matmul, {{1024, 768}, {2049, 768}}, trans(false, true)),
      gcase("dh = dlogits W", OpKind::matmul, {{1024, 2049}, {2049, 768}}),
      gcase("dW = dlogits^T h", OpKind::matmul, {{1024, 2049}, {1024, 768}}, trans(true, false)),
      gcase("A B + C, B and D unaligned", OpKind::matmul_add, {{1024, 768}, {768, 2049}, {1024, 2049}}),
      gcase("x W + b", OpKind::linear, {{1024, 768}, {768, 2049}, {2049}}),
      gcase("dW and db of a 2049-wide layer", OpKind::matmul_bias_grad, {{1024, 768}, {1024, 2049}}),
  };
}

// Case c's call in dtype dt at a 1 MiB-aligned address (the rule reads shapes; the key the
// pointers' alignment classes).
kernels::OpCall shape_call(const GemmCase& c, DType dt) {
  float* fake = reinterpret_cast<float*>(uintptr_t{1} << 20);
  kernels::OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.num_inputs = static_cast<int>(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i) call.in[i] = {fake, c.in[i], dt};
  const std::vector<Shape> outs = out_shapes(c);
  call.out = {fake, outs[0], dt};
  if (outs.size() > 1) call.out2 = {fake, outs[1], dt};
  return call;
}

size_t staging_bytes_of(CudaBackend& b, const GemmCase& c, DType dt) {
  return kernels::cuda::gemm_staging_bytes(shape_call(c, dt), b.context());
}

}  // namespace

TEST_CASE("cuda 16-bit matmul_bias_grad with gemm_bias_grad_sums: the plain GEMM and the column sums == cpu") {
  TG_REQUIRE_GPU();
  CudaBackendOptions o;
  o.gemm_bias_grad_sums = true;
  CudaBackend& sums = backend(o);
  uint64_t seed = 27000;
  for (const GemmCase& c : {gcase("[512,96]^T [512,160]", OpKind::matmul_bias_grad, {{512, 96}, {512, 160}}),
                            gcase("[8192,64]^T [8192,768]", OpKind::matmul_bias_grad, {{8192, 64}, {8192, 768}})})
    for (DType dt : kLowTypes) {
      const std::string name = describe(c, dt, false);
      CAPTURE(name);
      const auto x = case_inputs(c, dt, seed++);
      const Outputs want = cpu_run(c.op, c.attrs, c.in, x, dt);
      const Outputs tol = gemm16_tolerance(c, x, want, dt);
      const Outputs got = gpu_run(sums, c, x, dt, false, false);
      REQUIRE_FALSE(want.out2.empty());  // the bias gradient
      CHECK(compare_outputs(name, got, want, tol) == 0);
      const Outputs planned = gpu_run(sums, c, x, dt, false, true);
      CHECK(compare("prepared vs per call", planned.out2, got.out2, Tol{}) == 0);
    }
}

TEST_CASE("cuda GEMMs with extents off 16-byte steps run padded on staged copies: == cpu, static == dynamic bitwise") {
  TG_REQUIRE_GPU();
  CudaBackendOptions on, off;
  on.gemm_align_staging = true;
  off.gemm_align_staging = false;
  CudaBackend& staged = backend(on);
  CudaBackend& unstaged = backend(off);
  uint64_t seed = 26000;
  for (const GemmCase& c : unaligned_row_cases())
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      const std::string name = describe(c, dt, false);
      CAPTURE(name);
      CHECK(staging_bytes_of(staged, c, dt) > 0);
      CHECK(staging_bytes_of(unstaged, c, dt) == 0);
      // Reports see the padded product (tg-train's GEMM floor times what runs).
      CHECK_FALSE(kernels::cuda::gemm_key(shape_call(c, dt), staged.context()) ==
                  kernels::cuda::gemm_key(shape_call(c, dt), unstaged.context()));
      const auto x = case_inputs(c, dt, seed++);
      const Outputs want = cpu_run(c.op, c.attrs, c.in, x, dt);
      const Outputs tol = gemm16_tolerance(c, x, want, dt);
      const Outputs dynamic = gpu_run(staged, c, x, dt, false, false);
      CHECK(compare_outputs(name + " staged", dynamic, want, tol) == 0);
      // The static executor's way: Backend::prepare's key and a workspace of its size, which
      // holds the copies (Prepared::own_workspace).
      const Backend::Prepared p = staged.prepare(shape_call(c, dt));
      CHECK(p.own_workspace);
      CHECK(p.workspace_bytes >= staging_bytes_of(staged, c, dt));
      const Outputs planned = gpu_run(staged, c, x, dt, false, true);
      CHECK(compare("staged, prepared vs per call", planned.out, dynamic.out, Tol{}) == 0);
      if (!dynamic.out2.empty()) CHECK(compare("staged, prepared vs per call, second output", planned.out2, dynamic.out2, Tol{}) == 0);
      const Outputs plain = gpu_run(backend(), c, x, dt, false, false);
      CHECK(compare_outputs(name + " unstaged", plain, want, tol) == 0);
    }
}

TEST_CASE("cuda LtOperands of 16-bit keys: random values within plus or minus 1, finite, in the key's dtype") {
  TG_REQUIRE_GPU();
  tg::cuda::Stream stream = tg::cuda::Stream::create();
  for (DType dt : kLowTypes) {
    kernels::cuda::LtKey key;  // row-major [64, 160] = [64, 96] x [96, 160]
    key.m = 64, key.n = 160, key.k = 96, key.lda = 96, key.ldb = 160, key.ldd = 160;
    key.dtype = dt;
    const kernels::cuda::LtOperands x(key, 0, kernels::cuda::LtOperandFill::random, stream.get());
    std::vector<uint16_t> bits(static_cast<size_t>(key.m * key.lda));
    TG_CUDA_CHECK(cudaMemcpyAsync(bits.data(), x.a, bits.size() * 2, cudaMemcpyDeviceToHost, stream.get()));
    TG_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    std::vector<float> a(bits.size());
    load_from_dtype(bits.data(), bits.size(), dt, a.data());
    float lo = 1, hi = -1;
    for (float v : a) {
      REQUIRE(std::isfinite(v));
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    CHECK(lo >= -1.0f);
    CHECK(hi <= 1.0f);
    CHECK(hi - lo > 1.5f);
  }
}

}  // namespace tg::testing
