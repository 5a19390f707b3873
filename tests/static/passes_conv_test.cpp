// The passes of convolutional networks (static/passes/conv.cpp) on the CPU: the conv pass
// keeps a graph's bits (its fused kernel computes the convolution, then the unfused ops'
// adds and ReLU in their order); the batch norm fold changes the rounding (w s and
// beta - mean s are rounded before the convolution sums), so it is checked within a
// tolerance, on random inputs, weights and running statistics written into the parameter
// store after compiling: the fold runs at every step, on the parameters' current values.
#include "graph/builder.h"
#include "tests/common/models.h"
#include "tests/static/conv_passes_util.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {
namespace {

ConvAttr same_3x3() {
  ConvAttr a;
  a.pads = {1, 1, 1, 1};
  return a;
}

// relu(conv2d_bias(x, w, c) + r): the conv pass's whole pattern.
Graph conv_bias_residual_relu() {
  return recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", Shape{2, 3, 6, 6});
    const Value w = b.parameter("w", Shape{4, 3, 3, 3});
    const Value c = b.parameter("c", Shape{4}, ParamInit(ParamInit::Kind::uniform, 0.5f));
    const Value r = b.input("r", Shape{2, 4, 6, 6});
    b.mark_output(relu(b, add(b, conv2d_bias(b, x, w, c, same_3x3()), r)));
  });
}

// A 3x3 conv of `groups` with a batch norm, then a ReLU: one conv2d_bias_act after both passes.
ModelFn conv_bn_relu(bool conv_bias, int groups) {
  return [=](Builder& b) {
    ModelOutputs out;
    const Value x = b.input("x", Shape{2, 4, 7, 7});
    const Value w = b.parameter("conv.w", Shape{6, 4 / groups, 3, 3});
    ConvAttr a = same_3x3();
    a.groups = groups;
    const Value y = conv_bias ? conv2d_bias(b, x, w, b.parameter("conv.b", Shape{6}), a) : conv2d(b, x, w, a);
    const Value gamma = b.parameter("bn.gamma", Shape{6});
    const Value beta = b.parameter("bn.beta", Shape{6});
    const Value stats = b.parameter("bn.stats", Shape{2, 6}, ParamInit(ParamInit::Kind::constant, 1.0f));
    out.prediction = relu(b, batch_norm_inference(b, y, gamma, beta, stats));
    return out;
  };
}

}  // namespace

TEST_CASE("conv pass: bias, residual and ReLU in the convolution's epilogue, to the unfused graph's bits") {
  const Graph out = check_same_graph(conv_bias_residual_relu(), PassSet::only(PassId::conv));
  CHECK(count(out, OpKind::conv2d_bias_add_act) == 1);
  for (OpKind op : {OpKind::conv2d, OpKind::add, OpKind::relu, OpKind::broadcast}) CHECK(count(out, op) == 0);
  for (const Node& n : out.nodes)
    if (n.op == OpKind::conv2d_bias_add_act) CHECK(n.attrs.act == Act::relu);
}

TEST_CASE("conv pass: the VGG network's convolutions fused, inference and training, to the unfused bits") {
  const VggConfig c = vgg_config(2, 8, 4, {1, 2}, 8, 5);
  const PassSet conv = PassSet::only(PassId::conv);
  check_same_inference(vgg_model(without_loss(c)), conv);
  // In training the backward ops read the ReLU's output, which the fused op writes, and the
  // convolution's inputs: the fused graph trains to the same bits.
  check_same_training(vgg_model(c), conv, 2);
  CompileOptions o;
  o.passes = conv;
  CompiledPlan p = compile(vgg_model(c), o);
  CHECK(count(*p.graph, OpKind::conv2d) == 0);
  CHECK(count(*p.graph, OpKind::conv2d_bias_act) == 3);
}

TEST_CASE("conv pass: a convolution whose sum another node reads keeps it") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", Shape{1, 2, 5, 5});
    const Value y = conv2d_bias(b, x, b.parameter("w", Shape{3, 2, 3, 3}), b.parameter("c", Shape{3}), same_3x3());
    b.mark_output(relu(b, y));
    b.mark_output(y);  // the pre-activation sum is an output: the ReLU stays apart
  });
  const Graph out = check_same_graph(g, PassSet::only(PassId::conv));
  CHECK(count(out, OpKind::conv2d_bias_act) == 1);
  CHECK(count(out, OpKind::relu) == 1);
}

TEST_CASE("bn_fold: folded vs unfolded on random running statistics, f32, bf16 and f16") {
  for (const FoldTol& t : kFoldTols)
    for (const bool conv_bias : {false, true})
      for (const int groups : {1, 2}) {
        INFO("precision ", std::string(precision_name(t.precision)));
        CAPTURE(conv_bias);
        CAPTURE(groups);
        FoldRun r = compile_pair(conv_bn_relu(conv_bias, groups), t.precision, PassSet::only(PassId::bn_fold)
                                                                                    .with(PassId::conv), 3);
        CHECK(count(*r.folded.graph, OpKind::batch_norm_inference) == 0);
        CHECK(count(*r.folded.graph, OpKind::batch_norm_fold) == (conv_bias ? 2 : 1));
        CHECK(count(*r.folded.graph, OpKind::conv2d_bias_act) == 1);
        CHECK(count(*r.folded.graph, OpKind::relu) == 0);
        for (uint64_t i = 0; i < 2; ++i) {
          const Feeds f = feeds_from(*r.plain.graph, make_values(*r.plain.graph, 20 + i));
          r.plain.run(f);
          r.folded.run(f);
          const std::vector<float> want = r.plain.read(r.plain.prediction);
          const double s = t.precision == Precision::fp32 ? 1.0 : scale_of(want);
          CHECK(excess(r.folded.read(r.folded.prediction), want, t.atol * s, t.rtol) <= 0);
        }
      }
}

TEST_CASE("bn_fold and conv: ResNet-20 inference with every pass, folded vs unfolded") {
  const ResNetConfig c = without_loss(resnet_config(2, 8, 4, 3, 5));
  for (const FoldTol& t : kFoldTols) {
    INFO("precision ", std::string(precision_name(t.precision)));
    FoldRun r = compile_pair(resnet_model(c), t.precision, PassSet::all(), 5);
    // Every batch norm folded (the stem's, two a block, and the two projections'), every
    // convolution fused: the second of each block with its residual and ReLU.
    const int blocks = 3 * c.blocks, norms = 1 + 2 * blocks + 2;
    const Graph& g = *r.folded.graph;
    CHECK(count(*r.plain.graph, OpKind::batch_norm_inference) == norms);
    CHECK(count(g, OpKind::batch_norm_inference) == 0);
    CHECK(count(g, OpKind::batch_norm_fold) == norms);
    CHECK(count(g, OpKind::conv2d) == 0);
    CHECK(count(g, OpKind::conv2d_bias_add_act) == blocks);
    CHECK(count(g, OpKind::conv2d_bias_act) == norms - blocks);
    CHECK(count(g, OpKind::relu) == 0);
    CHECK(count(g, OpKind::add) == 0);
    for (const Node& n : g.nodes)
      if (n.op == OpKind::conv2d_bias_add_act) CHECK(n.attrs.act == Act::relu);
    // Nothing left unread: in 16 bits the fold reads the f32 weight, and the weight's cast that
    // the convolution read goes with it.
    std::vector<int> readers(g.values.size(), 0);
    for (const Node& n : g.nodes)
      for (int v : n.inputs) ++readers[static_cast<size_t>(v)];
    for (int v : g.outputs) ++readers[static_cast<size_t>(v)];
    for (const Node& n : g.nodes) {
      CAPTURE(n.name);
      CHECK(readers[static_cast<size_t>(n.outputs[0])] > 0);
    }
    const Feeds f = feeds_from(*r.plain.graph, make_values(*r.plain.graph, 30));
    r.plain.run(f);
    r.folded.run(f);
    const std::vector<float> want = r.plain.read(r.plain.prediction);
    const double s = scale_of(want), k = kNetworkFoldTolFactor;
    CHECK(excess(r.folded.read(r.folded.prediction), want, k * t.atol * s, k * t.rtol) <= 0);
  }
}

namespace {

// The ResNet-20 the rows pass's batch norm cases train, and its batch norms: the stem's, two
// a block, the two projections'.
const ResNetConfig kRowsResNet = resnet_config(2, 8, 4, 1, 5);
const int kRowsNorms = 1 + 2 * 3 * kRowsResNet.blocks + 2;

// kRowsResNet in precision p, compiled without passes and with the rows pass alone.
struct RowsPair {
  CompiledPlan unfused, plan;
};
RowsPair rows_pair(Precision p) {
  CompileOptions o;
  o.precision = p;
  CompiledPlan unfused = compile(resnet_model(kRowsResNet), o);
  o.passes = PassSet::only(PassId::rows);
  return {std::move(unfused), compile(resnet_model(kRowsResNet), o)};
}

}  // namespace

// The rows pass's batch norm part: each batch norm's three gradients become one
// batch_norm_grad, whose [2, C] second output the parameter gradients are views of.
TEST_CASE("rows pass: a batch norm's three gradients as one op, ResNet-20 training to the unfused bits") {
  const int norms = kRowsNorms;
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    auto [unfused, plan] = rows_pair(p);
    CHECK(check_plan(*plan.graph, plan.exec->order(), plan.memory()) == "");
    check_same_steps(unfused, plan, 3);
    const Graph& g = *plan.graph;
    CHECK(count(g, OpKind::batch_norm_grad) == norms);
    for (OpKind op : {OpKind::batch_norm_grad_x, OpKind::batch_norm_grad_gamma, OpKind::batch_norm_grad_beta})
      CHECK(count(g, op) == 0);
    // Each gradient row is a view: no bytes of its own in the plan.
    int views = 0;
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::slice || g.values[static_cast<size_t>(n.inputs[0])].producer < 0 ||
          g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(n.inputs[0])].producer)].op != OpKind::batch_norm_grad)
        continue;
      views += plan.memory().placement[static_cast<size_t>(n.outputs[0])] == Placement::view;
    }
    MESSAGE(precision_name(p), ": ", views, " of ", 2 * norms, " gradient rows are views");
    CHECK(views > 0);
  }
}

// The rows pass's running-statistics part: each training batch norm becomes batch_norm_moments
// and its statistics' update a blend of the moments, which takes the update's bits; a relu that
// alone reads its output becomes its epilogue.
TEST_CASE("rows pass: running statistics from the batch norm's own moments, ResNet-20 training to the unfused bits") {
  const int norms = kRowsNorms;
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    auto [unfused, plan] = rows_pair(p);
    const Graph& g = *plan.graph;
    CHECK(count(*unfused.graph, OpKind::batch_norm_stats_update) == norms);
    CHECK(count(g, OpKind::batch_norm_moments) == norms);
    CHECK(count(g, OpKind::batch_norm_stats_blend) == norms);
    for (OpKind op : {OpKind::batch_norm, OpKind::batch_norm_stats_update}) CHECK(count(g, op) == 0);
    // The relus that read a batch norm's output alone became its epilogue.
    int with_relu = 0;
    for (const Node& n : g.nodes) with_relu += n.op == OpKind::batch_norm_moments && n.attrs.act == Act::relu;
    CHECK(with_relu > 0);
    CHECK(count(g, OpKind::relu) == count(*unfused.graph, OpKind::relu) - with_relu);
    // Every parameter after the steps, the running statistics included, has the unfused bits.
    check_same_steps(unfused, plan, 3);
  }
}

TEST_CASE("rows pass: batch norm gradients fused with every pass and NHWC, to the unfused bits") {
  const ResNetConfig c = resnet_config(2, 8, 4, 1, 5);
  check_same_training(resnet_model(c), PassSet::all(), 2);
  // NHWC: the fused op's dx takes the layout, its [2, C] output none.
  CompileOptions nhwc;
  nhwc.passes = PassSet::only(PassId::channels_last);
  CompiledPlan a = compile(resnet_model(c), nhwc);
  nhwc.passes = PassSet::only(PassId::channels_last).with(PassId::rows);
  CompiledPlan b = compile(resnet_model(c), nhwc);
  CHECK(count(*b.graph, OpKind::batch_norm_grad) > 0);
  check_same_steps(a, b, 2);
}

TEST_CASE("bn_fold: a training graph (batch statistics) has nothing to fold") {
  const ModelFn m = resnet_model(resnet_config(2, 8, 4, 1, 5));
  CompileOptions o;
  o.passes = PassSet::only(PassId::bn_fold);
  CompiledPlan p = compile(m, o);
  CHECK(count(*p.graph, OpKind::batch_norm_fold) == 0);
  CHECK(count(*p.graph, OpKind::batch_norm) > 0);
}

}  // namespace tg::testing
