// The channels_last pass (static/passes/channels_last.cpp) on the CPU: the CNNs train and
// infer to the NCHW graph's bits, f32 and bf16 (the NHWC kernels sum in the NCHW kernels'
// order, transposes and broadcasts copy, and the global average pool's reductions add the
// same elements in the same order along their physical axes); every spatial op of the
// rewritten graph is NHWC, transposes stand only at the layout's edges, and graphs without
// convolutions come back as they were.
#include "graph/channels_last.h"
#include "static/passes/pass.h"
#include "tests/common/models.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {
namespace {

const PassSet kChannelsLast = PassSet::only(PassId::channels_last);

// ResNet-20's shape (three stages of three basic blocks) at 8 x 8 and width 4, which the
// CPU's reference convolutions train in a moment.
ResNetConfig resnet20_small() { return resnet_config(2, 8, 4, 3, 5); }
VggConfig vgg_small() { return vgg_config(2, 8, 4, {1, 2}, 8, 5); }

Graph training_graph(const ModelFn& model, Precision precision, PassSet passes) {
  CompileOptions o;
  o.precision = precision;
  o.passes = passes;
  return *compile(model, o).graph;
}

struct PlanPair {
  CompiledPlan nchw, nhwc;
};
// The model compiled with `base` passes, and with channels_last added.
PlanPair compile_both(const ModelFn& model, CompileOptions o, PassSet base) {
  o.passes = base;
  PlanPair p{compile(model, o), {}};
  o.passes = base.with(PassId::channels_last);
  p.nhwc = compile(model, o);
  return p;
}

// Trains `steps` steps NCHW and NHWC: the same losses and parameters, bit for bit.
void check_trains_alike(const ModelFn& model, Precision precision, PassSet base, int steps) {
  CompileOptions o;
  o.precision = precision;
  PlanPair p = compile_both(model, o, base);
  CHECK(check_plan(*p.nhwc.graph, p.nhwc.exec->order(), p.nhwc.memory()) == "");
  check_same_steps(p.nchw, p.nhwc, steps);
}

void check_infers_alike(const ModelFn& model, PassSet base) {
  CompileOptions o;
  o.training = false;
  PlanPair p = compile_both(model, o, base);
  const Feeds feeds = feeds_from(*p.nchw.graph, make_values(*p.nchw.graph, 5));
  p.nchw.run(feeds);
  p.nhwc.run(feeds);
  const std::string out = p.nchw.graph->values[static_cast<size_t>(p.nchw.prediction)].name;
  CHECK(bitwise_diff(p.nhwc.read(out), p.nchw.read(out)) == "");
}

// Every op with a layout reads NHWC activations.
void check_all_nhwc(const Graph& g) {
  int spatial = 0;
  for (const Node& n : g.nodes) {
    if (!op_has_channels_last(n.op)) continue;
    ++spatial;
    CAPTURE(n.name);
    CHECK((n.attrs.conv.channels_last || n.attrs.channels_last));
  }
  CHECK(spatial > 0);
}

// Trains `model` NCHW and NHWC, alone and after every pass, f32 and bf16; the NHWC step
// has every spatial op NHWC and `transposes` transposes.
void check_model(const ModelFn& model, int transposes) {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    const std::string precision = precision_name(p);
    CAPTURE(precision);
    check_trains_alike(model, p, PassSet::none(), 2);
    check_trains_alike(model, p, PassSet::all(), 2);
  }
  const Graph g = training_graph(model, Precision::fp32, kChannelsLast);
  check_all_nhwc(g);
  CHECK(count(g, OpKind::transpose) == transposes);
}

}  // namespace

TEST_CASE("channels_last: ResNet-20 trains to the NCHW graph's bits, f32 and bf16, alone and after every pass") {
  // The image into the stem's convolution: one transpose in all. The stem's input gradient,
  // which no loss needs, is not computed, and the global average pool and its gradient follow
  // the layout ([N, H, W, C] reduced over W, then H), so the classifier needs none.
  check_model(resnet_model(resnet20_small()), 1);
}

TEST_CASE("channels_last: the VGG network trains to the NCHW graph's bits, f32 and bf16, alone and after every pass") {
  // The image in; the last pool's output out to the classifier's flatten, and its gradient
  // back into max_pool2d_grad: three transposes.
  check_model(vgg_model(vgg_small()), 3);
}

TEST_CASE("channels_last: inference with the folded batch norms and fused convolutions, to the NCHW bits") {
  check_infers_alike(resnet_model(without_loss(resnet20_small())), PassSet::none());
  check_infers_alike(resnet_model(without_loss(resnet20_small())), PassSet::all());
  check_infers_alike(vgg_model(without_loss(vgg_small())), PassSet::all());
}

TEST_CASE("channels_last: a graph output keeps its name and NCHW, and values keep theirs") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", Shape{1, 2, 5, 5});
    ConvAttr a;
    a.pads = {1, 1, 1, 1};
    const Value y = conv2d(b, x, b.parameter("w", Shape{3, 2, 3, 3}), a);
    b.mark_output(relu(b, y));
    b.mark_output(y);
  });
  const Graph out = check_same_graph(g, kChannelsLast);
  for (int v : g.outputs) {
    const int same = out.find_value(g.values[static_cast<size_t>(v)].name);
    REQUIRE(same >= 0);
    CHECK(out.values[static_cast<size_t>(same)].shape == g.values[static_cast<size_t>(v)].shape);
  }
  for (const ValueInfo& v : g.values) CHECK(out.find_value(v.name) >= 0);
  // x in; the conv's output out (an output itself) and the ReLU's out.
  CHECK(count(out, OpKind::transpose) == 3);
}

TEST_CASE("channels_last: graphs without convolutions come back as they were") {
  for (const ModelFn& model : {mlp_model(mlp_config(4, 8, 16, 2, 3)), transformer_model(transformer_config(2, 8, 16, 2))}) {
    CompileOptions o;
    o.passes = PassSet::none();
    const Graph g = *compile(model, o).graph;
    const Graph out = pass_channels_last(g);
    REQUIRE(out.nodes.size() == g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      CHECK(out.nodes[i].op == g.nodes[i].op);
      CHECK(out.nodes[i].inputs == g.nodes[i].inputs);
      CHECK(out.nodes[i].attrs == g.nodes[i].attrs);
    }
    for (size_t v = 0; v < g.values.size(); ++v) CHECK(out.values[v].shape == g.values[v].shape);
  }
}

TEST_CASE("channels_last: an option beside all, named in --passes") {
  CHECK_FALSE(PassSet::all().has(PassId::channels_last));
  CHECK(parse_passes("channels_last") == kChannelsLast);
  CHECK(parse_passes("all,channels_last").str() == "all,channels_last");
  CHECK(parse_passes(parse_passes("all,channels_last").str()) == PassSet::all().with(PassId::channels_last));
}

}  // namespace tg::testing
