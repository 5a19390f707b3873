#pragma once
// Gradient checks against central finite differences on the CPU interpreter.
// The analytic gradients come from backward() recorded into the same graph; the
// objective is evaluated in double from the interpreter's float outputs, each
// input element is perturbed in float32 by +-eps, and the step is the float
// difference actually taken, so the only errors are float rounding of the
// forward and the O(eps^2) truncation.
#include <functional>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace tg::testing {

using Values = std::vector<std::vector<float>>;

struct GradCheckOptions {
  float eps = 1e-2f;
  double rtol = 2e-3;
  double atol = 1e-3;  // relative to the largest |analytic gradient| of the check
  uint64_t seed = 7;
  // Moves every wrt value of role input to |x| in [0.25, 1) keeping its sign,
  // so that relu's kink at 0 is out of reach of the perturbation.
  bool away_from_zero = false;
  // Moves every wrt value of role input to [0.25, 1), the domain of log (the ops whose
  // samples have positive inputs take a gradient only for those).
  bool positive = false;
  // Gives every wrt value of role input a distinct value, 5 eps from its neighbours (in the
  // order of the random draw), so that no perturbation changes which element is a
  // window's maximum (max_pool2d).
  bool distinct = false;
};

struct GradCheckResult {
  int checked = 0;
  int mismatches = 0;
  double max_abs_grad = 0.0;
  // max |fd - analytic| / max(|fd|, |analytic|, max_abs_grad * 1e-2): how close to the tolerance
  double worst = 0.0;
};

// Builds the op(s) under test; pushes the values to differentiate into wrt and
// returns the output.
using OpFn = std::function<Value(Builder&, std::vector<Value>& wrt)>;

// Checks d/dwrt of sum(out * proj), proj a random input of out's shape, so that
// every element of the output matters. Reports mismatches through doctest.
GradCheckResult check_op_gradients(const OpFn& fn, const GradCheckOptions& opt = {});

// Checks a whole graph: `objective` recomputes the loss in double from the
// interpreter's values; grads[i] is the backward value for wrt[i].
GradCheckResult check_graph_gradients(const Graph& g, const std::vector<int>& wrt, const std::vector<int>& grads,
                                      const std::function<double(const Values&)>& objective,
                                      const GradCheckOptions& opt);

}  // namespace tg::testing
