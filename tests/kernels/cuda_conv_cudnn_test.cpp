// conv2d, conv2d_grad_input and conv2d_grad_weight through cuDNN (kernels/cuda/conv_cudnn.h)
// against the CPU reference, and the routing between cuDNN and the direct kernels
// (kernels/cuda/conv.cu) that the option conv_cudnn and the geometry decide.
//
// Tolerances: cuDNN sums the products in f32 in an order of its own, the CPU in double,
// rounded once: conv_cudnn_tol (tests/common/op_samples.h), which grows with the square root
// of the sum's length as the GEMMs' does. bf16 and f16 have f32 products and sums and one
// rounding on the store, as the CPU reference (kernels/cpu/widen.cpp): that tolerance plus
// one ulp of the dtype (low_precision_tol). TF32 rounds the operands to 10 mantissa bits:
// the GEMMs' TF32 tolerance. The direct kernels run the CPU's element functions: 1e-6
// (kConvDirectTol), only a double multiply-add's contraction may differ.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/conv.h"
#include "kernels/cuda/conv_cudnn_frontend.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/common/op_samples.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

const OpKind kConvOps[] = {OpKind::conv2d, OpKind::conv2d_grad_input, OpKind::conv2d_grad_weight};
const DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};

CudaBackendOptions with_cudnn(bool on) {
  CudaBackendOptions o;
  o.conv_cudnn = on;
  return o;
}

// A convolution's window: the forward op's x and weight, and its attributes.
struct Window {
  std::string what;
  Shape x, w;
  ConvAttr a;
};

ConvAttr conv_attr(std::array<int, 2> stride, std::array<int, 4> pads, std::array<int, 2> dilation, int groups) {
  ConvAttr a;
  a.stride = stride;
  a.pads = pads;
  a.dilation = dilation;
  a.groups = groups;
  return a;
}

// Channels 16 to 64, 32 x 32 images, batch 8: the CIFAR networks' convolutions and the
// grouped, depthwise and dilated forms.
std::vector<Window> larger_windows() {
  return {{"3x3, 16 to 32 channels, pads 1", {8, 16, 32, 32}, {32, 16, 3, 3}, conv_attr({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
          {"3x3, stride 2, 32 to 64 channels, pads 1", {8, 32, 32, 32}, {64, 32, 3, 3},
           conv_attr({2, 2}, {1, 1, 1, 1}, {1, 1}, 1)},
          {"1x1, 64 to 32 channels", {8, 64, 32, 32}, {32, 64, 1, 1}, conv_attr({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
          {"depthwise 3x3, 32 channels, pads 1", {8, 32, 32, 32}, {32, 1, 3, 3},
           conv_attr({1, 1}, {1, 1, 1, 1}, {1, 1}, 32)},
          {"4 groups, dilation 2, pads 2, 32 to 64 channels", {8, 32, 32, 32}, {64, 8, 3, 3},
           conv_attr({1, 1}, {2, 2, 2, 2}, {2, 2}, 4)}};
}

ConvGeometry window_geometry(const Window& win) {
  const Shape fwd[3] = {win.x, win.w, {}};
  ConvGeometry g;
  Shape y;
  std::string why;
  if (!conv_op_geometry(OpKind::conv2d, fwd, win.a, g, y, &why)) throw std::logic_error(win.what + ": " + why);
  return g;
}

// The case of op on the window: dy of the forward output's shape for the gradients.
OpCase window_case(OpKind op, const Window& win, DType dt, Tol f32_tol, uint64_t seed) {
  const ConvGeometry g = window_geometry(win);
  const Shape y = g.out_shape();
  OpCase c;
  c.op = op;
  c.attrs.conv = win.a;
  c.in = op == OpKind::conv2d ? std::vector<Shape>{win.x, win.w}
         : op == OpKind::conv2d_grad_input ? std::vector<Shape>{y, win.w, win.x}
                                           : std::vector<Shape>{y, win.x, win.w};
  c.out = op == OpKind::conv2d ? y : op == OpKind::conv2d_grad_input ? win.x : win.w;
  c.tol = low_precision_tol(f32_tol, dt);
  c.dtype = dt;
  c.seed = seed;
  return c;
}

Tol tol_of(ConvTol t) { return Tol{t.atol, t.rtol}; }

// Whether backend b runs the case through cuDNN: what prepare() answers for its call (a plan
// exactly for the calls run_cuda sends to cuDNN). Null pointers count as aligned.
bool takes_cudnn(CudaBackend& b, const OpCase& c, float* data = nullptr) {
  kernels::OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.num_inputs = static_cast<int>(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i) call.in[i] = {data, c.in[i], c.dtype};
  call.out = {data, c.out, c.dtype};
  return b.prepare(call).state != nullptr;
}

bool symmetric_pads(const ConvAttr& a) { return a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3]; }

// Every conv op in every dtype on every larger window through backend b, each taken by cuDNN
// and within cuDNN's tolerance of the CPU (`adjust` may widen a case's tolerance first).
void check_every_window(CudaBackend& b, uint64_t seed,
                        const std::function<void(OpCase&, const Window&)>& adjust = {}) {
  for (OpKind op : kConvOps)
    for (DType dt : kDtypes) {
      const std::string label = std::string(op_name(op)) + " " + dtype_name(dt);
      CAPTURE(label);
      for (const Window& win : larger_windows()) {
        CAPTURE(win.what);
        OpCase c = window_case(op, win, dt, tol_of(conv_cudnn_tol(op, window_geometry(win))), seed++);
        if (adjust) adjust(c, win);
        CHECK(takes_cudnn(b, c));
        CHECK(run_case_on(b, c) == 0);
      }
    }
}

bool skip_without_cudnn() {
  if (kBuiltWithCudnn) return false;
  std::printf("TG_SKIP: this build has no cuDNN (cmake/Cudnn.cmake found none)\n");
  return true;
}

}  // namespace

// The geometry half of the routing rule, on the host (no device needed).
TEST_CASE("cuDNN takes the geometries its descriptors express: symmetric pads, or trailing ones with the same output") {
  if (skip_without_cudnn()) return;
  for (OpKind op : kConvOps)
    for (const OpSample& s : conv_samples(op)) {
      CAPTURE(s.what);
      const Window win{s.what, op == OpKind::conv2d ? s.in[0] : op == OpKind::conv2d_grad_input ? s.in[2] : s.in[1],
                       op == OpKind::conv2d_grad_weight ? s.in[2] : s.in[1], s.attrs.conv};
      // The one asymmetric sample: pads right 1 over 7 columns, window 2, stride 2 gives 4
      // outputs, symmetric pads 0 give 3. Its top pad alone would be cuDNN's (below).
      CHECK(kernels::cuda::conv_dnn_geometry_ok(window_geometry(win)) == symmetric_pads(s.attrs.conv));
    }
  for (const Window& win : larger_windows()) CHECK(kernels::cuda::conv_dnn_geometry_ok(window_geometry(win)));
  const Window same{"top 1 left 1", {2, 4, 6, 6}, {8, 4, 3, 3}, conv_attr({2, 2}, {1, 1, 0, 0}, {1, 1}, 1)};
  CHECK(kernels::cuda::conv_dnn_geometry_ok(window_geometry(same)));
  const Window more{"bottom 1, stride 1", {2, 4, 6, 6}, {8, 4, 3, 3}, conv_attr({1, 1}, {0, 0, 1, 0}, {1, 1}, 1)};
  CHECK_FALSE(kernels::cuda::conv_dnn_geometry_ok(window_geometry(more)));
  // An output of 2^31 elements: past the descriptors' int strides.
  const Window big{"2^31 outputs", {2048, 1, 1024, 1024}, {1, 1, 1, 1}, conv_attr({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)};
  CHECK_FALSE(kernels::cuda::conv_dnn_geometry_ok(window_geometry(big)));
}

TEST_CASE("cuda conv through cuDNN == cpu: every conv sample and larger windows, in f32, bf16 and f16") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackend& b = backend(with_cudnn(true));
  uint64_t seed = 7000;
  for (OpKind op : kConvOps)
    for (DType dt : kDtypes) {
      const std::string label = std::string(op_name(op)) + " " + dtype_name(dt);
      CAPTURE(label);
      for (const OpSample& s : conv_samples(op)) {
        CAPTURE(s.what);
        const OpCase c = sample_case(op, s, seed++, dt);
        // Symmetric pads are always cuDNN's; asymmetric ones are when they give the same
        // output as symmetric ones (the case below).
        if (symmetric_pads(s.attrs.conv)) CHECK(takes_cudnn(b, c));
        CHECK(run_case_on(b, c) == 0);
      }
      for (const Window& win : larger_windows()) {
        CAPTURE(win.what);
        const OpCase c = window_case(op, win, dt, tol_of(conv_cudnn_tol(op, window_geometry(win))), seed++);
        CHECK(takes_cudnn(b, c));
        CHECK(run_case_on(b, c) == 0);
      }
    }
}

// conv_transpose2d runs as the BackwardData of its geometry (graph/conv.h), under
// conv2d_grad_input's plans: the samples (output_padding, groups, depthwise) and a DCGAN-style
// upsampling layer, 4x4 at stride 2.
TEST_CASE("cuda conv_transpose2d through cuDNN == cpu: every sample and an upsampling layer, in f32, bf16 and f16") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackend& b = backend(with_cudnn(true));
  const OpKind op = OpKind::conv_transpose2d;
  OpSample up;
  up.what = "4x4, stride 2, pads 1, 64 to 32 channels, 16 x 16 to 32 x 32";
  up.in = {{8, 64, 16, 16}, {64, 32, 4, 4}};
  up.attrs.conv = conv_attr({2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
  ConvGeometry g;
  Shape y;
  std::string why;
  REQUIRE_MESSAGE(conv_op_geometry(op, up.in.data(), up.attrs.conv, g, y, &why), why);
  CHECK(y == Shape{8, 32, 32, 32});
  const ConvTol tol = conv_cudnn_tol(op, g);
  up.cuda_atol = tol.atol;
  up.cuda_rtol = tol.rtol;
  std::vector<OpSample> samples = op_samples(op);
  samples.push_back(up);
  uint64_t seed = 9000;
  for (DType dt : kDtypes)
    for (const OpSample& s : samples) {
      CAPTURE(s.what);
      CAPTURE(dtype_name(dt));
      const OpCase c = sample_case(op, s, seed++, dt);
      if (symmetric_pads(s.attrs.conv)) CHECK(takes_cudnn(b, c));
      CHECK(run_case_on(b, c) == 0);
    }
}

TEST_CASE("cuda conv through cuDNN: asymmetric pads run there when the output is the symmetric one's, else direct") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackend& b = backend(with_cudnn(true));
  // Pads top 1, bottom 0 with stride 2 over 6 rows: 3 output rows, as pads 1 and 1 give
  // (which inputs an output reads depends on the leading pad alone).
  const Window same{"pads top 1 left 1, stride 2", {2, 4, 6, 6}, {8, 4, 3, 3}, conv_attr({2, 2}, {1, 1, 0, 0}, {1, 1}, 1)};
  // Pads right 1 over 7 columns, window 2, stride 2: 4 outputs, where symmetric pads 0 give 3.
  const Window other{"pads right 1, stride 2", {2, 4, 6, 7}, {8, 4, 3, 2}, conv_attr({2, 2}, {0, 0, 0, 1}, {1, 1}, 1)};
  uint64_t seed = 7500;
  for (OpKind op : kConvOps)
    for (DType dt : kDtypes) {
      const std::string label = std::string(op_name(op)) + " " + dtype_name(dt);
      CAPTURE(label);
      const OpCase on = window_case(op, same, dt, tol_of(conv_cudnn_tol(op, window_geometry(same))), seed++);
      CHECK(takes_cudnn(b, on));
      CHECK(run_case_on(b, on) == 0);
      const OpCase off = window_case(op, other, dt, tol_of(kConvDirectTol), seed++);
      CHECK_FALSE(takes_cudnn(b, off));
      CHECK(run_case_on(b, off) == 0);
    }
}

TEST_CASE("cuda conv through cuDNN: pointers not 16-byte aligned run on the direct kernels") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackend& b = backend(with_cudnn(true));
  const Window win = larger_windows().front();
  uint64_t seed = 7700;
  for (OpKind op : kConvOps)
    for (DType dt : kDtypes) {
      const std::string label = std::string(op_name(op)) + " " + dtype_name(dt);
      CAPTURE(label);
      OpCase c = window_case(op, win, dt, tol_of(kConvDirectTol), seed++);
      // One element past a 256-byte boundary, as OpCase::unaligned places every tensor.
      CHECK_FALSE(takes_cudnn(b, c, reinterpret_cast<float*>(uintptr_t{256} + static_cast<uintptr_t>(dtype_size(dt)))));
      c.unaligned = true;
      CHECK(run_case_on(b, c) == 0);
    }
}

TEST_CASE("cuda conv through cuDNN with tf32: larger windows within tf32's tolerance") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackend b(0, true, with_cudnn(true));
  uint64_t seed = 7800;
  for (OpKind op : kConvOps)
    for (const Window& win : larger_windows()) {
      const std::string label = std::string(op_name(op)) + " " + win.what;
      CAPTURE(label);
      const double len = static_cast<double>(conv_sum_length(op, window_geometry(win)));
      const OpCase c = window_case(op, win, DType::F32, Tol{2e-3 * std::sqrt(len), 1e-2}, seed++);
      CHECK(takes_cudnn(b, c));
      CHECK(run_case_on(b, c) == 0);
    }
}

TEST_CASE("cuda conv direct kernels (conv_cudnn=0) == cpu to 1e-6: every conv sample and larger windows") {
  TG_REQUIRE_GPU();
  CudaBackend& b = backend(with_cudnn(false));
  uint64_t seed = 7900;
  for (OpKind op : kConvOps) {
    const std::string label = op_name(op);
    CAPTURE(label);
    std::vector<OpCase> cases;
    for (const OpSample& s : conv_samples(op)) {
      OpCase c = sample_case(op, s, seed++, DType::F32);
      c.tol = tol_of(kConvDirectTol);
      cases.push_back(c);
    }
    for (const Window& win : larger_windows()) cases.push_back(window_case(op, win, DType::F32, tol_of(kConvDirectTol), seed++));
    for (OpCase& c : cases) {
      CHECK_FALSE(takes_cudnn(b, c));
      for (bool unaligned : {false, true}) {
        c.unaligned = unaligned;
        CHECK(run_case_on(b, c) == 0);
      }
    }
  }
}

// conv_benchmark: every algorithm timed once per shape (cudnnFind*AlgorithmEx), the fastest
// that fits the rule kept. Whatever it picks, the result is within the same tolerance of the
// CPU: the rule still admits only the algorithms that sum the products as given. With
// conv_deterministic off the choice may use atomics; the tolerance is the same (the order of
// an f32 sum is already free).
TEST_CASE("cuda conv through cuDNN, benchmarked (conv_benchmark=1) == cpu, and every choice is recorded") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  for (bool deterministic : {true, false}) {
    CAPTURE(deterministic);
    CudaBackendOptions o = with_cudnn(true);
    o.conv_benchmark = true;
    o.conv_deterministic = deterministic;
    CudaBackend& b = backend(o);
    check_every_window(b, 9000, [&](OpCase& c, const Window& win) {
      if (deterministic || c.dtype == DType::F32) return;
      // The atomic algorithms add their partial sums into the 16-bit output itself (seen on
      // the H100: bf16 weight gradients 1-2 ulp off, and small ones further): each add rounds
      // to half an ulp of a running sum, within sqrt(length) for inputs in [-1, 1].
      const double half_ulp = c.dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
      c.tol.atol += half_ulp * std::sqrt(static_cast<double>(conv_sum_length(c.op, window_geometry(win))));
      c.tol.rtol += 2 * half_ulp;
    });
    const std::vector<kernels::cuda::ConvDnnChoice> chosen = b.conv_choices();
    REQUIRE(!chosen.empty());
    for (const kernels::cuda::ConvDnnChoice& ch : chosen) {
      CAPTURE(ch.algo);
      CHECK(ch.benchmarked);  // nothing here was captured, and the scratch fits
      CHECK(ch.algo != "direct");
      CHECK(ch.algo_ms > 0);
      CHECK(ch.choose_ms >= ch.algo_ms);  // the search times every candidate, the chosen one among them
      if (deterministic) CHECK(ch.deterministic);
    }
  }
  // The default backend asks the heuristic: recorded as not timed, deterministic.
  CudaBackend& h = backend(with_cudnn(true));
  const OpCase c = window_case(OpKind::conv2d, larger_windows()[0], DType::F32,
                               tol_of(conv_cudnn_tol(OpKind::conv2d, window_geometry(larger_windows()[0]))), 9999);
  CHECK(run_case_on(h, c) == 0);
  REQUIRE(!h.conv_choices().empty());
  for (const kernels::cuda::ConvDnnChoice& ch : h.conv_choices()) {
    CHECK_FALSE(ch.benchmarked);
    CHECK(ch.algo_ms == 0);
    if (ch.algo != "direct") CHECK(ch.deterministic);
  }
}

// conv_workspace_mb bounds every choice in both executors. 0 leaves only the algorithms that
// need none; 1024 lets the timed search reach those that need more than the backend's 32 MiB,
// which a call without a workspace of its own (as the dynamic executor makes them, and as
// run_case_on does) then runs in cuDNN's own buffer. Whatever the limit, the result is within
// the sums' tolerance, and each choice says why faster offers were passed over.
TEST_CASE("cuda conv through cuDNN: the workspace limit bounds each choice, and a large one runs == cpu") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  // The ResNets' 56 x 56 stage at batch 32: im2col alone (the GEMM algorithm) needs 231 MB.
  const Window big{"3x3, 64 to 64 channels, 56 x 56, batch 32, pads 1", {32, 64, 56, 56}, {64, 64, 3, 3},
                   conv_attr({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)};
  int past_backend_workspace = 0;
  for (int64_t limit_mb : {int64_t{0}, int64_t{1024}}) {
    CAPTURE(limit_mb);
    CudaBackendOptions o = with_cudnn(true);
    o.conv_benchmark = true;
    o.conv_workspace_mb = limit_mb;
    CudaBackend& b = backend(o);
    uint64_t seed = 9500;
    std::vector<Window> windows = larger_windows();
    windows.push_back(big);
    for (OpKind op : kConvOps)
      for (DType dt : {DType::F32, DType::BF16}) {
        const std::string label = std::string(op_name(op)) + " " + dtype_name(dt);
        CAPTURE(label);
        for (const Window& win : windows) {
          CAPTURE(win.what);
          const OpCase c = window_case(op, win, dt, tol_of(conv_cudnn_tol(op, window_geometry(win))), seed++);
          const int64_t bad = run_case_on(b, c);
          CHECK(bad == 0);
          if (bad > 0)  // which engine or algorithm gave it: the choices of this op and dtype
            for (const kernels::cuda::ConvDnnChoice& ch : b.conv_choices())
              if (ch.key.op == op && ch.key.dtype == dt)
                MESSAGE(kernels::cuda::conv_dnn_key_geometry(ch.key) << ": " << ch.algo << ", workspace "
                                                                     << ch.workspace << ", " << ch.algo_ms << " ms");
        }
      }
    const std::vector<kernels::cuda::ConvDnnChoice> chosen = b.conv_choices();
    REQUIRE(!chosen.empty());
    for (const kernels::cuda::ConvDnnChoice& ch : chosen) {
      CAPTURE(ch.algo);
      CHECK(ch.workspace <= static_cast<size_t>(limit_mb) << 20);
      CHECK(ch.offers > 0);
      CHECK(ch.passed_nondeterministic + ch.passed_transform + ch.passed_workspace <= ch.offers);
      if (ch.passed_workspace > 0) CHECK(ch.passed_workspace_least > static_cast<size_t>(limit_mb) << 20);
      if (ch.workspace > CudaBackend::kCublasWorkspaceBytes) ++past_backend_workspace;
    }
  }
  // Which algorithm is fastest is the device's to say: report how often the own buffer ran.
  MESSAGE("choices needing more than the backend's workspace (run in cuDNN's own buffer): " << past_backend_workspace);
}

// conv_transforms admits FFT and Winograd, which round the transformed operands: f32 only, and
// within 64 times the sums' tolerance (their error grows with the transform's length, not the
// sum's alone).
TEST_CASE("cuda conv through cuDNN with FFT and Winograd admitted (conv_transforms=1): f32 near cpu") {
  TG_REQUIRE_GPU();
  if (skip_without_cudnn()) return;
  CudaBackendOptions o = with_cudnn(true);
  o.conv_benchmark = true;
  o.conv_deterministic = false;
  o.conv_transforms = true;
  CudaBackend& b = backend(o);
  uint64_t seed = 9700;
  for (OpKind op : kConvOps) {
    CAPTURE(op_name(op));
    for (const Window& win : larger_windows()) {
      CAPTURE(win.what);
      ConvTol t = conv_cudnn_tol(op, window_geometry(win));
      t.atol *= 64;
      t.rtol *= 64;
      CHECK(run_case_on(b, window_case(op, win, DType::F32, tol_of(t), seed++)) == 0);
    }
  }
  for (const kernels::cuda::ConvDnnChoice& ch : b.conv_choices()) CHECK(ch.passed_transform == 0);
}

// cuDNN's graph API (conv_frontend=1): the graph of every key validates for the Hopper and
// Ampere targets (no device needed), and on the device each call is within the legacy path's
// tolerance of the CPU, its choice recorded as the graph API's engine (or why it declined).
TEST_CASE("cuda conv through cuDNN's graph API: every window's graph validates for sm_80 and sm_90, NCHW and NHWC") {
  if (!kBuiltWithCudnn || !kBuiltWithCudnnFrontend) {
    std::printf("TG_SKIP: this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)\n");
    return;
  }
  int64_t checked = 0;
  for (OpKind op : kConvOps)
    for (DType dt : kDtypes)
      for (const Window& win : larger_windows())
        for (bool nhwc : {false, true})
          for (int sm : {80, 90}) {
            kernels::cuda::ConvDnnKey k;
            k.op = op;
            k.dtype = dt;
            k.g = window_geometry(win);
            k.g.nhwc = nhwc;
            INFO(op_name(op), " ", dtype_name(dt), " ", win.what, nhwc ? " NHWC" : " NCHW", " sm_", sm);
            CHECK(kernels::cuda::conv_fe_check_graph(k, sm) == "");
            ++checked;
          }
  CHECK(checked == 3 * 3 * static_cast<int64_t>(larger_windows().size()) * 2 * 2);
}

TEST_CASE("cuda conv through cuDNN's graph API (conv_frontend=1) == cpu, heuristic and benchmarked, choices recorded") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnn || !kBuiltWithCudnnFrontend) {
    CudaBackendOptions o = with_cudnn(kBuiltWithCudnn);
    o.conv_frontend = true;
    CHECK_THROWS_AS(CudaBackend(0, false, o), std::invalid_argument);
    return;
  }
  for (bool benchmark : {false, true}) {
    CAPTURE(benchmark);
    CudaBackendOptions o = with_cudnn(true);
    o.conv_frontend = true;
    o.conv_benchmark = benchmark;
    CudaBackend& b = backend(o);
    check_every_window(b, 9500);
    int64_t by_graph = 0;
    for (const kernels::cuda::ConvDnnChoice& ch : b.conv_choices()) {
      CAPTURE(ch.algo);
      CAPTURE(ch.frontend_why);
      if (ch.algo.rfind("fe:", 0) == 0) {
        ++by_graph;
        CHECK(ch.frontend_why.empty());
        CHECK(ch.offers > 0);
        CHECK(ch.deterministic);
        CHECK(ch.benchmarked == benchmark);
      } else {
        CHECK_FALSE(ch.frontend_why.empty());  // the legacy path ran it, and the choice says why
      }
    }
    // Plain NCHW convolutions in f32, bf16 and f16 are what the graph API is for: most keys.
    CHECK(by_graph * 2 > static_cast<int64_t>(b.conv_choices().size()));
  }
}

TEST_CASE("cuda backend: conv_cudnn is in its options' values, and refused on without cuDNN") {
  TG_REQUIRE_GPU();
  for (bool on : {false, true}) {
    if (on && !kBuiltWithCudnn) {
      CHECK_THROWS_AS(CudaBackend(0, false, with_cudnn(true)), std::invalid_argument);
      continue;
    }
    int64_t seen = -1;
    for (const OptionValue& v : backend(with_cudnn(on)).options().values())
      if (v.key == "conv_cudnn") seen = v.value;
    CHECK(seen == (on ? 1 : 0));
  }
  CHECK(backend().options().conv_cudnn == kBuiltWithCudnn);  // the default
}

}  // namespace tg::testing
