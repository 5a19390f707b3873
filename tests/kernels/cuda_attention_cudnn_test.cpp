// The fused attention ops through cuDNN's flash attention (kernels/cuda/attention_cudnn.h,
// CudaBackendOptions::attention_cudnn) in bf16 and f16: against the CPU reference, against
// the project's own kernels (attention_cudnn=0), two runs bit for bit, and the engine report
// (which shapes cuDNN took, and why the others run on the own kernels). attention_fwd_lse
// (the attention pass's one forward) against the two ops it replaces: the statistic bit for
// bit, the output bit for bit on the own kernels and, through cuDNN, as close as attention
// is to the reference, with a message saying whether it had attention's bits.
//
// Each case runs the training chain: attention, attention_lse, then attention_grad fed the
// CPU reference's output and statistic (so the gradient is checked on its own, and its
// statistic is the one the scores give, as in training). The sequences are not multiples of
// 64 (cuDNN's tiles), with key lengths that include 0 (no key: output, gradients and
// statistic 0) and S (every key).
//
// Tolerances: cuDNN rounds the probabilities (and their gradients) to the 16-bit dtype before
// the tensor-core products, where the CPU reference sums in f32 and rounds once; an output is
// a convex sum of v's rows (|v| <= 1), so the error stays within a few 16-bit ulps of 1 (the
// atol), a gradient's within a few times more (its sums over the queries reach a few units).
// The statistic is compared as hi + lo, to 1e-3 (cuDNN computes it from f32 scores).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "graph/attention.h"
#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/attention_cudnn.h"
#include "kernels/cuda/attention_cudnn_graph.h"
#include "kernels/cuda/conv_cudnn.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

#define TG_REQUIRE_CUDNN_FRONTEND()                                                                 \
  do {                                                                                              \
    if (!kBuiltWithCudnnFrontend) {                                                                 \
      std::printf("TG_SKIP: this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)\n"); \
      return;                                                                                       \
    }                                                                                               \
  } while (0)

CudaBackend& with_cudnn(bool on) {
  CudaBackendOptions o;
  o.attention_cudnn = on;
  return backend(o);
}

struct Case {
  int64_t batch, seq, heads, dh;
  bool causal;
  std::vector<int64_t> lengths;  // empty: no padding mask
  DType lengths_dtype = DType::I32;
  DType dt = DType::BF16;
};

std::string describe(const Case& c) {
  std::string len;
  for (int64_t l : c.lengths) len += (len.empty() ? "" : ",") + std::to_string(l);
  return std::string(dtype_name(c.dt)) + " b" + std::to_string(c.batch) + " s" + std::to_string(c.seq) + " h" +
         std::to_string(c.heads) + " d" + std::to_string(c.dh) + (c.causal ? " causal" : "") +
         (len.empty() ? "" : " lengths " + len + " " + dtype_name(c.lengths_dtype));
}

Attrs attrs_of(const Case& c) {
  Attrs a;
  a.heads.count = c.heads;
  a.alpha = 1.0f / std::sqrt(static_cast<float>(c.dh));
  a.causal = c.causal;
  return a;
}

// The chain's values, widened to f32: the output, the statistic (hi + lo a row) and the
// stacked gradients.
struct Chain {
  std::vector<float> out, lse, grad;
};

std::vector<float> lse_sums(const std::vector<float>& pairs) {
  std::vector<float> s(pairs.size() / 2);
  for (size_t r = 0; r < s.size(); ++r) s[r] = pairs[2 * r] + pairs[2 * r + 1];
  return s;
}

struct Inputs {
  std::vector<float> q, k, v, dout, lengths;
};

Inputs inputs_of(const Case& c, uint64_t seed) {
  const int64_t n = c.batch * c.seq * c.heads * c.dh;
  Inputs in{random_vector(n, seed), random_vector(n, seed + 1), random_vector(n, seed + 2),
            random_vector(n, seed + 3), {}};
  for (auto* x : {&in.q, &in.k, &in.v, &in.dout})
    for (float& e : *x) e = round_to_dtype(e, c.dt);
  for (int64_t l : c.lengths) in.lengths.push_back(static_cast<float>(l));
  return in;
}

// Host storage of one tensor in dtype dt for the CPU reference.
struct Host {
  std::vector<char> bytes;
  Shape shape;
  DType dt;
  Host(const std::vector<float>& v, Shape s, DType d) : bytes(v.size() * dtype_size(d)), shape(s), dt(d) {
    store_as_dtype(v.data(), v.size(), dt, bytes.data());
  }
  Host(Shape s, DType d) : Host(std::vector<float>(static_cast<size_t>(s.numel()), NAN), s, d) {}
  kernels::TensorView view() { return {reinterpret_cast<float*>(bytes.data()), shape, dt}; }
  std::vector<float> values() const {
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    load_from_dtype(bytes.data(), v.size(), dt, v.data());
    return v;
  }
};

void run_host(OpKind op, std::vector<Host*> ins, Host& out, const Attrs& at) {
  kernels::OpCall call;
  call.op = op;
  call.attrs = &at;
  call.num_inputs = static_cast<int>(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) call.in[i] = ins[i]->view();
  call.out = out.view();
  kernels::run_cpu(call);
}

Chain cpu_chain(const Case& c, const Inputs& x) {
  const Attrs at = attrs_of(c);
  const AttentionGeometry g{c.batch, c.heads, c.seq, c.dh};
  Host q(x.q, g.view_shape(), c.dt), k(x.k, g.view_shape(), c.dt), v(x.v, g.view_shape(), c.dt),
      dout(x.dout, g.view_shape(), c.dt), len(x.lengths, Shape{c.batch}, c.lengths_dtype);
  Host out(g.view_shape(), c.dt), lse(g.lse_shape(), c.dt), grad(g.grad_shape(), c.dt);
  const bool masked = !c.lengths.empty();
  auto with_len = [&](std::vector<Host*> v) {
    if (masked) v.push_back(&len);
    return v;
  };
  run_host(OpKind::attention, with_len({&q, &k, &v}), out, at);
  run_host(OpKind::attention_lse, with_len({&q, &k}), lse, at);
  run_host(OpKind::attention_grad, with_len({&dout, &q, &k, &v, &out, &lse}), grad, at);
  return Chain{out.values(), lse.values(), grad.values()};
}

// The chain on backend b; attention_grad reads `ref`'s output and statistic.
Chain gpu_chain(CudaBackend& b, const Case& c, const Inputs& x, const Chain& ref) {
  const Attrs at = attrs_of(c);
  const AttentionGeometry g{c.batch, c.heads, c.seq, c.dh};
  DevTensor q(x.q, false, c.dt), k(x.k, false, c.dt), v(x.v, false, c.dt), dout(x.dout, false, c.dt);
  DevTensor ref_out(ref.out, false, c.dt), ref_lse(ref.lse, false, c.dt);
  DevTensor len(c.lengths.empty() ? std::vector<float>{0.0f} : x.lengths, false, c.lengths_dtype);
  DevTensor out(g.view_shape().numel(), false, c.dt), lse(g.lse_shape().numel(), false, c.dt),
      grad(g.grad_shape().numel(), false, c.dt);
  out.poison();
  lse.poison();
  grad.poison();
  TG_CUDA_CHECK(cudaDeviceSynchronize());  // the poison (legacy stream) lands before the backend's stream runs
  const Shape view = g.view_shape();
  auto with_len = [&](std::vector<kernels::TensorView> ins) {
    if (!c.lengths.empty()) ins.push_back(len.view(Shape{c.batch}));
    return ins;
  };
  run_op_on(b, OpKind::attention, with_len({q.view(view), k.view(view), v.view(view)}), out.view(view), at);
  run_op_on(b, OpKind::attention_lse, with_len({q.view(view), k.view(view)}), lse.view(g.lse_shape()), at);
  run_op_on(b, OpKind::attention_grad,
            with_len({dout.view(view), q.view(view), k.view(view), v.view(view), ref_out.view(view),
                      ref_lse.view(g.lse_shape())}),
            grad.view(g.grad_shape()), at);
  return Chain{out.download(), lse.download(), grad.download()};
}

// attention_fwd_lse on backend b: its output and its statistic (no gradient).
Chain gpu_fused(CudaBackend& b, const Case& c, const Inputs& x) {
  const Attrs at = attrs_of(c);
  const AttentionGeometry g{c.batch, c.heads, c.seq, c.dh};
  DevTensor q(x.q, false, c.dt), k(x.k, false, c.dt), v(x.v, false, c.dt);
  DevTensor len(c.lengths.empty() ? std::vector<float>{0.0f} : x.lengths, false, c.lengths_dtype);
  DevTensor out(g.view_shape().numel(), false, c.dt), lse(g.lse_shape().numel(), false, c.dt);
  out.poison();
  lse.poison();
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  const Shape view = g.view_shape();
  std::vector<kernels::TensorView> ins{q.view(view), k.view(view), v.view(view)};
  if (!c.lengths.empty()) ins.push_back(len.view(Shape{c.batch}));
  run_op_on(b, OpKind::attention_fwd_lse, ins, out.view(view), at, lse.view(g.lse_shape()));
  return Chain{out.download(), lse.download(), {}};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Tol out_tol(DType dt) { return dt == DType::BF16 ? Tol{0x1p-7, 0x1p-6} : Tol{0x1p-10, 0x1p-9}; }
Tol grad_tol(DType dt) { return dt == DType::BF16 ? Tol{0x1p-5, 0x1p-6} : Tol{0x1p-8, 0x1p-9}; }
constexpr Tol kLseTol{1e-3, 1e-4};

int64_t compare_chains(const std::string& what, const Chain& got, const Chain& want, DType dt, bool bitwise) {
  return compare(what + " attention", got.out, want.out, bitwise ? Tol{} : out_tol(dt)) +
         compare(what + " attention_lse (hi + lo)", lse_sums(got.lse), lse_sums(want.lse), bitwise ? Tol{} : kLseTol) +
         compare(what + " attention_grad", got.grad, want.grad, bitwise ? Tol{} : grad_tol(dt));
}

// Every row of a length-0 sequence: 0 in every output (never NaN).
void check_empty_sequences(const Case& c, const Chain& got) {
  const int64_t view = c.seq * c.heads * c.dh, rows = c.heads * c.seq;
  for (size_t b = 0; b < c.lengths.size(); ++b) {
    if (c.lengths[b] > 0) continue;
    int64_t nonzero = 0;
    for (int64_t e = 0; e < view; ++e) nonzero += got.out[static_cast<size_t>(static_cast<int64_t>(b) * view + e)] != 0.0f;
    for (int64_t r = 0; r < 2 * rows; ++r)
      nonzero += got.lse[static_cast<size_t>(static_cast<int64_t>(b) * 2 * rows + r)] != 0.0f;
    for (int64_t part = 0; part < 3; ++part)
      for (int64_t e = 0; e < view; ++e)
        nonzero += got.grad[static_cast<size_t>((part * c.batch + static_cast<int64_t>(b)) * view + e)] != 0.0f;
    INFO(describe(c), ": sequence ", b, " has no key");
    CHECK(nonzero == 0);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  struct Geo {
    int64_t batch, seq, heads, dh;
  };
  for (const Geo& g : {Geo{2, 70, 2, 64}, Geo{2, 100, 3, 32}, Geo{1, 33, 2, 64}, Geo{2, 129, 1, 128}})
    for (const DType dt : {DType::BF16, DType::F16})
      for (const bool causal : {false, true}) {
        out.push_back(Case{g.batch, g.seq, g.heads, g.dh, causal, {}, DType::I32, dt});
        if (g.batch == 2) {
          out.push_back(Case{g.batch, g.seq, g.heads, g.dh, causal, {0, g.seq}, DType::I32, dt});
          out.push_back(Case{g.batch, g.seq, g.heads, g.dh, causal, {g.seq / 3, g.seq + 5}, DType::I64, dt});
        }
      }
  return out;
}

// The engine the backend recorded for op on case c's geometry.
const kernels::cuda::AttnDnnChoice* choice_of(const CudaBackend& b, OpKind op, const Case& c,
                                              std::vector<kernels::cuda::AttnDnnChoice>& all) {
  all = b.attention_choices();
  for (const auto& ch : all)
    if (ch.key.op == op && ch.key.dtype == c.dt && ch.key.g.batch == c.batch && ch.key.g.seq == c.seq &&
        ch.key.g.heads == c.heads && ch.key.g.dh == c.dh && ch.key.causal == c.causal &&
        ch.key.masked == !c.lengths.empty())
      return &ch;
  return nullptr;
}

}  // namespace

// No device needed: the frontend checks each graph for a target it is told.
TEST_CASE("cuda attention via cuDNN: every op's graph passes the frontend's check for sm_80, sm_90 and sm_100") {
  TG_REQUIRE_CUDNN_FRONTEND();
  int64_t checked = 0;
  for (const OpKind op : {OpKind::attention, OpKind::attention_lse, OpKind::attention_grad, OpKind::attention_fwd_lse})
    for (const Case& c : cases())
      for (const int sm : {80, 90, 100}) {
        kernels::cuda::AttnDnnKey k;
        k.op = op;
        k.dtype = c.dt;
        k.g = AttentionGeometry{c.batch, c.heads, c.seq, c.dh};
        k.causal = c.causal;
        k.masked = !c.lengths.empty();
        k.alpha = attrs_of(c).alpha;
        INFO(op_name(op), " ", describe(c), " sm_", sm, " cuDNN ", kernels::cuda::cudnn_loaded_version());
        const std::string why = kernels::cuda::attention_dnn_check_graph(k, sm);
        if (sm >= 100 && op == OpKind::attention_grad && kernels::cuda::cudnn_loaded_version() < 91800) {
          // cuDNN before 9.18 has no deterministic backward on Blackwell, and says so.
          CHECK(why.find("Deterministic algorithm is not supported") != std::string::npos);
        } else {
          CHECK(why == "");
        }
        ++checked;
      }
  CHECK(checked == 4 * static_cast<int64_t>(cases().size()) * 3);
  // The check is real: heads of 512 dims are past what cuDNN's backward takes, and the message
  // names the call, the key and the frontend's code.
  kernels::cuda::AttnDnnKey wide;
  wide.op = OpKind::attention_grad;
  wide.g = AttentionGeometry{1, 1, 33, 512};
  const std::string why = kernels::cuda::attention_dnn_check_graph(wide, 90);
  CHECK(why.find("Graph::validate failed for attention_grad bf16 b1 h1 s33 d512") != std::string::npos);
  CHECK(why.find("GRAPH_NOT_SUPPORTED") != std::string::npos);
}

// Both of cuDNN's backwards: the deterministic one (the default) and, with
// attention_deterministic=0, the one that adds dq with atomics, within the same tolerance (the
// order of an f32 sum is already free there).
TEST_CASE("cuda attention via cuDNN: bf16 and f16 against the CPU reference, causal and not, key lengths 0 and S") {
  TG_REQUIRE_GPU();
  TG_REQUIRE_CUDNN_FRONTEND();
  for (bool deterministic : {true, false}) {
    CAPTURE(deterministic);
    CudaBackendOptions o;
    o.attention_cudnn = true;
    o.attention_deterministic = deterministic;
    CudaBackend& dnn = backend(o);
    uint64_t seed = 900;
    for (const Case& c : cases()) {
      CAPTURE(describe(c));
      const Inputs x = inputs_of(c, seed += 10);
      const Chain want = cpu_chain(c, x);
      const Chain got = gpu_chain(dnn, c, x, want);
      CHECK(compare_chains(describe(c) + " cudnn vs cpu", got, want, c.dt, false) == 0);
      check_empty_sequences(c, got);
      // The case ran on cuDNN, not on the own kernels behind its back.
      for (OpKind op : {OpKind::attention, OpKind::attention_lse, OpKind::attention_grad}) {
        std::vector<kernels::cuda::AttnDnnChoice> all;
        const kernels::cuda::AttnDnnChoice* ch = choice_of(dnn, op, c, all);
        REQUIRE(ch != nullptr);
        INFO(op_name(op), ": engine ", ch->engine, "; why own: ", ch->why);
        CHECK(ch->cudnn);
        if (op == OpKind::attention_grad) CHECK(ch->key.deterministic == deterministic);
      }
    }
  }
}

TEST_CASE("cuda attention via cuDNN: close to the own kernels, and two runs give the same bits") {
  TG_REQUIRE_GPU();
  TG_REQUIRE_CUDNN_FRONTEND();
  CudaBackend& dnn = with_cudnn(true);
  CudaBackend& own = with_cudnn(false);
  uint64_t seed = 1900;
  for (const Case& c : cases()) {
    CAPTURE(describe(c));
    const Inputs x = inputs_of(c, seed += 10);
    const Chain ref = cpu_chain(c, x);
    const Chain a = gpu_chain(dnn, c, x, ref);
    CHECK(compare_chains(describe(c) + " cudnn vs own", a, gpu_chain(own, c, x, ref), c.dt, false) == 0);
    // The deterministic backward (no atomics): the same bits from every run.
    CHECK(compare_chains(describe(c) + " cudnn run to run", gpu_chain(dnn, c, x, ref), a, c.dt, true) == 0);
  }
  CHECK(own.attention_choices().empty());  // attention_cudnn=0 never asks cuDNN
}

TEST_CASE("cuda attention via cuDNN: f32 and heads cuDNN does not take run on the own kernels, reported with why") {
  TG_REQUIRE_GPU();
  TG_REQUIRE_CUDNN_FRONTEND();
  CudaBackend& dnn = with_cudnn(true);
  struct Refused {
    Case c;
    const char* why;
  };
  for (const Refused& r : {Refused{Case{2, 20, 2, 32, true, {}, DType::I32, DType::F32}, "f32"},
                           Refused{Case{2, 20, 2, 12, false, {}, DType::I32, DType::BF16}, "multiples of 8"}}) {
    const Case& c = r.c;
    CAPTURE(describe(c));
    const Inputs x = inputs_of(c, 77);
    const Chain want = cpu_chain(c, x);
    // The own kernels' tolerance (tests/kernels/cuda_attention_test.cpp): f32 sums in either order.
    const Tol tol = c.dt == DType::F32 ? Tol{1e-4, 1e-4} : out_tol(c.dt);
    const Chain got = gpu_chain(dnn, c, x, want);
    CHECK(compare(describe(c) + " attention", got.out, want.out, tol) == 0);
    CHECK(compare(describe(c) + " attention_grad", got.grad, want.grad, c.dt == DType::F32 ? tol : grad_tol(c.dt)) == 0);
    std::vector<kernels::cuda::AttnDnnChoice> all;
    const kernels::cuda::AttnDnnChoice* ch = choice_of(dnn, OpKind::attention, c, all);
    REQUIRE(ch != nullptr);
    CHECK_FALSE(ch->cudnn);
    CHECK(ch->engine == "own");
    CHECK(ch->why.find(r.why) != std::string::npos);
  }
}

// The attention pass's bits on the GPU rest on this: attention_fwd_lse runs the cuDNN graph
// attention_lse runs (a forward with statistics), so the statistic must be attention_lse's bit
// for bit. Its output is that forward's, where attention runs cuDNN's inference forward; cuDNN
// does not promise the two the same bits, so the output is held to attention's tolerance
// against the CPU reference and the message says in how many cases the bits were attention's
// (tests/static/cuda_passes_test.cpp holds the training step to bitwise or to a tolerance by
// the same probe). On the own kernels (attention_cudnn=0) the fused op runs the two ops'
// kernels: both results bit for bit.
TEST_CASE("cuda attention_fwd_lse: attention_lse's statistic bits through cuDNN and the own kernels") {
  TG_REQUIRE_GPU();
  TG_REQUIRE_CUDNN_FRONTEND();
  CudaBackend& dnn = with_cudnn(true);
  CudaBackend& own = with_cudnn(false);
  uint64_t seed = 2900;
  int64_t same_out = 0, cases_run = 0;
  std::string first_apart;
  for (const Case& c : cases()) {
    CAPTURE(describe(c));
    const Inputs x = inputs_of(c, seed += 10);
    const Chain ref = cpu_chain(c, x);
    const Chain two = gpu_chain(dnn, c, x, ref), one = gpu_fused(dnn, c, x);
    CHECK(compare(describe(c) + " cudnn attention_fwd_lse's statistic vs attention_lse's", one.lse, two.lse, Tol{}) ==
          0);
    CHECK(compare(describe(c) + " cudnn attention_fwd_lse's output vs cpu", one.out, ref.out, out_tol(c.dt)) == 0);
    const bool same = same_bits(one.out, two.out);
    same_out += same;
    ++cases_run;
    if (!same && first_apart.empty()) first_apart = describe(c);
    std::vector<kernels::cuda::AttnDnnChoice> all;
    const kernels::cuda::AttnDnnChoice* ch = choice_of(dnn, OpKind::attention_fwd_lse, c, all);
    REQUIRE(ch != nullptr);
    INFO("attention_fwd_lse: engine ", ch->engine, "; why own: ", ch->why);
    CHECK(ch->cudnn);
    const Chain own_two = gpu_chain(own, c, x, ref), own_one = gpu_fused(own, c, x);
    CHECK(compare(describe(c) + " own attention_fwd_lse's output vs attention's", own_one.out, own_two.out, Tol{}) == 0);
    CHECK(compare(describe(c) + " own attention_fwd_lse's statistic vs attention_lse's", own_one.lse, own_two.lse,
                  Tol{}) == 0);
  }
  MESSAGE("cuDNN's forward with statistics (attention_fwd_lse) gave attention's output bit for bit in ", same_out,
          " of ", cases_run, " cases", first_apart.empty() ? std::string() : "; first apart: " + first_apart);
  std::printf("TG_NOTE: cudnn attention_fwd_lse output == attention output bitwise in %lld of %lld cases\n",
              static_cast<long long>(same_out), static_cast<long long>(cases_run));
}

}  // namespace tg::testing
