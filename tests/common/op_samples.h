#pragma once
// Small valid calls of every op, for the tests that loop over the op table rather
// than list ops by hand: the CPU kernel coverage (tests/kernels/cpu_dispatch_test.cpp),
// CUDA vs the CPU reference (tests/kernels/cuda_all_ops_test.cpp), the finite-difference
// gradient check of every differentiable op (tests/autodiff/op_table_grad_test.cpp)
// and the op-table checks (tests/graph/op_table_test.cpp).
//
// op_samples() is a switch over OpKind with no default: a new op does not compile
// until it has samples here, and then every one of those suites runs it.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/conv.h"
#include "graph/dtype_rules.h"
#include "graph/init.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg::testing {

struct OpSample {
  std::string what;  // which case of the op this is
  std::vector<Shape> in;
  Attrs attrs;
  // Inputs whose data is not free: class indices in [0, classes), a count of real
  // elements (padded_mse_loss) with this value.
  int labels_input = -1;
  int64_t classes = 0;
  // The labels input's dtype: i32 or i64 (embedding's ids, cross_entropy's labels), or f32
  // class indices (held as whole numbers in f32, the form cross_entropy took first).
  DType labels_dtype = DType::F32;
  // Loss scaling's found-inf flags (a guarded update's last input, found_inf's and
  // update_scale's) are this input too, so that a sample fixes whether the flag is set.
  int count_input = -1;
  float count = 0;
  // relu's kink at 0: finite differences need the inputs away from it.
  bool away_from_zero = false;
  // Inputs (a mask of positions) drawn in [0.25, 1): log's domain, and log_grad's divisor.
  unsigned positive_inputs = 0;
  // max_pool2d's maximum: finite differences need distinct values, far apart.
  bool distinct = false;
  // The *_multi_cast updates (graph/op.h kWeightCopy): each group's last input is the
  // parameter's low-precision copy, of this dtype; copy_group is the group size, 0 for
  // every other op.
  int copy_group = 0;
  DType copy_dtype = DType::BF16;
  // The batchnorm family (graph/op.h kTypeChannels): the per-channel inputs (gamma, beta,
  // running statistics) in f32 whatever the per-element inputs' dtype, as autocast gives them.
  bool channels_f32 = false;
  // The running statistics alone in f32, beside 16-bit gamma and beta (a bf16 graph's batch norm).
  bool stats_f32 = false;
  // CUDA vs the CPU reference: atol + rtol*|ref|; both 0 is bitwise.
  double cuda_atol = 0, cuda_rtol = 0;
  // The same in bf16 and f16, where the kernel's 16-bit form needs its own; negative: derived
  // from the f32 tolerance (low_precision_tol, tests/kernels/cuda_op_harness.h).
  double cuda_atol16 = -1, cuda_rtol16 = -1;
};

// How many products one output element of a convolution sums: the window over the group's
// channels (conv2d), the taps of the group's output channels that may read an input
// (conv2d_grad_input, an upper bound), the batch and the output plane (conv2d_grad_weight).
inline int64_t conv_sum_length(OpKind op, const ConvGeometry& g) {
  if (op == OpKind::conv2d || conv_has_epilogue(op)) return g.c / g.groups * g.r * g.s;
  if (op == OpKind::conv2d_grad_input || op == OpKind::conv_transpose2d) return g.k / g.groups * g.r * g.s;
  return g.n * g.p * g.q;
}

// The CUDA convolutions' f32 tolerance against the CPU when they run through cuDNN (the
// default in a build with cuDNN, kernels/cuda/conv_cudnn.h): cuDNN sums the products in f32
// in an order of its own, the CPU in double, rounded once; the difference grows with the
// square root of the sum's length, as the GEMMs' does (tests/kernels/cuda_matmul_test.cpp).
struct ConvTol {
  double atol, rtol;
};
inline ConvTol conv_cudnn_tol(OpKind op, const ConvGeometry& g) {
  return {1e-5 * std::sqrt(static_cast<double>(conv_sum_length(op, g))), 1e-4};
}
// The direct kernels' (conv_cudnn=0, and the pools): the CPU's element functions, the same
// double sums in the same order; only the contraction of a double multiply-add may differ.
inline constexpr ConvTol kConvDirectTol{1e-6, 1e-6};

// The conv family: each case once as the forward op (x, and the weight of conv2d) and once as
// each backward op, with dy of the forward output's shape. Their CUDA tolerance is cuDNN's
// for the convolutions (those of the direct kernels are tighter: kConvDirectTol).
inline std::vector<OpSample> conv_samples(OpKind op) {
  struct Case {
    std::string what;
    Shape x, w;
    ConvAttr a;
  };
  auto window = [](std::array<int, 2> kernel, std::array<int, 2> stride, std::array<int, 4> pads,
                   std::array<int, 2> dilation, int groups, bool ceil_mode) {
    ConvAttr a;
    a.kernel = kernel;
    a.stride = stride;
    a.pads = pads;
    a.dilation = dilation;
    a.groups = groups;
    a.ceil_mode = ceil_mode;
    return a;
  };
  auto conv = [&](std::array<int, 2> stride, std::array<int, 4> pads, std::array<int, 2> dilation, int groups) {
    return window({0, 0}, stride, pads, dilation, groups, false);
  };
  auto pool = [&](std::array<int, 2> kernel, std::array<int, 2> stride, std::array<int, 4> pads, bool ceil_mode) {
    return window(kernel, stride, pads, {1, 1}, 1, ceil_mode);
  };
  const bool is_conv = conv_window_from_weight(op);
  std::vector<Case> cases;
  if (is_conv)
    cases = {{"3x3, pads 1", {2, 3, 5, 5}, {4, 3, 3, 3}, conv({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
             {"3x2, stride 2, pads top 1 right 1", {1, 2, 6, 7}, {3, 2, 3, 2}, conv({2, 2}, {1, 0, 0, 1}, {1, 1}, 1)},
             {"dilation 2", {1, 2, 7, 7}, {2, 2, 3, 3}, conv({1, 1}, {0, 0, 0, 0}, {2, 2}, 1)},
             {"groups 2", {1, 4, 5, 5}, {6, 2, 3, 3}, conv({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)},
             {"depthwise, stride 2, pads 1", {2, 3, 4, 4}, {3, 1, 3, 3}, conv({2, 2}, {1, 1, 1, 1}, {1, 1}, 3)}};
  else
    cases = {{"2x2, stride 2", {2, 3, 4, 4}, {}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false)},
             {"3x3, stride 2, pads 1", {1, 2, 5, 5}, {}, pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false)},
             {"3x2, stride 1x2, pads bottom 1", {1, 2, 5, 6}, {}, pool({3, 2}, {1, 2}, {0, 0, 1, 0}, false)},
             {"ceil mode, a partial last window", {1, 2, 5, 6}, {}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true)},
             {"ceil mode, a window in the padding dropped", {1, 1, 5, 5}, {}, pool({2, 2}, {2, 2}, {1, 1, 1, 1}, true)}};
  // The first two cases and the fourth (groups; a ceil-mode pool) again on NHWC activations.
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}}) {
    Case c = cases[i];
    c.what += ", NHWC";
    c.x = Shape{c.x[0], c.x[2], c.x[3], c.x[1]};
    c.a.channels_last = true;
    cases.push_back(c);
  }
  std::vector<OpSample> out;
  for (const Case& c : cases) {
    const OpKind fwd = is_conv ? OpKind::conv2d : op == OpKind::max_pool2d_grad ? OpKind::max_pool2d
                                                : op == OpKind::avg_pool2d_grad ? OpKind::avg_pool2d
                                                                                : op;
    const Shape fwd_in[3] = {c.x, c.w, {}};
    ConvGeometry g;
    Shape y;
    std::string why;
    if (!conv_op_geometry(fwd, fwd_in, c.a, g, y, &why)) throw std::logic_error("conv sample " + c.what + ": " + why);
    OpSample s;
    s.what = c.what;
    s.attrs.conv = c.a;
    switch (op) {
      case OpKind::conv2d: s.in = {c.x, c.w}; break;
      // The fused convolutions: every other case with ReLU.
      case OpKind::conv2d_bias_act: s.in = {c.x, c.w, {g.k}}; break;
      case OpKind::conv2d_bias_add_act: s.in = {c.x, c.w, {g.k}, y}; break;
      case OpKind::conv2d_grad_input: s.in = {y, c.w, c.x}; break;
      case OpKind::conv2d_grad_weight: s.in = {y, c.x, c.w}; break;
      case OpKind::max_pool2d_grad:
      case OpKind::avg_pool2d_grad: s.in = {y, c.x}; break;
      default: s.in = {c.x}; break;
    }
    if (conv_has_epilogue(op) && out.size() % 2 == 1) {
      s.what += ", relu";
      s.attrs.act = Act::relu;
    }
    const ConvTol tol = is_conv ? conv_cudnn_tol(op, g) : kConvDirectTol;
    s.cuda_atol = tol.atol;
    s.cuda_rtol = tol.rtol;
    if (conv_has_epilogue(op)) {
      // In bf16 cuDNN's convolution is stored, rounded, before the epilogue kernel adds the
      // bias (conv_cudnn.h): half an ulp (2^-8 in bf16, the wider) of |conv| <= the sum's
      // length, its inputs being in [-1, 1], which the bias and residual may cancel down to 0.
      s.cuda_atol16 = tol.atol + 0x1p-8 * static_cast<double>(conv_sum_length(op, g));
      s.cuda_rtol16 = tol.rtol + 0x1p-7;
    }
    s.distinct = op == OpKind::max_pool2d;
    out.push_back(s);
  }
  return out;
}

// conv_transpose2d: x [N, C, H, W] and w [C, K/groups, R, S], output_padding with strides.
// Its geometry is the conv2d's whose input gradient it computes (graph/conv.h), and so is
// its CUDA tolerance.
inline std::vector<OpSample> conv_transpose_samples() {
  struct Case {
    std::string what;
    Shape x, w;
    std::array<int, 2> stride;
    std::array<int, 4> pads;
    std::array<int, 2> dilation;
    int groups;
    std::array<int, 2> output_padding;
  };
  const Case cases[] = {
      {"3x3, pads 1", {2, 4, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}},
      {"stride 2, pads 1, output_padding 1", {1, 2, 3, 4}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1}},
      {"3x2, stride 2x3, pads top 1 right 1, output_padding 0x2", {1, 3, 4, 3}, {3, 2, 3, 2}, {2, 3}, {1, 0, 0, 1},
       {1, 1}, 1, {0, 2}},
      {"dilation 2, groups 2", {1, 4, 4, 4}, {4, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {2, 2}, 2, {0, 0}},
      {"depthwise, stride 2, pads 1, output_padding 1", {2, 3, 3, 3}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 3,
       {1, 1}}};
  std::vector<OpSample> out;
  // Every case, and the second once more on NHWC activations.
  std::vector<Case> all(std::begin(cases), std::end(cases));
  all.push_back(cases[1]);
  for (const Case& c : all) {
    const bool nhwc = out.size() == std::size(cases);
    OpSample s;
    s.what = c.what + (nhwc ? ", NHWC" : "");
    s.in = {nhwc ? Shape{c.x[0], c.x[2], c.x[3], c.x[1]} : c.x, c.w};
    ConvAttr& a = s.attrs.conv;
    a.channels_last = nhwc;
    a.stride = c.stride;
    a.pads = c.pads;
    a.dilation = c.dilation;
    a.groups = c.groups;
    a.output_padding = c.output_padding;
    ConvGeometry g;
    Shape y;
    std::string why;
    if (!conv_op_geometry(OpKind::conv_transpose2d, s.in.data(), a, g, y, &why))
      throw std::logic_error("conv_transpose2d sample " + c.what + ": " + why);
    const ConvTol tol = conv_cudnn_tol(OpKind::conv_transpose2d, g);
    s.cuda_atol = tol.atol;
    s.cuda_rtol = tol.rtol;
    out.push_back(s);
  }
  return out;
}

inline std::vector<OpSample> op_samples(OpKind op) {
  auto sample = [](std::string what, std::vector<Shape> in) {
    OpSample s;
    s.what = std::move(what);
    s.in = std::move(in);
    return s;
  };
  auto tol = [](OpSample s, double atol, double rtol) {
    s.cuda_atol = atol;
    s.cuda_rtol = rtol;
    return s;
  };
  auto with = [](OpSample s, auto set) {
    set(s.attrs);
    return s;
  };
  // The last input is a found-inf flag holding `value`.
  auto flag = [](OpSample s, float value) {
    s.count_input = static_cast<int>(s.in.size()) - 1;
    s.count = value;
    return s;
  };
  const Shape m{3, 4};
  // The ranks past 4 (graph/shape.h: kMaxRank), small enough for the finite differences.
  const Shape r5{2, 1, 3, 2, 2}, r6{2, 1, 3, 1, 2, 3};
  switch (op) {
    case OpKind::matmul: {
      const double a = 1e-5, r = 1e-4;  // cuBLAS sums in another order
      return {tol(sample("[3,5] x [5,4]", {{3, 5}, {5, 4}}), a, r),
              tol(with(sample("A^T", {{5, 3}, {5, 4}}), [](Attrs& t) { t.trans_a = true; }), a, r),
              tol(with(sample("B^T", {{3, 5}, {4, 5}}), [](Attrs& t) { t.trans_b = true; }), a, r),
              tol(sample("batched", {{2, 3, 5}, {2, 5, 4}}), a, r),
              tol(sample("batched A, shared B", {{2, 3, 5}, {5, 4}}), a, r)};
    }
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::relu_grad: return {sample("[3,4]", {m, m}), sample("rank 5", {r5, r5}), sample("rank 6", {r6, r6})};
    case OpKind::scale:
      return {with(sample("alpha -1.5", {m}), [](Attrs& t) { t.alpha = -1.5f; }),
              with(sample("rank 6, alpha 0.5", {r6}), [](Attrs& t) { t.alpha = 0.5f; })};
    case OpKind::bias_add:
      return {sample("rank 1", {{4}, {4}}), sample("rank 2", {m, {4}}), sample("rank 3", {{2, 3, 4}, {4}}),
              sample("rank 5", {r5, {2}}), sample("rank 6", {r6, {3}})};
    case OpKind::relu: {
      OpSample s = sample("[4,5]", {{4, 5}}), s6 = sample("rank 6", {r6});
      s.away_from_zero = s6.away_from_zero = true;
      return {s, s6};
    }
    case OpKind::gelu: return {tol(sample("[4,5]", {{4, 5}}), 2e-6, 2e-5), tol(sample("rank 5", {r5}), 2e-6, 2e-5)};
    case OpKind::gelu_grad: return {tol(sample("[3,4]", {m, m}), 2e-6, 2e-5)};
    // The float math of the CUDA kernels (tanhf, expf, logf, erff, a rounding per step)
    // against the CPU's double, rounded once: a few ulp.
    case OpKind::tanh:
    case OpKind::sigmoid:
    case OpKind::exp:
    case OpKind::gelu_erf: return {tol(sample("[4,5]", {{4, 5}}), 2e-6, 2e-5), tol(sample("rank 6", {r6}), 2e-6, 2e-5)};
    case OpKind::tanh_grad:
    case OpKind::sigmoid_grad:
    case OpKind::gelu_erf_grad: return {tol(sample("[3,4]", {m, m}), 2e-6, 2e-5)};
    case OpKind::log:
    case OpKind::log_grad: {
      OpSample s = tol(sample("[3,4], x in [0.25, 1)", op == OpKind::log ? std::vector<Shape>{m} : std::vector<Shape>{m, m}),
                       2e-6, 2e-5);
      s.positive_inputs = op == OpKind::log ? 1u : 2u;  // log's x; log_grad's (dy, x)
      return {s};
    }
    case OpKind::softmax:
      return {tol(sample("[3,5]", {{3, 5}}), 2e-6, 2e-5), tol(sample("rank 6", {r6}), 2e-6, 2e-5),
              tol(with(sample("alpha 0.125", {{3, 5}}), [](Attrs& t) { t.alpha = 0.125f; }), 2e-6, 2e-5)};
    case OpKind::softmax_grad:
      return {tol(sample("[3,5]", {{3, 5}, {3, 5}}), 1e-5, 1e-4),
              tol(with(sample("alpha 0.125", {{3, 5}, {3, 5}}), [](Attrs& t) { t.alpha = 0.125f; }), 1e-5, 1e-4)};
    case OpKind::layernorm:
      return {tol(sample("[3,6]", {{3, 6}, {6}, {6}}), 1e-5, 1e-4), tol(sample("rank 6", {r6, {3}, {3}}), 1e-5, 1e-4)};
    case OpKind::layernorm_grad_x: return {tol(sample("[3,6]", {{3, 6}, {3, 6}, {6}}), 5e-4, 2e-3)};
    case OpKind::layernorm_grad_gamma: return {tol(sample("[3,6]", {{3, 6}, {3, 6}}), 1e-4, 1e-4)};
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
      return {tol(with(sample("axis 0 of [3,4]", {m}), [](Attrs& t) { t.axis = 0; }), 1e-5, 1e-5),
              tol(with(sample("axis 1 of [2,3,4]", {{2, 3, 4}}), [](Attrs& t) { t.axis = 1; }), 1e-5, 1e-5),
              tol(with(sample("[5] to [1]", {{5}}), [](Attrs& t) { t.axis = 0; }), 1e-5, 1e-5),
              tol(with(sample("axis 2 of rank 5", {r5}), [](Attrs& t) { t.axis = 2; }), 1e-5, 1e-5),
              tol(with(sample("axis 0 of rank 6", {r6}), [](Attrs& t) { t.axis = 0; }), 1e-5, 1e-5),
              tol(with(sample("the last axis of rank 6", {r6}), [](Attrs& t) { t.axis = -1; }), 1e-5, 1e-5)};
    case OpKind::broadcast: {
      auto insert = [](int axis, int64_t size) {
        return [=](Attrs& t) {
          t.axis = axis;
          t.size = size;
        };
      };
      return {with(sample("axis 1, size 2", {m}), insert(1, 2)), with(sample("rank 5 to 6, axis 3", {r5}), insert(3, 2)),
              with(sample("rank 5 to 6, the last axis", {r5}), insert(-1, 3))};
    }
    case OpKind::transpose:
      return {with(sample("[3,4] perm 1,0", {m}), [](Attrs& t) { t.perm = perm_of({1, 0}); }),
              with(sample("[2,3,4] perm 2,0,1", {{2, 3, 4}}), [](Attrs& t) { t.perm = perm_of({2, 0, 1}); }),
              with(sample("rank 5 perm 4,2,0,3,1", {r5}), [](Attrs& t) { t.perm = perm_of({4, 2, 0, 3, 1}); }),
              with(sample("rank 6 perm 5,3,1,0,4,2", {r6}), [](Attrs& t) { t.perm = perm_of({5, 3, 1, 0, 4, 2}); }),
              with(sample("rank 6, the last dim stays", {r6}), [](Attrs& t) { t.perm = perm_of({2, 0, 4, 1, 3, 5}); })};
    case OpKind::reshape:
      return {with(sample("[3,4] to [2,-1]", {m}), [](Attrs& t) { t.shape = Shape{2, -1}; }),
              with(sample("rank 6 to rank 5", {r6}), [](Attrs& t) { t.shape = Shape{3, 2, 1, -1, 2}; })};
    case OpKind::mse_loss: return {tol(sample("[3,4]", {m, m}), 1e-7, 1e-6)};
    case OpKind::mse_loss_grad: return {sample("[3,4]", {m, m, {1}})};
    case OpKind::padded_mse_loss:
    case OpKind::padded_mse_loss_grad: {
      OpSample s = sample("7 of 12 real", op == OpKind::padded_mse_loss ? std::vector<Shape>{m, m, {1}}
                                                                        : std::vector<Shape>{m, m, {1}, {1}});
      s.count_input = 2;
      s.count = 7;
      if (op == OpKind::padded_mse_loss) s = tol(s, 1e-7, 1e-6);
      return {s};
    }
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad: {
      auto labels = [op, &sample, &tol](std::string what, Shape logits, DType dt, int64_t ignore) {
        OpSample s = sample(std::move(what), op == OpKind::cross_entropy ? std::vector<Shape>{logits, {logits[0]}}
                                                                         : std::vector<Shape>{logits, {logits[0]}, {1}});
        s.labels_input = 1;
        s.classes = logits[1];
        s.labels_dtype = dt;
        s.attrs.ignore_index = ignore;
        return tol(s, 1e-5, 1e-5);
      };
      // With ignore_index a class the labels are drawn from, some rows are ignored.
      // size: the classes are the first columns, the rest padding (a vocabulary padded to
      // aligned rows); a row past the forward's register cache takes its other frame.
      auto padded = [&labels](std::string what, Shape logits, int64_t classes, int64_t ignore) {
        OpSample s = labels(std::move(what), logits, DType::I32, ignore);
        s.attrs.size = classes;
        s.classes = classes;
        return s;
      };
      return {labels("[4,5], 4 labels", {4, 5}, DType::F32, -100),
              labels("[4,5], i64 labels", {4, 5}, DType::I64, -100),
              labels("[8,3], i32 labels, ignore_index 1", {8, 3}, DType::I32, 1),
              labels("[8,3], f32 labels, ignore_index 2", {8, 3}, DType::F32, 2),
              padded("[4,8], size 5: 3 padding columns", {4, 8}, 5, -100),
              padded("[3,600], size 597, ignore_index 4", {3, 600}, 597, 4)};
    }
    case OpKind::fill:
      return {with(sample("[3,4] of 2.5", {}), [](Attrs& t) {
        t.shape = Shape{3, 4};
        t.value = 2.5f;
      })};
    case OpKind::copy: return {sample("[3,4]", {m}), sample("rank 6", {r6})};
    case OpKind::cast: return {sample("[3,4] to f32", {m}), sample("rank 6 to f32", {r6})};
    case OpKind::where: {
      // The condition drawn in {0, 1} (as labels of 2 classes), in each dtype it takes.
      auto cond = [&sample](std::string what, std::vector<Shape> in, DType dt) {
        OpSample s = sample(std::move(what), std::move(in));
        s.labels_input = 0;
        s.classes = 2;
        s.labels_dtype = dt;
        return s;
      };
      return {cond("[3,4], i32 cond", {m, m, m}, DType::I32),
              cond("[2,3,4], i64 cond [3,4], b [4]", {{3, 4}, {2, 3, 4}, {4}}, DType::I64),
              cond("[2,1,4] cond, a [3,1], b [1], f32 cond", {{2, 1, 4}, {3, 1}, {1}}, DType::F32)};
    }
    case OpKind::batch_norm:
    case OpKind::batch_norm_moments:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_grad_beta:
    case OpKind::batch_norm_grad:
    case OpKind::batch_norm_inference: {
      // x [N, C, ...] with C = 3; the CUDA blocks sum in another order than the CPU loop.
      // channel_dim: 1, or the last (NHWC).
      auto inputs = [op](Shape x, int channel_dim = 1) {
        const int64_t c = x[channel_dim];
        const Shape ch{c};
        switch (op) {
          case OpKind::batch_norm:
          case OpKind::batch_norm_moments: return std::vector<Shape>{x, ch, ch};
          case OpKind::batch_norm_grad_x:
          case OpKind::batch_norm_grad: return std::vector<Shape>{x, x, ch};
          case OpKind::batch_norm_grad_gamma: return std::vector<Shape>{x, x};
          case OpKind::batch_norm_grad_beta: return std::vector<Shape>{x};
          default: return std::vector<Shape>{x, ch, ch, {2, c}};
        }
      };
      auto nhwc = [](Attrs& t) { t.channels_last = true; };
      std::vector<OpSample> v = {tol(sample("NCHW [2,3,4,5]", inputs({2, 3, 4, 5})), 1e-5, 1e-5),
                                 tol(with(sample("NHWC [2,4,5,3]", inputs({2, 4, 5, 3}, 3)), nhwc), 1e-5, 1e-5),
                                 tol(with(sample("[4,3], channels_last", inputs({4, 3})), nhwc), 1e-5, 1e-5),
                                 // C a multiple of 4: the CUDA NHWC vector kernels
                                 tol(with(sample("NHWC [2,3,5,8]", inputs({2, 3, 5, 8}, 3)), nhwc), 1e-5, 1e-5),
                                 tol(sample("[4,3]", inputs({4, 3})), 1e-5, 1e-5),
                                 tol(with(sample("NCHW, eps 0.1", inputs({3, 3, 2, 2})),
                                          [op](Attrs& t) {
                                            if (op != OpKind::batch_norm_grad_beta) t.eps = 0.1f;  // it reads none
                                          }),
                                     1e-5, 1e-5)};
      // 16-bit activations beside f32 gamma, beta and statistics, as autocast runs batch norm.
      const bool has_channel_input = op != OpKind::batch_norm_grad_gamma && op != OpKind::batch_norm_grad_beta;
      for (OpSample s : {v[0], v[1], v[3]}) {
        if (!has_channel_input) break;
        s.what += ", per-channel inputs f32";
        s.channels_f32 = true;
        v.push_back(std::move(s));
      }
      // The rows pass's relu epilogue, in both layouts and beside f32 per-channel inputs.
      if (op == OpKind::batch_norm_moments)
        for (OpSample s : {v[0], v[3], v.back()}) {
          s.what += ", relu";
          s.attrs.act = Act::relu;
          v.push_back(std::move(s));
        }
      if (op == OpKind::batch_norm_inference) {
        OpSample s = v[0];
        s.what += ", running statistics f32";
        s.stats_f32 = true;
        v.push_back(std::move(s));
      }
      // The running variance must be >= 0: the sample's stats come from a fill of 0.5.
      if (op == OpKind::batch_norm_inference)
        for (OpSample& s : v) {
          s.count_input = 3;
          s.count = 0.5f;
        }
      return v;
    }
    case OpKind::batch_norm_stats_update: {
      auto momentum = [](float m) { return [m](Attrs& t) { t.momentum = m; }; };
      auto nhwc = [](Attrs& t) {
        t.momentum = 0.1f;
        t.channels_last = true;
      };
      // The running statistics are f32 master state beside x of any float dtype.
      std::vector<OpSample> v = {tol(with(sample("NCHW [2,3,4,5]", {{2, 3}, {2, 3, 4, 5}}), momentum(0.1f)), 1e-5, 1e-5),
                                 tol(with(sample("NHWC [2,4,5,3]", {{2, 3}, {2, 4, 5, 3}}), nhwc), 1e-5, 1e-5),
                                 tol(with(sample("[4,3], momentum 0.5", {{2, 3}, {4, 3}}), momentum(0.5f)), 1e-5, 1e-5),
                                 tol(with(sample("two elements a channel", {{2, 3}, {2, 3}}), momentum(1.0f)), 1e-5, 1e-5)};
      for (OpSample& s : v) s.channels_f32 = true;
      return v;
    }
    case OpKind::batch_norm_stats_blend: {
      auto momentum = [](float m) { return [m](Attrs& t) { t.momentum = m; }; };
      return {tol(with(sample("[2,3], momentum 0.1", {{2, 3}, {2, 3}}), momentum(0.1f)), 1e-7, 1e-6),
              tol(with(sample("[2,5], momentum 1", {{2, 5}, {2, 5}}), momentum(1.0f)), 1e-7, 1e-6)};
    }
    case OpKind::concat: {
      auto along = [](int axis) { return [axis](Attrs& t) { t.axis = axis; }; };
      return {with(sample("channels of NCHW, 3 + 1", {{2, 3, 2, 2}, {2, 1, 2, 2}}), along(1)),
              with(sample("axis 0, three inputs", {{1, 4}, {2, 4}, {3, 4}}), along(0)),
              with(sample("last axis, six inputs (past the fixed input slots)", {m, {3, 1}, {3, 2}, m, {3, 1}, {3, 3}}),
                   along(-1)),
              with(sample("one input", {m}), along(0)),
              with(sample("rank 6, axis 3", {r6, {2, 1, 3, 2, 2, 3}}), along(3)),
              with(sample("rank 5, the last axis", {r5, {2, 1, 3, 2, 1}}), along(-1))};
    }
    case OpKind::slice: {
      auto take = [](int axis, int64_t start, int64_t size) {
        return [=](Attrs& t) {
          t.axis = axis;
          t.start = start;
          t.size = size;
        };
      };
      return {with(sample("channels 1..2 of NCHW", {{2, 4, 2, 3}}), take(1, 1, 2)),
              with(sample("the first row", {m}), take(0, 0, 1)),
              with(sample("the last 2 of the last axis", {m}), take(-1, 2, 2)),
              with(sample("rank 6, axis 2", {r6}), take(2, 1, 2)), with(sample("rank 5, axis 4", {r5}), take(4, 1, 1))};
    }
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight:
    case OpKind::max_pool2d:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d:
    case OpKind::avg_pool2d_grad:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act: return conv_samples(op);
    case OpKind::conv_transpose2d: return conv_transpose_samples();
    case OpKind::batch_norm_fold: {
      // A conv weight [K, C, R, S] and its K channels' statistics; the running variance must
      // be > 0: the stats are drawn positive. Both sides compute in double, rounded once.
      auto fold = [&](std::string what, Shape w) {
        const Shape k{w[0]};
        OpSample x = tol(sample(std::move(what), {w, k, k, {2, w[0]}}), 1e-7, 1e-6);
        x.positive_inputs = 1u << 3;
        return x;
      };
      OpSample f32_params = fold("[4,3,3,3], per-channel inputs f32", {4, 3, 3, 3});
      f32_params.channels_f32 = true;
      OpSample f32_stats = fold("[4,3,3,3], running statistics f32", {4, 3, 3, 3});
      f32_stats.stats_f32 = true;
      return {fold("[4,3,3,3]", {4, 3, 3, 3}), fold("1x1, [6,2,1,1]", {6, 2, 1, 1}),
              with(fold("eps 0.1", {3, 1, 3, 3}), [](Attrs& t) { t.eps = 0.1f; }), f32_params, f32_stats};
    }
    case OpKind::sgd:
      return {with(sample("[3,4]", {m, m}), [](Attrs& t) { t.lr = 0.05f; }),
              with(flag(sample("[3,4], found-inf flag clear", {m, m, {1}}), 0.0f), [](Attrs& t) { t.lr = 0.05f; }),
              with(flag(sample("[3,4], found-inf flag set: skipped", {m, m, {1}}), 1.0f), [](Attrs& t) { t.lr = 0.05f; })};
    case OpKind::sgd_momentum: {
      auto rates = [](Attrs& t) {
        t.lr = 0.05f;
        t.momentum = 0.9f;
      };
      return {with(sample("[3,4]", {m, m, m}), rates),
              with(flag(sample("[3,4], found-inf flag clear", {m, m, m, {1}}), 0.0f), rates),
              with(flag(sample("[3,4], found-inf flag set: skipped", {m, m, m, {1}}), 1.0f), rates)};
    }
    case OpKind::unscale:
      return {sample("[3,4] by a scale", {m, {1}}), sample("rank 3", {{2, 3, 4}, {1}})};
    case OpKind::found_inf:
      return {flag(sample("finite [3,4], flag clear", {m, {1}}), 0.0f),
              flag(sample("finite [3,4], flag set before", {m, {1}}), 1.0f)};
    case OpKind::update_scale: {
      auto factors = [](int64_t interval) {
        return [interval](Attrs& t) {
          t.growth_factor = 2.0f;
          t.backoff_factor = 0.5f;
          t.growth_interval = interval;
        };
      };
      return {with(flag(sample("a clean step", {{3}, {1}}), 0.0f), factors(2000)),
              with(flag(sample("a clean step that grows the scale", {{3}, {1}}), 0.0f), factors(1)),
              with(flag(sample("a step with an inf: backs off", {{3}, {1}}), 1.0f), factors(2000))};
    }
    case OpKind::linear: {
      const double a = 1e-5, r = 1e-4;  // cuBLASLt sums in another order; its GELU is its own
      auto act = [](Act x) { return [x](Attrs& t) { t.act = x; }; };
      // In 16-bit, cuBLASLt's GELU epilogue may see the product A B rounded to the output type
      // before the bias (tests/kernels/cuda_gemm16_test.cpp): 1.5 ulps of |A B| <= k = 5
      // through a GELU slope <= 1.13, one ulp (2^-7, bf16's, the wider) of the result.
      OpSample gelu = tol(with(sample("bias gelu", {{3, 5}, {5, 4}, {4}}), act(Act::gelu)), 1e-4, 1e-3);
      gelu.cuda_atol16 = 1e-4 + 1.5 * 0x1p-7 * 1.13 * 5;
      gelu.cuda_rtol16 = 1e-3 + 0x1p-7;
      return {tol(sample("bias", {{3, 5}, {5, 4}, {4}}), a, r),
              tol(with(sample("bias relu", {{3, 5}, {5, 4}, {4}}), act(Act::relu)), a, r),
              gelu,
              tol(with(sample("W^T", {{3, 5}, {4, 5}, {4}}), [](Attrs& t) { t.trans_b = true; }), a, r),
              tol(with(sample("rank-3 x, relu", {{2, 3, 5}, {5, 4}, {4}}), act(Act::relu)), a, r)};
    }
    case OpKind::linear_add:
      return {tol(sample("bias + residual", {{3, 5}, {5, 4}, {4}, {3, 4}}), 1e-5, 1e-4),
              tol(sample("rank-3 x", {{2, 3, 5}, {5, 4}, {4}, {2, 3, 4}}), 1e-5, 1e-4)};
    case OpKind::matmul_add:
      return {tol(sample("A B + C", {{3, 5}, {5, 4}, {3, 4}}), 1e-5, 1e-4),
              tol(with(sample("A B^T + C", {{3, 5}, {4, 5}, {3, 4}}), [](Attrs& t) { t.trans_b = true; }), 1e-5, 1e-4),
              tol(with(sample("A^T B + C", {{5, 3}, {5, 4}, {3, 4}}), [](Attrs& t) { t.trans_a = true; }), 1e-5, 1e-4),
              tol(sample("batched", {{2, 3, 5}, {2, 5, 4}, {2, 3, 4}}), 1e-5, 1e-4)};
    case OpKind::matmul_act_grad: {
      auto act = [](Act x, bool trans_b) { return [x, trans_b](Attrs& t) { t.act = x; t.trans_b = trans_b; }; };
      return {tol(with(sample("relu_grad(dz W^T, y)", {{3, 5}, {4, 5}, {3, 4}}), act(Act::relu, true)), 1e-5, 1e-4),
              tol(with(sample("gelu_grad(dz W^T, x)", {{3, 5}, {4, 5}, {3, 4}}), act(Act::gelu, true)), 1e-4, 1e-3),
              tol(with(sample("relu, batched", {{2, 3, 5}, {2, 5, 4}, {2, 3, 4}}), act(Act::relu, false)), 1e-5, 1e-4)};
    }
    case OpKind::matmul_bias_grad: return {tol(sample("[6,3]^T [6,4]", {{6, 3}, {6, 4}}), 1e-5, 1e-4)};
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse: {
      // Head views [B, S, heads * dh] (graph/attention.h); attention_grad's lse input is a
      // [B * heads, S, 2] pair of any values: the kernels read hi + lo as the statistic.
      auto heads = [](int64_t count, float alpha, bool causal) {
        return [=](Attrs& t) {
          t.heads.count = count;
          t.alpha = alpha;
          t.causal = causal;
        };
      };
      auto shapes = [op](Shape view, int64_t heads) -> std::vector<Shape> {
        if (op == OpKind::attention || op == OpKind::attention_fwd_lse) return {view, view, view};
        if (op == OpKind::attention_lse) return {view, view};
        return {view, view, view, view, view, Shape{view[0] * heads, view[1], 2}};
      };
      std::vector<OpSample> out = {
          tol(with(sample("2 heads", shapes({2, 5, 8}, 2)), heads(2, 0.5f, false)), 1e-5, 1e-4),
          tol(with(sample("2 heads, causal", shapes({2, 5, 8}, 2)), heads(2, 0.5f, true)), 1e-5, 1e-4),
          tol(with(sample("1 head, dh 3, causal", shapes({1, 4, 3}, 1)), heads(1, 1.0f, true)), 1e-5, 1e-4)};
      // The padding mask: key lengths [B] in [0, S] (0: every row of that sequence fully
      // masked, its output zero), alone and with causal.
      auto lengths = [&](std::string what, Shape view, int64_t count, bool causal, DType dt) {
        std::vector<Shape> in = shapes(view, count);
        in.push_back(Shape{view[0]});
        OpSample x = tol(with(sample(std::move(what), in), heads(count, 0.5f, causal)), 1e-5, 1e-4);
        x.labels_input = static_cast<int>(in.size()) - 1;
        x.classes = view[1] + 1;
        x.labels_dtype = dt;
        return x;
      };
      out.push_back(lengths("2 heads, key lengths", {3, 5, 8}, 2, false, DType::I32));
      out.push_back(lengths("2 heads, causal, i64 key lengths", {3, 6, 8}, 2, true, DType::I64));
      // A statistic a few f32 ulps apart rounds to neighbouring 16-bit values near a rounding
      // boundary: hi moves one 16-bit ulp (2^-6 in bf16 for |lse| < 4) and lo the other way.
      if (op == OpKind::attention_lse || op == OpKind::attention_fwd_lse)
        for (OpSample& x : out) {
          x.cuda_atol16 = 0x1p-5;
          x.cuda_rtol16 = 0x1p-7;
        }
      return out;
    }
    case OpKind::matmul_heads: {
      // 2 heads: q, k, v as [B=2, S=3, 2 heads x 4]; scores packed [4, 3, 3].
      auto views = [](bool a, bool b, bool out, bool ta, bool tb) {
        return [=](Attrs& t) {
          t.heads = HeadView{2, a, b, out};
          t.trans_a = ta;
          t.trans_b = tb;
        };
      };
      return {tol(with(sample("q k^T, both head views", {{2, 3, 8}, {2, 3, 8}}), views(true, true, false, false, true)),
                  1e-5, 1e-4),
              tol(with(sample("p v, merged result", {{4, 3, 3}, {2, 3, 8}}), views(false, true, true, false, false)),
                  1e-5, 1e-4),
              tol(with(sample("p^T v, a transposed", {{4, 3, 3}, {2, 3, 8}}), views(false, true, true, true, false)),
                  1e-5, 1e-4),
              tol(with(sample("packed, merged result", {{4, 3, 5}, {4, 5, 4}}), views(false, false, true, false, false)),
                  1e-5, 1e-4)};
    }
    case OpKind::layernorm_grad_params: return {tol(sample("[3,6]", {{3, 6}, {3, 6}}), 1e-4, 1e-4)};
    // To f32 (the harnesses give every output the inputs' dtype); to bf16 and f16 from f32 in
    // tests/kernels/cuda_rows_test.cpp.
    case OpKind::layernorm_cast:
      return {tol(sample("[3,6] to f32", {{3, 6}, {6}, {6}}), 1e-5, 1e-4),
              tol(sample("[2,3,8], float4 rows", {{2, 3, 8}, {8}, {8}}), 1e-5, 1e-4)};
    case OpKind::layernorm_grad_x_acc:
      return {tol(sample("[3,6]", {{3, 6}, {3, 6}, {6}, {3, 6}}), 5e-4, 2e-3),
              tol(sample("[2,3,8], float4 rows", {{2, 3, 8}, {2, 3, 8}, {8}, {2, 3, 8}}), 5e-4, 2e-3)};
    case OpKind::fused_elementwise: {
      auto program = [](std::vector<EwInstr> code) {
        return [code](Attrs& t) { t.program.code = code; };
      };
      const EwOp add = EwOp::add, sub = EwOp::sub, mul = EwOp::mul;
      return {// x * y + b, relu, * 0.5: operands 0..2 are the inputs, 3.. the results
              with(sample("mul, bias row, relu, scale", {m, m, {4}}),
                   program({{mul, 0, 1}, {add, 3, 2}, {EwOp::relu, 4}, {EwOp::scale, 5, 0, 0.5f}})),
              tol(with(sample("sub, relu_grad, gelu_grad, gelu", {m, m}),
                       program({{sub, 0, 1}, {EwOp::relu_grad, 2, 0}, {EwOp::gelu_grad, 3, 1}, {EwOp::gelu, 4}})),
                  1e-5, 1e-4),
              with(sample("6 inputs, rank 3", {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}, {4}, {2, 3, 4}}),
                   program({{add, 0, 1}, {sub, 6, 2}, {mul, 3, 7}, {add, 8, 4}, {add, 5, 9}}))};
    }
    case OpKind::sgd_multi:
      return {with(sample("3 tensors", {m, m, {5}, {5}, {2, 3, 2}, {2, 3, 2}}), [](Attrs& t) { t.lr = 0.05f; }),
              with(flag(sample("2 tensors, found-inf flag set: skipped", {m, m, {5}, {5}, {1}}), 1.0f),
                   [](Attrs& t) { t.lr = 0.05f; })};
    case OpKind::matmul_sgd_momentum: {
      auto rates = [](Attrs& t) {
        t.lr = 0.05f;
        t.momentum = 0.9f;
      };
      // cuBLAS-free on both sides, but the CPU product sums in another order.
      return {tol(with(sample("[6,5]^T [6,4]: the plain kernel", {{5, 4}, {6, 5}, {5, 4}, {6, 4}}), rates), 1e-5, 1e-4),
              tol(with(sample("[32,128]^T [32,256]: 128 x 128 tiles", {{128, 256}, {32, 128}, {128, 256}, {32, 256}}),
                       rates),
                  1e-5, 1e-4)};
    }
    case OpKind::adamw:
    case OpKind::adamw_multi: {
      // exp_avg_sq >= 0 and a step count >= 0 (positive inputs); a step count in [0.25, 1)
      // is no whole number, which the formula does not need. The bias corrections are
      // double pow on both sides, which may differ in the last bit of a double.
      auto adam = [](float weight_decay, float beta1) {
        return [=](Attrs& t) {
          t.lr = 0.05f;
          t.adam.weight_decay = weight_decay;
          t.adam.beta1 = beta1;
        };
      };
      auto state = [&tol](OpSample x) {
        for (size_t i = 0; i + 5 <= x.in.size(); i += 5) x.positive_inputs |= (1u << (i + 3)) | (1u << (i + 4));
        return tol(x, 1e-7, 1e-6);
      };
      if (op == OpKind::adamw)
        return {state(with(sample("[3,4]", {m, m, m, m, {1}}), adam(0.01f, 0.9f))),
                state(with(sample("[5], beta1 0, no weight decay", {{5}, {5}, {5}, {5}, {1}}), adam(0.0f, 0.0f))),
                state(with(flag(sample("[3,4], found-inf flag clear", {m, m, m, m, {1}, {1}}), 0.0f), adam(0.01f, 0.9f))),
                state(with(flag(sample("[3,4], found-inf flag set: skipped", {m, m, m, m, {1}, {1}}), 1.0f),
                           adam(0.01f, 0.9f)))};
      return {state(with(sample("3 tensors", {m, m, m, m, {1}, {5}, {5}, {5}, {5}, {1}, {2, 3, 2}, {2, 3, 2}, {2, 3, 2},
                                              {2, 3, 2}, {1}}),
                         adam(0.1f, 0.9f))),
              state(with(flag(sample("2 tensors, found-inf flag clear", {m, m, m, m, {1}, {5}, {5}, {5}, {5}, {1}, {1}}),
                              0.0f),
                         adam(0.1f, 0.9f))),
              state(with(flag(sample("2 tensors, found-inf flag set: skipped",
                                     {m, m, m, m, {1}, {5}, {5}, {5}, {5}, {1}, {1}}),
                              1.0f),
                         adam(0.1f, 0.9f)))};
    }
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast:
    case OpKind::adamw_multi_cast: {
      // The plain multi update's samples with a copy after every group: bf16, and f16 in the
      // guarded ones. The copy is written, so its starting data does not matter.
      const OpKind plain = op == OpKind::sgd_multi_cast           ? OpKind::sgd_multi
                           : op == OpKind::sgd_momentum_multi_cast ? OpKind::sgd_momentum_multi
                                                                   : OpKind::adamw_multi;
      const size_t k = static_cast<size_t>(op_num_inputs(plain));
      std::vector<OpSample> out;
      for (OpSample x : op_samples(plain)) {
        std::vector<Shape> in;
        unsigned positive = 0;
        for (size_t i = 0; i < x.in.size(); ++i) {
          const bool flag_input = static_cast<int>(i) == x.count_input;
          if (!flag_input && (x.positive_inputs >> i) & 1u) positive |= 1u << (in.size());
          in.push_back(x.in[i]);
          if (!flag_input && (i + 1) % k == 0) in.push_back(x.in[i - k + 1]);
        }
        if (x.count_input >= 0) x.count_input = static_cast<int>(in.size()) - 1;
        x.in = std::move(in);
        x.positive_inputs = positive;
        x.copy_group = static_cast<int>(k) + 1;
        x.copy_dtype = x.count_input >= 0 ? DType::F16 : DType::BF16;
        x.what += std::string(", ") + dtype_name(x.copy_dtype) + " copies";
        out.push_back(std::move(x));
      }
      return out;
    }
    case OpKind::global_norm:
      return {tol(sample("1 tensor", {m}), 1e-7, 1e-6), tol(sample("3 tensors", {m, {5}, {2, 3, 2}}), 1e-7, 1e-6)};
    case OpKind::clip_by_norm: {
      auto clip = [](float max_norm) { return [=](Attrs& t) { t.max_norm = max_norm; }; };
      auto positive_norm = [](OpSample x) {
        x.positive_inputs = 2u;
        return x;
      };
      return {positive_norm(with(sample("clipped", {m, {1}}), clip(0.1f))),
              positive_norm(with(sample("under max_norm", {m, {1}}), clip(10.0f)))};
    }
    case OpKind::embedding:
    case OpKind::embedding_grad: {
      // (table, ids) or (dy, ids): the ids in [0, vocabulary), repeated in the gradient's
      // samples (more ids than rows), so that rows sum several dy rows.
      auto ids = [op, &sample](std::string what, int64_t vocab, int64_t dim, Shape ids, DType dt) {
        Shape dy = ids;
        dy.dims[static_cast<size_t>(dy.rank++)] = dim;
        OpSample s = sample(std::move(what), op == OpKind::embedding ? std::vector<Shape>{{vocab, dim}, ids}
                                                                     : std::vector<Shape>{dy, ids});
        s.labels_input = 1;
        s.classes = vocab;
        s.labels_dtype = dt;
        if (op == OpKind::embedding_grad) s.attrs.size = vocab;
        return s;
      };
      return {ids("[5,3] table, 4 i64 ids", 5, 3, {4}, DType::I64), ids("[3,4] table, [2,5] i32 ids", 3, 4, {2, 5}, DType::I32),
              ids("[7,6] table, [2,3,4] i64 ids", 7, 6, {2, 3, 4}, DType::I64),
              ids("[4,3] table, rank-5 i64 ids", 4, 3, r5, DType::I64)};
    }
    // (x, rng) and (rng): the rng state's seed and offset are whole numbers below 1000 in i64
    // (still whole where a suite holds them in f16 or bf16); the element counts cover a
    // partial Philox group of four, and 16-bit vector loads.
    case OpKind::dropout:
    case OpKind::rng_advance: {
      auto rng = [op, &sample](std::string what, Shape x, float p, int64_t stream) {
        OpSample s = sample(std::move(what), op == OpKind::dropout ? std::vector<Shape>{x, {2}} : std::vector<Shape>{{2}});
        s.labels_input = op == OpKind::dropout ? 1 : 0;
        s.classes = 1000;
        s.labels_dtype = DType::I64;
        if (op == OpKind::dropout) {
          s.attrs.p = p;
          s.attrs.rng_stream = stream;
        }
        return s;
      };
      if (op == OpKind::rng_advance) return {rng("the offset + 1", {2}, 0, 0)};
      return {rng("[17], p 0.5", {17}, 0.5f, 0), rng("[3,5,8], p 0.1, stream 3", {3, 5, 8}, 0.1f, 3),
              rng("[2,4], p 0: the identity", {2, 4}, 0.0f, 1)};
    }
    // Outside a group (no communicator): the mean over one rank, the input itself. The
    // collective is tested over thread ranks in tests/kernels/collective_test.cpp.
    case OpKind::all_reduce: return {sample("a bucket [17]", {{17}}), sample("[3,4]", {m})};
    case OpKind::sgd_momentum_multi:
      return {with(sample("1 tensor", {m, m, m}),
                   [](Attrs& t) {
                     t.lr = 0.05f;
                     t.momentum = 0.9f;
                   }),
              with(sample("3 tensors", {m, m, m, {5}, {5}, {5}, {2, 3, 2}, {2, 3, 2}, {2, 3, 2}}), [](Attrs& t) {
                t.lr = 0.05f;
                t.momentum = 0.5f;
              }),
              with(flag(sample("2 tensors, found-inf flag clear", {m, m, m, {5}, {5}, {5}, {1}}), 0.0f), [](Attrs& t) {
                t.lr = 0.05f;
                t.momentum = 0.5f;
              })};
  }
  return {};
}

// |x| in [0.25, 1) for x in [-1, 1): the data of a positive input.
inline void make_positive(std::vector<float>& v) {
  for (float& x : v) x = 0.25f + 0.75f * (x < 0 ? -x : x);
}

// The dtype of input i of a sample whose float inputs are `dt`: the labels input keeps
// its own (integers, or f32 class indices).
inline bool sample_input_is_copy(const OpSample& s, size_t i) {
  return s.copy_group > 0 && static_cast<int>(i) != s.count_input && (i + 1) % static_cast<size_t>(s.copy_group) == 0;
}
// Whether input i of a kTypeChannels op is f32 where a sample (or a case made of one) asks for
// its per-channel inputs (channels_f32) or its running statistics alone (stats_f32) in f32.
inline bool channel_input_f32(OpKind op, int i, bool channels_f32, bool stats_f32) {
  return (channels_f32 && channel_input(op, i)) || (stats_f32 && running_stats_input(op, i));
}
// A kTypeLogits op's other float inputs (dloss) stay f32 (graph/dtype_rules.h).
inline DType sample_input_dtype(OpKind op, const OpSample& s, size_t i, DType dt = DType::F32) {
  if (sample_input_is_copy(s, i)) return s.copy_dtype;
  if (channel_input_f32(op, static_cast<int>(i), s.channels_f32, s.stats_f32)) return DType::F32;
  return static_cast<int>(i) == s.labels_input ? s.labels_dtype : op_float_input_dtype(op, static_cast<int>(i), dt);
}
inline std::vector<DType> sample_dtypes(OpKind op, const OpSample& s, DType dt = DType::F32) {
  std::vector<DType> out;
  for (size_t i = 0; i < s.in.size(); ++i) out.push_back(sample_input_dtype(op, s, i, dt));
  return out;
}

// Fresh input data for a sample: uniform in [-1, 1), but the labels, the count and the
// positive inputs.
inline std::vector<std::vector<float>> sample_data(const OpSample& s, uint64_t seed) {
  std::vector<std::vector<float>> data;
  for (size_t i = 0; i < s.in.size(); ++i) {
    std::vector<float> v(static_cast<size_t>(s.in[i].numel()));
    const uint64_t vs = seed * 131 + i;
    if (static_cast<int>(i) == s.labels_input) random_labels(v, vs, s.classes);
    else if (static_cast<int>(i) == s.count_input) v.assign(v.size(), s.count);
    else random_fill(v, vs);
    if ((s.positive_inputs >> i) & 1u) make_positive(v);
    data.push_back(std::move(v));
  }
  return data;
}

// Every op, for loops over the table.
inline std::vector<OpKind> all_ops() {
  std::vector<OpKind> ops;
  for (int i = 0; i < kNumOps; ++i) ops.push_back(static_cast<OpKind>(i));
  return ops;
}

}  // namespace tg::testing
