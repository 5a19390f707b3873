#pragma once
// Helpers for the CPU kernel tests: run one op on host vectors through run_cpu,
// with the output shape from the real shape inference and the output poisoned.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/init.h"
#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::testing {

struct Tensor {
  std::vector<float> data;
  Shape shape;
};

inline Tensor random_tensor(Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t{std::vector<float>(static_cast<size_t>(s.numel())), s};
  random_fill(t.data, seed, lo, hi);
  return t;
}

// A host vector of any element type (i64 ids, 16-bit bits) as a view of dtype dt.
template <typename T>
kernels::TensorView view(std::vector<T>& v, Shape s, DType dt) {
  return {reinterpret_cast<float*>(v.data()), s, dt};
}

inline Tensor tensor(Shape s, std::vector<float> v) {
  REQUIRE(static_cast<int64_t>(v.size()) == s.numel());
  return {std::move(v), s};
}

// Points the call at the tensors: the first kMaxOpInputs in OpCall::in, the rest of a
// variadic op's in `more`, which must outlive the call.
inline void set_inputs(kernels::OpCall& c, std::vector<Tensor>& ins, std::vector<kernels::TensorView>& more) {
  c.num_inputs = static_cast<int>(ins.size());
  more.clear();
  for (size_t i = 0; i < ins.size(); ++i) {
    const kernels::TensorView v{ins[i].data.data(), ins[i].shape};
    if (i < c.in.size()) c.in[i] = v;
    else more.push_back(v);
  }
  c.more = more.empty() ? nullptr : more.data();
}

// The shape rule's message for a call it refuses, "accepted" for one it takes.
inline std::string shape_rule_message(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  try {
    infer_shape(op, in, at, node);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "accepted";
}

// Runs `op` on copies of the inputs; the output starts as NaN so that an element
// the kernel forgets to write fails the comparison.
inline Tensor run_op(OpKind op, std::vector<Tensor> ins, const Attrs& at = {}) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ins) shapes.push_back(t.shape);
  const std::vector<Shape> outs = infer_shapes(op, shapes, at, "test");
  Tensor out, second;  // a second output (fused ops) is run and checked for NaN, not returned
  out.shape = outs.at(0);
  out.data.assign(static_cast<size_t>(out.shape.numel()), std::numeric_limits<float>::quiet_NaN());
  kernels::OpCall c;
  std::vector<kernels::TensorView> more;  // a variadic op's inputs past kMaxOpInputs
  set_inputs(c, ins, more);
  c.op = op;
  c.attrs = &at;
  c.out = {out.data.data(), out.shape};
  if (outs.size() > 1) {
    second.shape = outs[1];
    second.data.assign(static_cast<size_t>(second.shape.numel()), std::numeric_limits<float>::quiet_NaN());
    c.out2 = {second.data.data(), second.shape};
  }
  kernels::run_cpu(c);
  for (float v : second.data) REQUIRE_MESSAGE(!std::isnan(v), std::string(op_name(op)), ": an element of its second output is unwritten");
  return out;
}

// Runs a one-input op with its output aliasing its input; returns the buffer.
inline std::vector<float> run_in_place(OpKind op, const Tensor& x, const Attrs& at = {}) {
  std::vector<float> buf = x.data;
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {buf.data(), x.shape};
  c.out = {buf.data(), x.shape};
  kernels::run_cpu(c);
  return buf;
}

// |got - want| <= atol + rtol*|want| everywhere; prints the first mismatches.
inline void check_close(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol,
                        const char* what = "") {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= atol + rtol * std::fabs(want[i]))) {
      if (++bad <= 5) MESSAGE(fmt::format("{} [{}]: got {} want {} (err {:.3g})", what, i, got[i], want[i], err));
    }
  }
  CHECK_MESSAGE(bad == 0, fmt::format("{}: {} of {} elements out of tolerance", what, bad, got.size()));
}

inline void check_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                        const char* what = "") {
  check_close(got, std::vector<double>(want.begin(), want.end()), atol, rtol, what);
}

// d/d(input wrt) of sum_k w[k] * fwd(ins)[k], by central differences in double
// over the forward kernel itself: checks a gradient op against its forward op.
// The step is the one actually applied after rounding to float.
inline std::vector<double> numeric_grad(OpKind fwd, const std::vector<Tensor>& ins, size_t wrt,
                                        const std::vector<float>& w, const Attrs& at, float h) {
  auto objective = [&](const std::vector<Tensor>& p) {
    const Tensor y = run_op(fwd, p, at);
    double acc = 0.0;
    for (size_t k = 0; k < y.data.size(); ++k) acc += static_cast<double>(w[k]) * y.data[k];
    return acc;
  };
  std::vector<double> g(ins[wrt].data.size());
  for (size_t i = 0; i < g.size(); ++i) {
    std::vector<Tensor> plus = ins, minus = ins;
    plus[wrt].data[i] += h;
    minus[wrt].data[i] -= h;
    const double step = static_cast<double>(plus[wrt].data[i]) - minus[wrt].data[i];
    g[i] = (objective(plus) - objective(minus)) / step;
  }
  return g;
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace tg::testing
