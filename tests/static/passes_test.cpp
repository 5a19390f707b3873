// The graph passes (static/passes): each pattern on a graph made for it, the cases it
// must leave alone, and every pass on the built-in models: the rewritten graph is
// valid, has the fused ops, and on the CPU (whose fused kernels compute exactly what
// the ops they replace compute) trains to the same bits as the unfused graph.
#include <doctest/doctest.h>

#include <array>

#include <algorithm>

#include "graph/builder.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "kernels/interpreter.h"
#include "static/compiler.h"
#include "static/passes/pass.h"
#include "static/planner.h"
#include "tests/common/models.h"
#include "tests/static/passes_test_util.h"
#include "tests/static/static_test_util.h"

namespace tg::testing {


TEST_CASE("passes: parse and print the pass sets") {
  CHECK(parse_passes("none").empty());
  CHECK(parse_passes("all") == PassSet::all());
  CHECK(parse_passes("linear").has(PassId::linear));
  CHECK_FALSE(parse_passes("linear").has(PassId::rows));
  CHECK(parse_passes("linear,rows,optimizer,low_copies,vocab_pad,elementwise,lanes,heads,attention,conv,bn_fold") ==
        PassSet::all());
  CHECK_FALSE(parse_passes("linear,rows,optimizer,low_copies,elementwise,lanes,heads,conv,bn_fold") == PassSet::all());
  CHECK_FALSE(parse_passes("linear,rows,optimizer,elementwise,lanes,heads,conv,bn_fold") == PassSet::all());
  CHECK_FALSE(parse_passes("linear,rows") == PassSet::all());
  CHECK_FALSE(parse_passes("linear,rows,optimizer,elementwise,lanes") == PassSet::all());
  CHECK(parse_passes("optimizer,rows").str() == "rows,optimizer");  // printed in pipeline order
  CHECK(PassSet::only(PassId::rows).str() == "rows");
  CHECK(PassSet::none().str() == "none");
  CHECK(PassSet::all().str() == "all");
  CHECK(PassSet::all().has(PassId::heads));
  CHECK(parse_passes("all,heads") == PassSet::all());
  CHECK(parse_passes("heads,all").str() == "all");
  CHECK(parse_passes(parse_passes("heads,rows").str()) == PassSet::only(PassId::heads).with(PassId::rows));
  CHECK(parse_passes("heads,rows").str() == "heads,rows");  // pipeline order: heads first
  CHECK_THROWS_WITH_AS(parse_passes("all,all"), doctest::Contains("'all' is given twice"), std::invalid_argument);
  CHECK(parse_passes("all,rows") == PassSet::all());  // a pass all holds, named too: either order
  CHECK(parse_passes("rows,all") == PassSet::all());
  CHECK(parse_passes("rows,linear,elementwise,optimizer,lanes,all") == PassSet::all());
  CHECK(parse_passes("conv,bn_fold").str() == "bn_fold,conv");
  CHECK_THROWS_WITH_AS(parse_passes("lineer"), doctest::Contains("'lineer' is not a pass"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes("rows,rows"), doctest::Contains("given twice"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes(""), doctest::Contains("is not a pass"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_passes("rows,"), doctest::Contains("is not a pass"), std::invalid_argument);
}

TEST_CASE("linear pass: matmul + bias_add + relu is one linear, and a value read twice or a graph output stays") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value h = relu(b, bias_add(b, matmul(b, x, b.parameter("w", {6, 5})), b.parameter("b", {5})));
    b.mark_output(h);
  });
  const Graph f = pass_linear(g);
  validate(f);
  CHECK(f.nodes.size() == 1);
  CHECK(f.nodes[0].op == OpKind::linear);
  CHECK(f.nodes[0].attrs.act == Act::relu);
  CHECK(f.values[static_cast<size_t>(f.outputs[0])].name == g.values[static_cast<size_t>(g.outputs[0])].name);

  // The pre-activation is an output too: bias_add + matmul fuse, the relu stays.
  const Graph g2 = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value z = bias_add(b, matmul(b, x, b.parameter("w", {6, 5})), b.parameter("b", {5}));
    b.mark_output(relu(b, z));
    b.mark_output(z);
  });
  const Graph f2 = pass_linear(g2);
  validate(f2);
  CHECK(count(f2, OpKind::linear) == 1);
  CHECK(count(f2, OpKind::relu) == 1);

  // The product is read twice: nothing fuses.
  const Graph g3 = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value p = matmul(b, x, b.parameter("w", {6, 5}));
    b.mark_output(add(b, bias_add(b, p, b.parameter("b", {5})), p));
  });
  const Graph f3 = pass_linear(g3);
  CHECK(count(f3, OpKind::matmul) == 1);
  CHECK(count(f3, OpKind::linear) == 0);
}

TEST_CASE("linear pass: relu_grad and gelu_grad of a backward product go into its epilogue, once per product") {
  // The MLP's backward: every relu_grad reads dz W^T of the layer above.
  const MlpConfig m = mlp_config(4, 6, 8, 4, 3);
  const Graph train = build_training_graph(mlp_model(m));
  const Graph ft = pass_linear(train);
  validate(ft);
  CHECK(count(train, OpKind::relu_grad) == 3);
  CHECK(count(ft, OpKind::relu_grad) == 0);
  CHECK(count(ft, OpKind::matmul_act_grad) == 3);
  for (const Node& n : ft.nodes)
    if (n.op == OpKind::matmul_act_grad) {
      CHECK(n.attrs.act == Act::relu);
      CHECK(n.attrs.trans_b);  // dz W^T
    }

  // gelu_grad(dz W^T, x), and a product read twice (also an output) that stays a matmul.
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value dz = b.input("dz", {4, 5});
    const Value x = b.input("x", {4, 6});
    const Value w = b.parameter("w", {6, 5});
    b.mark_output(b.apply(OpKind::gelu_grad, {matmul(b, dz, w, false, true), x}));
    const Value p = matmul(b, dz, w, false, true);
    b.mark_output(b.apply(OpKind::relu_grad, {p, x}));
    b.mark_output(p);
  });
  const Graph f = pass_linear(g);
  validate(f);
  CHECK(count(f, OpKind::matmul_act_grad) == 1);
  CHECK(count(f, OpKind::matmul) == 1);
  CHECK(count(f, OpKind::relu_grad) == 1);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::matmul_act_grad) CHECK(n.attrs.act == Act::gelu);
}

TEST_CASE("linear pass: GELU fuses in inference, not where gelu_grad reads its input") {
  TransformerConfig t = transformer_config(2, 4, 8, 2);
  const Graph infer = build_inference_graph(transformer_model(without_loss(t)));
  const Graph fi = pass_linear(infer);
  validate(fi);
  CHECK(count(fi, OpKind::gelu) == 0);
  CHECK(count(fi, OpKind::bias_add) == 0);
  CHECK(count(fi, OpKind::linear_add) == 2);  // both residuals
  const Graph train = build_training_graph(transformer_model(t));
  const Graph ft = pass_linear(train);
  validate(ft);
  CHECK(count(ft, OpKind::gelu) == 1);
  CHECK(count(ft, OpKind::matmul_bias_grad) == 6);  // q, k, v, o, fc1, fc2
  CHECK(count(ft, OpKind::matmul_add) >= 2);        // the accumulated gradients of h (q, k and v)
  CHECK(count(ft, OpKind::matmul_act_grad) == 1);   // gelu_grad(dz fc2^T, fc1's output)
  CHECK(count(ft, OpKind::gelu_grad) == 0);
}

TEST_CASE("rows pass: the attention scale folds into softmax and its gradient, and layernorm's parameter gradients are one op") {
  const Graph train = build_training_graph(transformer_model(transformer_config(2, 4, 8, 2)));
  const Graph f = pass_rows(train);
  validate(f);
  CHECK(count(train, OpKind::scale) - count(f, OpKind::scale) == 2);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::softmax || n.op == OpKind::softmax_grad) CHECK(n.attrs.alpha != 1.0f);
  CHECK(count(f, OpKind::layernorm_grad_gamma) == 0);
  CHECK(count(f, OpKind::layernorm_grad_params) == 2);
}


TEST_CASE("rows pass: an f32 layernorm's cast becomes layernorm_cast, with the pair's bits also in the interpreter") {
  for (DType ln_dtype : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(ln_dtype));
    const Graph g = recorded([&](RecordingBuilder& b) {
      const Value x = b.input("x", {4, 8}, ln_dtype);
      const Value y = layernorm(b, x, b.parameter("gamma", {8}, {}, ln_dtype), b.parameter("beta", {8}, {}, ln_dtype));
      b.mark_output(cast(b, y, ln_dtype == DType::F32 ? DType::BF16 : DType::F32));
    });
    const Graph f = pass_rows(g);
    validate(f);
    // From 16 bits the pair rounds twice and the fused kernel would round once: no fusion.
    CHECK(count(f, OpKind::layernorm_cast) == (ln_dtype == DType::F32 ? 1 : 0));
    std::vector<std::vector<float>> a = make_values(g, 3), b = make_values(f, 3);
    for (size_t v = 0; v < f.values.size(); ++v)  // the same leaves, by name
      if (f.values[v].producer < 0) b[v] = a[static_cast<size_t>(g.find_value(f.values[v].name))];
    interpret(g, a);
    interpret(f, b);
    CHECK(bitwise_diff(b[static_cast<size_t>(f.outputs[0])], a[static_cast<size_t>(g.outputs[0])]) == "");
  }
}

TEST_CASE("rows pass: under autocast the layernorm gradients read their 16-bit dy, the same bits") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const Graph train = build_training_graph(with_precision(transformer_model(transformer_config(2, 4, 8, 2)), p));
    const Graph f = pass_rows(train);
    validate(f);
    int low_dy = 0, lowgrad = 0;
    for (const Node& n : f.nodes) {
      if (op_traits(n.op).dtype_rule != op_table::kTypeLowGrad) continue;
      ++lowgrad;
      low_dy += f.values[static_cast<size_t>(n.inputs[0])].dtype == precision_dtype(p);
    }
    // Two layernorms: their params, and the input gradient of the one whose input has one, read
    // the gradient of the cast after their layernorm as it is.
    CHECK(lowgrad == 3);
    CHECK(low_dy == lowgrad);
    for (const Node& r : f.nodes)  // no widened copy of a dy is left for them
      if (op_traits(r.op).dtype_rule == op_table::kTypeLowGrad) {
        const int from = f.values[static_cast<size_t>(r.inputs[0])].producer;
        CHECK((from < 0 || f.nodes[static_cast<size_t>(from)].op != OpKind::cast));
      }
    std::vector<std::vector<float>> a = make_values(train, 5), b = make_values(f, 5);
    for (size_t v = 0; v < f.values.size(); ++v)  // the same leaves, by name
      if (f.values[v].producer < 0) b[v] = a[static_cast<size_t>(train.find_value(f.values[v].name))];
    interpret(train, a);
    interpret(f, b);
    // Every value both graphs have (the outputs, the gradients, the updated parameters): the same bits.
    int compared = 0;
    for (size_t v = 0; v < f.values.size(); ++v) {
      const int same = train.find_value(f.values[v].name);
      if (same < 0) continue;
      CAPTURE(f.values[v].name);
      CHECK(bitwise_diff(b[v], a[static_cast<size_t>(same)]) == "");
      ++compared;
    }
    CHECK(compared > 20);
  }
}

TEST_CASE("heads pass: attention reads q, k, v and writes the context in the linear layers' layout, no transposes") {
  const TransformerConfig t = transformer_config(2, 4, 8, 2);
  const Graph infer = build_inference_graph(transformer_model(without_loss(t)));
  REQUIRE(count(infer, OpKind::transpose) == 4);  // q, k, v split, the context merged
  const Graph fi = pass_heads(infer);
  validate(fi);
  CHECK(count(fi, OpKind::transpose) == 0);
  CHECK(count(fi, OpKind::matmul) == count(infer, OpKind::matmul) - 2);  // the linear layers stay
  CHECK(count(fi, OpKind::matmul_heads) == 2);
  for (const Node& n : fi.nodes) {
    if (n.op != OpKind::matmul_heads) continue;
    CHECK(n.attrs.heads.count == 2);
    if (n.attrs.trans_b) {  // q k^T: both head views, the scores packed
      CHECK((n.attrs.heads.a && n.attrs.heads.b && !n.attrs.heads.out));
    } else {  // p v: v a head view, the context merged
      CHECK((!n.attrs.heads.a && n.attrs.heads.b && n.attrs.heads.out));
    }
  }
  // Training: the backward products too (their splits and merges are autodiff's mirrors).
  const Graph train = build_training_graph(transformer_model(t));
  REQUIRE(count(train, OpKind::transpose) == 8);
  const Graph ft = pass_heads(train);
  validate(ft);
  CHECK(count(ft, OpKind::transpose) == 0);
  CHECK(count(ft, OpKind::matmul_heads) == 6);  // scores, context; dscores, dv; dq, dk
  // The other passes still find their patterns on the rewritten graph.
  const Graph all = run_passes(train, PassSet::all());
  validate(all);
  CHECK(count(all, OpKind::transpose) == 0);
  CHECK(count(all, OpKind::matmul_heads) == 6);
  CHECK(count(all, OpKind::matmul_bias_grad) == 6);
}

TEST_CASE("heads pass: a split that another op reads stays for it, a matmul of other shapes is left alone") {
  // q's split read by the product and by a relu: the product reads the head view, the
  // transpose stays for the relu.
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", Shape{2, 3, 8});
    const std::array<int, kMaxRank> swap{{0, 2, 1, 3}};
    const Value q = reshape(b, transpose(b, reshape(b, x, Shape{2, 3, 2, 4}), swap), Shape{4, 3, 4});
    const Value s = matmul(b, q, q, false, true);
    b.mark_output(s);
    b.mark_output(relu(b, q));
    b.mark_output(matmul(b, b.input("y", Shape{2, 5, 6}), b.input("z", Shape{2, 6, 3})));
  });
  const Graph f = pass_heads(g);
  validate(f);
  CHECK(count(f, OpKind::matmul_heads) == 1);
  CHECK(count(f, OpKind::transpose) == 1);
  CHECK(count(f, OpKind::matmul) == 1);  // [2,5,6] x [2,6,3]: no head view
  for (const Node& n : f.nodes)
    if (n.op == OpKind::matmul_heads) CHECK((n.attrs.heads.a && n.attrs.heads.b && !n.attrs.heads.out));
}

TEST_CASE("heads pass: a chain that is one matmul's merge and the next one's split is taken once") {
  // With one head and one row per matrix the merge [2,1,4] -> [2,1,1,4] -> [2,1,4] has the
  // shapes of a split too: the rewrite must not leave the second matmul reading a value
  // the first one no longer writes.
  const Graph g = recorded([](RecordingBuilder& b) {
    const std::array<int, kMaxRank> swap{{0, 2, 1, 3}};
    const Value m1 = matmul(b, b.input("a", Shape{2, 1, 3}), b.input("w", Shape{2, 3, 4}));
    const Value merged = reshape(b, transpose(b, reshape(b, m1, Shape{2, 1, 1, 4}), swap), Shape{2, 1, 4});
    b.mark_output(matmul(b, merged, b.input("z", Shape{2, 4, 5})));
  });
  const Graph f = pass_heads(g);
  validate(f);
  CHECK(count(f, OpKind::matmul_heads) == 1);
}

TEST_CASE("heads pass: the transformer trains and predicts with the unfused graph's bits on the CPU") {
  const ModelFn tfm = transformer_model(transformer_config(2, 8, 16, 2));
  check_same_training(tfm, PassSet::only(PassId::heads), 3);
  check_same_training(tfm, PassSet::all(), 3);
  check_same_inference(transformer_model(without_loss(transformer_config(2, 8, 16, 2))), PassSet::only(PassId::heads));
  check_same_inference(transformer_model(without_loss(transformer_config(2, 8, 16, 2))), PassSet::all());
}

TEST_CASE("every pass on the built-in models: fewer nodes, a sound plan, the unfused graph's bits on the CPU") {
  const ModelFn mlp = mlp_model(mlp_config(6, 12, 16, 3, 5));
  const ModelFn tfm = transformer_model(transformer_config(2, 8, 16, 2));
  const ModelFn mlp_ce = mlp_model(mlp_config(6, 12, 16, 3, 5, MlpConfig::Loss::cross_entropy));
  for (PassSet set : {PassSet::only(PassId::linear), PassSet::all()}) {
    CAPTURE(set.str());
    check_same_training(mlp, set, 4);
    check_same_training(mlp_ce, set, 3);
    check_same_training(tfm, set, 3);
    check_same_inference(mlp_model(without_loss(mlp_config(6, 12, 16, 3, 5))), set);
    check_same_inference(transformer_model(without_loss(transformer_config(2, 8, 16, 2))), set);
  }
  check_same_training(tfm, PassSet::only(PassId::rows), 3);
  for (PassId p : {PassId::elementwise, PassId::optimizer}) {
    CAPTURE(pass_name(p));
    check_same_training(mlp, PassSet::only(p), 4);
    check_same_training(mlp_ce, PassSet::only(p), 3);
    check_same_training(tfm, PassSet::only(p), 3);
  }
  check_same_inference(mlp_model(without_loss(mlp_config(6, 12, 16, 3, 5))), PassSet::only(PassId::elementwise));
  check_same_inference(transformer_model(without_loss(transformer_config(2, 8, 16, 2))),
                       PassSet::only(PassId::elementwise));
}

TEST_CASE("lanes pass: the weight gradients and the updates go to the side stream, and their values live to the end") {
  const Graph step = run_passes(build_training_graph(mlp_model(mlp_config(6, 12, 16, 3, 5))),
                                PassSet::only(PassId::linear).with(PassId::optimizer));
  const std::vector<int> order = step.topo_order();
  const std::vector<bool> side = side_lane_nodes(step, order);
  int marked = 0;
  for (size_t n = 0; n < step.nodes.size(); ++n) {
    const OpKind op = step.nodes[n].op;
    CAPTURE(op_name(op));
    // The weight (and bias) gradients of the three layers and the one update, nothing else.
    CHECK(side[n] == (op == OpKind::matmul_bias_grad || op == OpKind::sgd_momentum_multi));
    marked += side[n] ? 1 : 0;
  }
  CHECK(marked == 4);
  // The unfused step: the weight-gradient GEMMs, the bias gradients' column sums (read only
  // by their updates too) and every update.
  const Graph plain = build_training_graph(mlp_model(mlp_config(6, 12, 16, 3, 5)));
  const std::vector<bool> plain_side = side_lane_nodes(plain, plain.topo_order());
  for (size_t n = 0; n < plain.nodes.size(); ++n) {
    const OpKind op = plain.nodes[n].op;
    CAPTURE(op_name(op));
    const bool weight_grad = op == OpKind::matmul && plain.nodes[n].attrs.trans_a;
    CHECK(plain_side[n] == (weight_grad || op == OpKind::reduce_sum || op_is_update(op)));
  }
  CHECK(std::count(plain_side.begin(), plain_side.end(), true) == 3 + 3 + 6);

  // The planner keeps every value a side node touches alive to the last step, and the
  // plan is sound with it.
  PlanOptions po;
  po.live_to_end = side;
  const MemoryPlan with = plan_memory(step, order, po), without = plan_memory(step, order);
  CHECK(check_plan(step, order, with).empty());
  const int last = static_cast<int>(order.size()) - 1;
  for (size_t n = 0; n < step.nodes.size(); ++n) {
    if (!side[n]) continue;
    for (int v : step.nodes[n].inputs)
      if (with.placement[static_cast<size_t>(v)] == Placement::arena) CHECK(with.last_step[static_cast<size_t>(v)] == last);
  }
  CHECK(with.arena_bytes >= without.arena_bytes);
}

TEST_CASE("lanes pass: a later node reading what a side node writes marks nothing") {
  // An update of w, then (in the schedule given) a node that reads w: the update must stay
  // in order, so the pass marks no node at all.
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value w = b.parameter("w", {4, 4});
    const Value x = b.input("x", {2, 4});
    const Value gw = matmul(b, x, x, true, false);  // [4,4], read only by the update
    Attrs lr;
    lr.lr = 0.1f;
    b.apply(OpKind::sgd, {w, gw}, lr);
    b.mark_output(matmul(b, x, w));
  });
  std::vector<int> order;
  int reader = -1;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op == OpKind::matmul && g.nodes[n].inputs[1] != g.nodes[n].inputs[0]) reader = static_cast<int>(n);
    else order.push_back(static_cast<int>(n));
  }
  REQUIRE(reader >= 0);
  order.push_back(reader);  // after the update
  const std::vector<bool> side = side_lane_nodes(g, order);
  CHECK(std::count(side.begin(), side.end(), true) == 0);
  // Read before the update, the same graph marks the gradient and the update.
  order.pop_back();
  order.insert(order.begin(), reader);
  const std::vector<bool> side2 = side_lane_nodes(g, order);
  CHECK(std::count(side2.begin(), side2.end(), true) == 2);
}

TEST_CASE("lanes pass, early updates: a large weight's update apart, moved up to where it can run, the serial bits") {
  // Four layers of 1024 x 1024 (4 MiB each, kEarlyUpdateBytes) but the last [1024, 10].
  const ModelFn big = mlp_model(mlp_config(8, 1024, 1024, 4, 10));
  const PassSet set = PassSet::only(PassId::linear).with(PassId::optimizer).with(PassId::lanes);
  PassOptions early;
  early.lanes_early_updates = true;
  const Graph step = run_passes(build_training_graph(big), set, early);
  CHECK(count(step, OpKind::sgd_momentum) == 3);        // w0, w1, w2, each alone
  CHECK(count(step, OpKind::sgd_momentum_multi) == 1);  // w3 and the biases, together
  const std::vector<int> topo = step.topo_order();
  const std::vector<bool> side = side_lane_nodes(step, topo, early);
  const std::vector<int> order = hoist_side_nodes(step, topo, side);
  REQUIRE(order.size() == topo.size());
  std::vector<int> at(step.nodes.size(), -1);
  for (size_t s = 0; s < order.size(); ++s) at[static_cast<size_t>(order[s])] = static_cast<int>(s);
  // Still a topological order, and every reader of a parameter comes before its update.
  int w2_update = -1, w1_reader = -1;
  for (size_t n = 0; n < step.nodes.size(); ++n) {
    const Node& node = step.nodes[n];
    CHECK(at[n] >= 0);
    for (int in : node.inputs) {
      const int p = step.values[static_cast<size_t>(in)].producer;
      if (p >= 0) CHECK(at[static_cast<size_t>(p)] < at[n]);
    }
    if (node.op != OpKind::sgd_momentum) continue;
    const std::string& param = step.values[static_cast<size_t>(node.inputs[0])].name;
    for (size_t r = 0; r < step.nodes.size(); ++r)
      if (r != n && std::count(step.nodes[r].inputs.begin(), step.nodes[r].inputs.end(), node.inputs[0]) > 0) {
        CHECK(at[r] < at[n]);
        if (param == "mlp.l1.w" && step.nodes[r].op == OpKind::matmul_act_grad) w1_reader = static_cast<int>(r);
      }
    if (param == "mlp.l2.w") w2_update = static_cast<int>(n);
  }
  // w2's update no longer waits for the end of the step: it is issued before the input
  // gradient of layer 1 (which reads w1) runs.
  REQUIRE(w2_update >= 0);
  REQUIRE(w1_reader >= 0);
  CHECK(at[static_cast<size_t>(w2_update)] < at[static_cast<size_t>(w1_reader)]);
  // And the compiled step (this order, this plan) trains to the unfused graph's bits.
  check_same_training(big, set, 2, with_pass_options(early));
}

TEST_CASE("passes: compile records their time and what each did") {
  CompileOptions o;
  o.passes = PassSet::all();
  CompiledPlan p = compile(mlp_model(mlp_config(6, 12, 16, 3, 5)), o);
  int in_all = 0;
  for (int i = 0; i < kNumPasses; ++i) in_all += PassSet::all().has(static_cast<PassId>(i));
  REQUIRE(p.pass_stats.size() == static_cast<size_t>(in_all));
  for (const PassStats& s : p.pass_stats) CHECK(s.nodes_after <= s.nodes_before);
  CHECK(p.timings.passes >= 0.0);
}

}  // namespace tg::testing
