// ONNX import and the training graph at 100k nodes (scale_graphs.h): the library calls
// `tg-graph import` and `tg-graph print --training [--passes all]` make. No time is
// asserted; the size is the check, under the suite's TIMEOUT (tests/scale/CMakeLists.txt).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph/dot.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/text_dump.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "static/passes/pass.h"
#include "tests/scale/scale_graphs.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {
namespace {

using Dims = std::vector<int64_t>;

onnx::Tensor tensor(const std::string& name, Dims dims, std::vector<float> v) {
  onnx::Tensor t;
  t.name = name;
  t.dims = std::move(dims);
  t.f = std::move(v);
  return t;
}

// An ONNX model as an older exporter writes a transformer's MLP: per block MatMul, Relu,
// the tanh GELU formula (8 nodes), MatMul, a residual Add and the LayerNorm formula
// (9 nodes), 21 nodes in all, every name distinct.
class OnnxChain {
 public:
  static constexpr int kBlockNodes = 21;

  explicit OnnxChain(int nodes) {
    m.opset = 17;
    onnx::ValueDecl x;
    x.name = "x";
    x.has_shape = true;
    x.dims = {onnx::Dim{4, ""}, onnx::Dim{8, ""}};
    m.inputs.push_back(x);
    for (const auto& [name, v] : std::map<std::string, float>{{"three", 3.0f}, {"k", 0.044715f}, {"s2pi", 0.7978845608f},
                                                              {"one", 1.0f}, {"half", 0.5f}, {"two", 2.0f}, {"eps", 1e-5f}})
      m.initializers[name] = tensor(name, {}, {v});
    m.initializers["w"] = tensor("w", {8, 8}, std::vector<float>(64, 0.125f));
    m.initializers["gamma"] = tensor("gamma", {8}, std::vector<float>(8, 1.0f));
    m.initializers["beta"] = tensor("beta", {8}, std::vector<float>(8, 0.0f));
    std::string cur = "x";
    for (blocks = 0; (blocks + 1) * kBlockNodes <= nodes; ++blocks) cur = block(cur, fmt::format("b{}.", blocks));
    onnx::ValueDecl y;
    y.name = cur;
    m.outputs.push_back(y);
  }

  onnx::Model m;
  int blocks = 0;

 private:
  void node(const std::string& op, std::vector<std::string> ins, const std::string& out,
            std::map<std::string, onnx::Attribute> attrs = {}) {
    onnx::Node n;
    n.name = "node_" + out;
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    m.nodes.push_back(std::move(n));
  }

  std::string block(const std::string& in, const std::string& p) {
    node("MatMul", {in, "w"}, p + "mm");
    node("Relu", {p + "mm"}, p + "relu");
    const std::string x = p + "relu";
    node("Pow", {x, "three"}, p + "cube");
    node("Mul", {p + "cube", "k"}, p + "mk");
    node("Add", {x, p + "mk"}, p + "in");
    node("Mul", {p + "in", "s2pi"}, p + "u");
    node("Tanh", {p + "u"}, p + "t");
    node("Add", {p + "t", "one"}, p + "onet");
    node("Mul", {x, "half"}, p + "h");
    node("Mul", {p + "h", p + "onet"}, p + "gelu");
    node("MatMul", {p + "gelu", "w"}, p + "mm2");
    node("Add", {p + "mm2", in}, p + "res");
    std::map<std::string, onnx::Attribute> axes;
    axes["axes"].kind = onnx::Attribute::Kind::ints;
    axes["axes"].ints = {-1};
    const std::string r = p + "res";
    node("ReduceMean", {r}, p + "mean", axes);
    node("Sub", {r, p + "mean"}, p + "d");
    node("Pow", {p + "d", "two"}, p + "sq");
    node("ReduceMean", {p + "sq"}, p + "var", axes);
    node("Add", {p + "var", "eps"}, p + "ve");
    node("Sqrt", {p + "ve"}, p + "s");
    node("Div", {p + "d", p + "s"}, p + "n");
    node("Mul", {p + "n", "gamma"}, p + "ng");
    node("Add", {p + "ng", "beta"}, p + "ln");
    return p + "ln";
  }
};

std::map<OpKind, int> op_counts(const Graph& g) {
  std::map<OpKind, int> c;
  for (const Node& n : g.nodes) ++c[n.op];
  return c;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST_CASE("scale: import of a 100k-node ONNX model with a formula to fuse in every block") {
  const OnnxChain chain(kScaleNodes);
  REQUIRE(chain.blocks > kScaleNodes / OnnxChain::kBlockNodes - 1);
  onnx::ImportOptions opt;
  opt.loss = onnx::ImportOptions::Loss::mse;
  const onnx::Imported im = onnx::import_model(chain.m, opt, "chain.onnx");
  CHECK(im.notes.size() == static_cast<size_t>(2 * chain.blocks));
  CHECK(im.notes.back() == fmt::format("nodes node_b{0}.mean..node_b{0}.ln: the LayerNorm formula (9 nodes) imported "
                                       "as one layernorm", chain.blocks - 1));
  const std::map<OpKind, int> ops = op_counts(im.graph);
  const int b = chain.blocks;
  CHECK(ops == std::map<OpKind, int>{{OpKind::matmul, 2 * b}, {OpKind::relu, b}, {OpKind::gelu, b}, {OpKind::add, b},
                                     {OpKind::layernorm, b}, {OpKind::mse_loss, 1}});
  CHECK(im.graph.nodes[im.graph.nodes.size() - 2].name == chain.m.outputs[0].name);
  validate(im.graph);
}

TEST_CASE("scale: the training graph of a 100k-node graph file, listed and drawn") {
  const Graph file = load_graph_json(save_graph_json(block_chain()), "chain.json");
  validate(file);
  const GraphModel model = graph_model(file);
  REQUIRE(model.loss == "loss");
  const Graph train = build_training_graph(model.fn);
  validate(train);
  const size_t params = train.values_with_role(Role::parameter).size();
  CHECK(params == 4 * ((file.nodes.size() - 1) / 7));
  CHECK(train.values_with_role(Role::optimizer_state).size() == params);
  CHECK(op_counts(train)[OpKind::sgd_momentum] == static_cast<int>(params));
  const std::string listing = text_dump(train);
  CHECK(first_line(listing) == fmt::format("# {} values (2 inputs, {} parameters, {} optimizer_state), {} nodes, 2 outputs",
                                           train.values.size(), params, params, train.nodes.size()));
  CHECK(listing.find("\nb0.w.update: sgd_momentum(b0.w[8,8], ") != std::string::npos);
  const std::string dot = graph_to_dot(train, "chain.json");
  CHECK(dot.compare(dot.size() - 2, 2, "}\n") == 0);
}

TEST_CASE("scale: the graph passes on a training graph with an output per block and large weights") {
  // Every block's pre-activation is an output too (what the passes must keep), and the
  // weights hold 4 MiB each (what the optimizer pass groups one by one beside the lanes
  // pass). Half the forward size: the training graph it makes has 170k nodes.
  ChainOptions opt;
  opt.nodes = kScaleNodes / 2;
  opt.block_outputs = true;
  opt.width = 1024;
  const Graph train = build_training_graph(graph_model(block_chain(opt)).fn);
  std::vector<PassStats> stats;
  // Every pass, the layout option too: it finds no convolution and keeps the graph.
  const Graph fused = run_passes(train, PassSet::all().with(PassId::channels_last), PassOptions{}, &stats);
  validate(fused);
  REQUIRE(stats.size() == static_cast<size_t>(kNumPasses));
  CHECK(stats.back().pass == PassId::channels_last);
  CHECK(stats.back().nodes_after == stats.back().nodes_before);
  CHECK(fused.nodes.size() < train.nodes.size());
  CHECK(fused.outputs.size() == train.outputs.size());
  std::map<OpKind, int> ops = op_counts(fused);
  CHECK(ops[OpKind::linear] > 0);
  CHECK(ops[OpKind::sgd_momentum_multi] > 0);
  const std::vector<bool> side = side_lane_nodes(fused, fused.topo_order());
  CHECK(std::count(side.begin(), side.end(), true) > 0);
}

}  // namespace
}  // namespace tg::testing
