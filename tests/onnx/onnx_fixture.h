#pragma once
// The committed ONNX fixtures (tests/onnx, made by experiments/peers/export_onnx_models.py):
// for each model, the exported .onnx, the graph file and weights tg-graph import made
// of it, and onnxruntime's output for a fixed input (<name>.io.safetensors).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dynamic/trainer.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/weights.h"
#include "static/compiler.h"

namespace tg::testing {

inline std::string onnx_dir() { return "tests/onnx/"; }

struct OnnxFixture {
  std::string name;
  Graph graph;            // the committed graph file, weights attached
  std::vector<float> x;   // the input fed to onnxruntime
  std::vector<float> y;   // onnxruntime's output
};

inline OnnxFixture load_fixture(const std::string& name) {
  OnnxFixture f;
  f.name = name;
  f.graph = load_graph_file(onnx_dir() + name + ".json");
  attach_weights(f.graph, load_weights_file(onnx_dir() + name + ".safetensors"), name + ".safetensors");
  const Weights io = load_weights_file(onnx_dir() + name + ".io.safetensors");
  f.x = io.at("x").data;
  f.y = io.at("out.y").data;
  return f;
}

// The agreement asked of twograph's CPU run with onnxruntime's: both compute in
// f32, in different summation orders (OpenBLAS and MLAS GEMMs, their own
// LayerNorm and softmax reductions over at most 128 terms), so the results differ
// by a few ulps of the largest partial sums, about 1e-6 of the values here. 1e-4
// relative plus 1e-5 absolute is a hundred times that, and a thousand times
// smaller than what a wrong mapping gives (a transposed weight, a missed bias or
// scale changes the outputs by O(1)).
constexpr double kOnnxRtol = 1e-4, kOnnxAtol = 1e-5;

struct Agreement {
  double max_abs = 0, max_rel = 0;
  size_t bad = 0;
};

inline Agreement agreement(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  Agreement a;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    a.max_abs = std::max(a.max_abs, d);
    a.max_rel = std::max(a.max_rel, d / std::max(1e-30, std::fabs(static_cast<double>(want[i]))));
    if (!(d <= kOnnxAtol + kOnnxRtol * std::fabs(static_cast<double>(want[i])))) ++a.bad;
  }
  return a;
}

// The model's prediction for input x by the static and by the dynamic executor.
struct Predictions {
  std::vector<float> static_y, dynamic_y;
};
inline Predictions predict_both(const GraphModel& gm, const std::shared_ptr<Backend>& be, const std::vector<float>& x) {
  CompileOptions co;
  co.training = false;
  co.backend = be;
  CompiledPlan p = compile(gm.infer_fn, co);
  p.run({{"x", x}});
  DynamicOptions o;
  o.inference = true;
  DynamicTrainer dyn(gm.infer_fn, *be, "caching", o);
  return {p.read(p.prediction), dyn.run_inference({{"x", x}})};
}

}  // namespace tg::testing
