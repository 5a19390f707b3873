#pragma once
// Shared by the tests of the convolution passes (tests/static/passes_conv_test.cpp, and
// cuda_conv_passes_test.cpp on a GPU): an inference model compiled with and without passes
// on one parameter store, its batch norms given random parameters and running statistics
// after compiling (the fold runs at every step, on the parameters' current values), and the
// tolerance of a folded result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "static/compiler.h"
#include "static/parameter_store.h"

namespace tg::testing {

// Writes values drawn from [lo, hi) into elements offset.. of a parameter of the store.
inline void fill_parameter(ParameterStore& store, const std::string& name, int64_t offset, int64_t n, float lo,
                           float hi, std::mt19937& rng) {
  float* p = store.find(name);
  REQUIRE_MESSAGE(p, "no parameter ", name);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  store.backend().copy_to_device(p + offset, v.data(), v.size() * sizeof(float));
}

// Random batch norm parameters: gamma in [0.5, 1.5), beta in [-0.5, 0.5), running means in
// [-0.5, 0.5) and variances in [0.25, 2).
inline void randomize_batch_norms(const Graph& g, ParameterStore& store, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (int v : g.values_with_role(Role::parameter)) {
    const ValueInfo& info = g.values[static_cast<size_t>(v)];
    const auto ends = [&](const std::string& s) {
      return info.name.size() >= s.size() && info.name.compare(info.name.size() - s.size(), s.size(), s) == 0;
    };
    const int64_t n = info.shape.numel();
    if (ends(".stats")) {
      fill_parameter(store, info.name, 0, n / 2, -0.5f, 0.5f, rng);
      fill_parameter(store, info.name, n / 2, n / 2, 0.25f, 2.0f, rng);
    } else if (ends(".gamma")) {
      fill_parameter(store, info.name, 0, n, 0.5f, 1.5f, rng);
    } else if (ends(".beta")) {
      fill_parameter(store, info.name, 0, n, -0.5f, 0.5f, rng);
    }
  }
}

// The largest |got - want| - (atol + rtol |want|): > 0 fails.
inline double excess(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol) {
  REQUIRE(got.size() == want.size());
  double worst = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    worst = std::max(worst, std::isnan(d) ? 1e30 : d - (atol + rtol * std::fabs(static_cast<double>(want[i]))));
  }
  return worst;
}

struct FoldRun {
  CompiledPlan plain, folded;
};

// The inference model compiled twice on one parameter store (of `be`; null: the CPU),
// without passes and with `set`, its batch norms then given random parameters and running
// statistics.
inline FoldRun compile_pair(const ModelFn& model, Precision precision, PassSet set, uint64_t seed,
                           std::shared_ptr<Backend> be = nullptr) {
  if (!be) be = std::shared_ptr<Backend>(make_cpu_backend());
  CompileOptions o;
  o.backend = be;
  o.params = std::make_shared<ParameterStore>(be, 7);
  o.training = false;
  o.precision = precision;
  FoldRun r;
  r.plain = compile(model, o);
  o.passes = set;
  r.folded = compile(model, o);
  randomize_batch_norms(*r.plain.graph, *o.params, seed);
  return r;
}

// Folded vs unfolded: f32 within a few f32 roundings of the sums; bf16 and f16 within two
// roundings of the output type (w s is rounded once before the sums, and the output once
// after them instead of after the convolution and again after the batch norm), of the
// output's scale, since a rounded weight's error is relative to the terms summed, not to the
// sum.
struct FoldTol {
  Precision precision;
  double atol, rtol;
};
inline constexpr FoldTol kFoldTols[] = {
    {Precision::fp32, 1e-5, 1e-5}, {Precision::bf16, 2 * 0x1p-8, 2 * 0x1p-8}, {Precision::fp16, 2 * 0x1p-11, 2 * 0x1p-11}};
// A whole network's: the errors of its folded layers partly add up, to four times one layer's.
inline constexpr double kNetworkFoldTolFactor = 4;

inline double scale_of(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, std::fabs(static_cast<double>(f)));
  return std::max(m, 1.0);
}

}  // namespace tg::testing
