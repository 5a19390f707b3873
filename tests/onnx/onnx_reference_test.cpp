// The PyTorch exports under tests/onnx, imported: forward against onnxruntime's
// outputs (interpreter, static and dynamic executors on the CPU), the committed
// graph files against a fresh import, and the training graph (mse loss appended)
// against finite differences.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "dynamic/trainer.h"
#include "graph/autodiff.h"
#include "graph/builder.h"
#include "kernels/backend.h"
#include "kernels/interpreter.h"
#include "static/compiler.h"
#include "tests/graph/graph_equal.h"
#include "tests/onnx/onnx_fixture.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

// The cnn_* models are written with onnx.helper (experiments/peers/make_cnn_onnx.py), the rest exported by PyTorch.
const char* const kModels[] = {"mlp",     "transformer", "transformer_ts14", "cnn_resnet", "cnn_vgg",
                               "cnn_conv1d", "cnn_convt", "cnn_lrn"};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("onnx fixtures: each imported model's CPU output matches onnxruntime's (interpreter, static, dynamic)") {
  auto be = std::shared_ptr<Backend>(make_cpu_backend());
  for (const std::string name : kModels) {
    CAPTURE(name);
    const OnnxFixture f = load_fixture(name);
    std::vector<std::vector<float>> values = make_values(f.graph, 0);
    const int x = f.graph.find_value("x"), y = f.graph.find_value("y");
    REQUIRE(x >= 0);
    REQUIRE(y >= 0);
    values[static_cast<size_t>(x)] = f.x;
    interpret(f.graph, values);
    const Agreement ai = agreement(values[static_cast<size_t>(y)], f.y);
    MESSAGE(fmt::format("{}: interpreter vs onnxruntime: max |diff| {:.3g}, max relative {:.3g} over {} values", name,
                        ai.max_abs, ai.max_rel, f.y.size()));
    CHECK(ai.bad == 0);

    const Predictions pr = predict_both(graph_model(f.graph), be, f.x);
    CHECK(same_bits(pr.static_y, pr.dynamic_y));  // the same kernels in the same order
    CHECK(agreement(pr.static_y, f.y).bad == 0);
    CHECK(agreement(pr.dynamic_y, f.y).bad == 0);
  }
}

TEST_CASE("onnx fixtures: the committed graph files and weights are what importing the .onnx files gives") {
  if (!onnx::have_onnx_reader()) {
    std::printf("TG_SKIP: this build has no ONNX support (libonnx-dev or libprotobuf-dev not found); the graph files were still checked\n");
    return;
  }
  for (const std::string name : kModels) {
    CAPTURE(name);
    const std::string base = onnx_dir() + name;
    onnx::Imported im = onnx::import_model(onnx::read_model_file(base + ".onnx"), {}, base + ".onnx");
    const Weights w = weights_of(im.graph);
    strip_weights(im.graph);
    CHECK(graph_difference(im.graph, load_graph_file(base + ".json")) == "");
    const Weights committed = load_weights_file(base + ".safetensors");
    REQUIRE(w.size() == committed.size());
    for (const auto& [k, t] : committed) {
      CAPTURE(k);
      REQUIRE(w.count(k));
      CHECK(w.at(k).shape == t.shape);
      CHECK(same_bits(w.at(k).data, t.data));
    }
  }
}

TEST_CASE("onnx fixtures: nn.Embedding's export (Gather, int64 ids) imports as embedding and picks the table's rows") {
  if (!onnx::have_onnx_reader()) {
    std::printf("TG_SKIP: this build has no ONNX support (libonnx-dev or libprotobuf-dev not found)\n");
    return;
  }
  const std::string path = onnx_dir() + "embedding.onnx";
  const onnx::Imported im = onnx::import_model(onnx::read_model_file(path), {}, path);
  const Graph& g = im.graph;
  const int ids = g.find_value("ids");
  REQUIRE(ids >= 0);
  CHECK(g.values[static_cast<size_t>(ids)].dtype == DType::I64);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op == OpKind::embedding);
  const ValueInfo& table = g.values[static_cast<size_t>(g.nodes[0].inputs[0])];
  REQUIRE(static_cast<bool>(table.init.data));
  REQUIRE(table.shape == Shape{10, 4});
  const std::vector<float> feed = {7, 0, 9};  // ids [1, 3]
  std::vector<float> want;
  for (float id : feed)
    for (size_t j = 0; j < 4; ++j) want.push_back((*table.init.data)[static_cast<size_t>(id) * 4 + j]);
  std::vector<std::vector<float>> values = make_values(g, 0);
  values[static_cast<size_t>(ids)] = feed;
  interpret(g, values);
  CHECK(same_bits(values[static_cast<size_t>(g.outputs[0])], want));
  // Both executors on the CPU backend, with the ids fed as i64.
  auto be = std::shared_ptr<Backend>(make_cpu_backend());
  const GraphModel gm = graph_model(g);
  CompileOptions co;
  co.training = false;
  co.backend = be;
  CompiledPlan p = compile(gm.infer_fn, co);
  p.run({{"ids", feed}});
  CHECK(same_bits(p.read(p.prediction), want));
  DynamicOptions o;
  o.inference = true;
  DynamicTrainer dyn(gm.infer_fn, *be, "caching", o);
  CHECK(same_bits(dyn.run_inference({{"ids", feed}}), want));
}

TEST_CASE("onnx fixtures: the TorchScript export's formulas (LayerNorm, tanh GELU, Div) import as the dynamo export's ops") {
  auto ops = [](const Graph& g) {
    std::map<std::string, int> n;
    for (const Node& node : g.nodes) ++n[op_name(node.op)];
    return n;
  };
  const auto a = ops(load_graph_file(onnx_dir() + "transformer.json"));
  const auto b = ops(load_graph_file(onnx_dir() + "transformer_ts14.json"));
  CHECK(a == b);
  CHECK(b.at("layernorm") == 2);
  CHECK(b.at("gelu") == 1);
  CHECK(b.at("scale") == 1);  // scores / sqrt(dh)
}

// Finite differences of the loss on the interpreter against backward()'s
// gradients, for every parameter element. ReLU has a kink at 0 where the finite
// difference is not a derivative: an element whose +-eps runs change the sign of
// any ReLU input is left out (and counted; the test requires few).
struct FdResult {
  int checked = 0, skipped = 0, mismatches = 0;
  double worst = 0;
};

FdResult fd_check(const OnnxFixture& f, float eps) {
  Graph g;
  RecordingBuilder b(g);
  const GraphModel gm = graph_model(f.graph);
  const ModelOutputs out = gm.fn(b);
  const Value loss = mse_loss(b, out.prediction, b.input("target", out.prediction.shape));
  std::vector<Value> params;
  for (int id : g.values_with_role(Role::parameter)) params.push_back(RecordingBuilder::handle(g, id));
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, params);
  std::vector<int> relu_inputs;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::relu) relu_inputs.push_back(n.inputs[0]);

  std::vector<std::vector<float>> values = make_values(g, 3);
  values[static_cast<size_t>(g.find_value("x"))] = f.x;
  interpret(g, values);
  auto signs = [&] {
    std::vector<bool> s;
    for (int r : relu_inputs)
      for (float v : values[static_cast<size_t>(r)]) s.push_back(v > 0);
    return s;
  };
  const std::vector<bool> base_signs = signs();
  double max_grad = 0;
  std::vector<std::vector<float>> analytic;
  for (const Value& gr : grads) {
    REQUIRE(gr.valid());
    analytic.push_back(values[static_cast<size_t>(gr.id)]);
    for (float a : analytic.back()) max_grad = std::max(max_grad, static_cast<double>(std::fabs(a)));
  }
  FdResult r;
  const double rtol = 2e-3, atol = 1e-3 * max_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<float>& p = values[static_cast<size_t>(params[i].id)];
    for (size_t k = 0; k < p.size(); ++k) {
      const float p0 = p[k], pp = p0 + eps, pm = p0 - eps;
      bool kink = false;
      double l[2];
      for (int s = 0; s < 2; ++s) {
        p[k] = s == 0 ? pp : pm;
        interpret(g, values);
        l[s] = values[static_cast<size_t>(loss.id)][0];
        kink = kink || signs() != base_signs;
      }
      p[k] = p0;
      if (kink) {
        ++r.skipped;
        continue;
      }
      const double fd = (l[0] - l[1]) / (static_cast<double>(pp) - static_cast<double>(pm));
      const double an = analytic[i][k];
      ++r.checked;
      r.worst = std::max(r.worst, std::fabs(fd - an) / std::max({std::fabs(fd), std::fabs(an), 1e-2 * max_grad}));
      if (!(std::fabs(fd - an) <= atol + rtol * std::max(std::fabs(fd), std::fabs(an))) && ++r.mismatches <= 5)
        MESSAGE(fmt::format("d loss / d {}[{}]: backward {:.7g}, finite difference {:.7g}",
                            g.values[static_cast<size_t>(params[i].id)].name, k, an, fd));
    }
  }
  return r;
}

TEST_CASE("onnx fixtures: the imported models' training graphs (mse loss) have the finite-difference gradients") {
  // A small step for the MLP, so that few ReLU inputs are within reach of the kink.
  // cnn_convt and cnn_lrn: conv_transpose2d's two gradients and LRN's ops through a whole graph.
  for (const auto& [model, eps] : {std::pair<const char*, float>{"mlp", 2e-3f}, {"transformer", 1e-2f},
                                   {"cnn_convt", 1e-3f}, {"cnn_lrn", 3e-4f}}) {
    const std::string name = model;
    CAPTURE(name);
    const FdResult r = fd_check(load_fixture(name), eps);
    MESSAGE(fmt::format("{}: {} parameter elements checked, {} left out at a ReLU kink, worst relative error {:.2e}",
                        name, r.checked, r.skipped, r.worst));
    CHECK(r.checked > 0);
    CHECK(r.mismatches == 0);
    CHECK(r.skipped * 20 <= r.checked);  // the kink rule leaves out at most 5%
  }
}

}  // namespace
}  // namespace tg::testing
