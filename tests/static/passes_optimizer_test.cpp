// The optimizer pass (static/passes/optimizer.cpp): the updates of a step become one
// multi-tensor update per learning rate and momentum, keep their groups in the order of
// the updates, run after every reader of what they write, and update the parameters to
// the unfused graph's bits on the CPU.
#include <doctest/doctest.h>

#include <map>

#include "graph/builder.h"
#include "graph/optimizers.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "static/passes/pass.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {

namespace {

const PassSet kOptimizer = PassSet::only(PassId::optimizer);

// p -= lr * g (sgd), or with a velocity (sgd_momentum), for a parameter of shape s whose
// gradient is an input.
void update(RecordingBuilder& b, const std::string& name, Shape s, float lr, float momentum = -1.0f) {
  const Value p = b.parameter(name, s);
  const Value g = b.input(name + ".grad", s);
  Attrs at;
  at.lr = lr;
  if (momentum < 0.0f) {
    b.apply(OpKind::sgd, {p, g}, at, name + ".update");
  } else {
    at.momentum = momentum;
    b.apply(OpKind::sgd_momentum, {p, g, b.optimizer_state(p, name + ".velocity")}, at, name + ".update");
  }
}

}  // namespace

TEST_CASE("optimizer pass: every sgd_momentum of a training graph is one node, groups in the updates' order") {
  const Graph g = build_training_graph(mlp_model(mlp_config(6, 12, 16, 3, 5)));
  const Graph f = pass_optimizer(g);
  validate(f);
  CHECK(count(f, OpKind::sgd_momentum) == 0);
  REQUIRE(count(f, OpKind::sgd_momentum_multi) == 1);
  CHECK(f.nodes.size() == g.nodes.size() - count(g, OpKind::sgd_momentum) + 1);
  std::vector<std::string> want, got;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::sgd_momentum)
      for (int v : n.inputs) want.push_back(g.values[static_cast<size_t>(v)].name);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::sgd_momentum_multi) {
      CHECK(n.attrs.lr == TrainOptions{}.lr);
      CHECK(n.attrs.momentum == TrainOptions{}.momentum);
      for (int v : n.inputs) got.push_back(f.values[static_cast<size_t>(v)].name);
    }
  CHECK(got == want);
  CHECK(want.size() == 18);  // 6 parameters: param, grad, velocity each

  TrainOptions plain;
  plain.use_momentum = false;
  const Graph gs = build_training_graph(mlp_model(mlp_config(6, 12, 16, 3, 5)), plain);
  const Graph fs = pass_optimizer(gs);
  validate(fs);
  CHECK(count(fs, OpKind::sgd) == 0);
  CHECK(count(fs, OpKind::sgd_multi) == 1);
  check_same_training(mlp_model(mlp_config(6, 12, 16, 3, 5)), kOptimizer, 3);
}

TEST_CASE("optimizer pass: every adamw of a training graph is one adamw_multi, groups in order, same bits") {
  TrainOptions opt;
  opt.adamw = true;
  opt.adam.beta1 = 0.8f;
  opt.adam.weight_decay = 0.05f;
  opt.clip_grad_norm = 0.5f;
  const Graph g = build_training_graph(mlp_model(mlp_config(6, 12, 16, 3, 5)), opt);
  const Graph f = pass_optimizer(g);
  validate(f);
  CHECK(count(g, OpKind::adamw) == 6);
  CHECK(count(f, OpKind::adamw) == 0);
  REQUIRE(count(f, OpKind::adamw_multi) == 1);
  std::vector<std::string> want, got;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::adamw)
      for (int v : n.inputs) want.push_back(g.values[static_cast<size_t>(v)].name);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::adamw_multi) {
      CHECK(n.attrs.lr == opt.lr);
      CHECK(n.attrs.adam == opt.adam);
      for (int v : n.inputs) got.push_back(f.values[static_cast<size_t>(v)].name);
    }
  CHECK(got == want);
  CHECK(want.size() == 30);  // 6 parameters: param, grad, exp_avg, exp_avg_sq, step each
  CompileOptions base;
  base.train = opt;
  check_same_training(mlp_model(mlp_config(6, 12, 16, 3, 5)), kOptimizer, 3, base);

  // Other hyperparameters make another group.
  const Graph two = recorded([](RecordingBuilder& b) {
    for (float wd : {0.0f, 0.0f, 0.1f}) {
      const std::string name = "p" + std::to_string(b.graph().values.size());
      const Value p = b.parameter(name, {4});
      AdamAttr a;
      a.weight_decay = wd;
      adamw_update(b, p, b.input(name + ".grad", {4}), name, 0.01f, a, name + ".update");
    }
  });
  const Graph tf = pass_optimizer(two);
  CHECK(count(tf, OpKind::adamw_multi) == 1);
  CHECK(count(tf, OpKind::adamw) == 1);
}

// Under bf16 autocast each weight's and bias's gradient is a bf16 GEMM's output (or bias sum)
// cast to f32 for its update alone: the multi update reads the 16-bit gradient and widens it
// itself, so the casts go and the parameters get the same bits (SGD with momentum and AdamW,
// with the weights' copies too). In fp16 the gradients reach the update through the loss
// scale's unscaling in f32, so there are no such casts.
TEST_CASE("optimizer pass: a multi update reads autocast gradients in 16 bits, without their casts, same bits") {
  for (Precision p : {Precision::bf16, Precision::fp16})
    for (bool adamw : {false, true})
      for (PassSet set : {kOptimizer, kOptimizer.with(PassId::low_copies)}) {
        CAPTURE(std::string(precision_name(p)));
        CAPTURE(adamw);
        CAPTURE(set == kOptimizer);
        CompileOptions base;
        base.precision = p;
        base.train.adamw = adamw;
        CompileOptions fused = base;
        fused.passes = set;
        const ModelFn model = mlp_model(mlp_config(6, 12, 16, 3, 5));
        const CompiledPlan a = compile(model, base), b = compile(model, fused);
        const OpKind multi = adamw ? OpKind::adamw_multi : OpKind::sgd_momentum_multi;
        const OpKind multi_cast = adamw ? OpKind::adamw_multi_cast : OpKind::sgd_momentum_multi_cast;
        int low_grads = 0;
        for (const Node& n : b.graph->nodes) {
          if (n.op != multi && n.op != multi_cast) continue;
          for (size_t i = 0; i < n.inputs.size(); ++i)
            if (op_input_is_multi_grad(n.op, static_cast<int>(i), static_cast<int>(n.inputs.size())) &&
                b.graph->values[static_cast<size_t>(n.inputs[i])].dtype == precision_dtype(p))
              ++low_grads;
        }
        CHECK(low_grads == (p == Precision::bf16 ? 6 : 0));  // three weights and three biases
        if (set == kOptimizer) CHECK(count(*b.graph, OpKind::cast) == count(*a.graph, OpKind::cast) - low_grads);
        validate(*b.graph);
        CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
      }
  CompileOptions bf16;
  bf16.precision = Precision::bf16;
  check_same_training(mlp_model(mlp_config(6, 12, 16, 3, 5)), kOptimizer, 3, bf16);
  bf16.train.adamw = true;
  check_same_training(mlp_model(mlp_config(6, 12, 16, 3, 5)), kOptimizer.with(PassId::low_copies), 3, bf16);
}

TEST_CASE("optimizer pass: a large weight's update apart still reads its autocast gradient in 16 bits") {
  for (bool adamw : {false, true}) {
    CAPTURE(adamw);
    TrainOptions t;
    t.adamw = adamw;
    const Graph g = build_training_graph(with_precision(mlp_model(mlp_config(6, 12, 16, 3, 5)), Precision::bf16), t);
    // Every parameter is "large" (1 byte or more): an update of its own.
    const Graph f = pass_optimizer(g, int64_t{1}, 0);
    validate(f);
    const OpKind multi = adamw ? OpKind::adamw_multi : OpKind::sgd_momentum_multi;
    int alone = 0;
    for (const Node& n : f.nodes) {
      if (n.op != multi) continue;
      const int groups = static_cast<int>(n.inputs.size()) / op_traits(n.op).inputs;
      if (groups != 1) continue;
      ++alone;
      CHECK(f.values[static_cast<size_t>(n.inputs[1])].dtype == DType::BF16);
    }
    CHECK(alone == 6);  // three weights, three biases
    CHECK(count(f, OpKind::cast) == count(g, OpKind::cast) - 6);
  }
}

TEST_CASE("optimizer pass: only updates with the same lr and momentum fuse, and a lone one stays") {
  const Graph g = recorded([](RecordingBuilder& b) {
    update(b, "a", {4, 3}, 0.1f, 0.9f);
    update(b, "b", {5}, 0.2f, 0.9f);   // another lr
    update(b, "c", {2, 2}, 0.1f, 0.9f);
    update(b, "d", {3}, 0.1f, 0.5f);   // another momentum
    update(b, "e", {7}, 0.1f);         // sgd
    update(b, "f", {7, 2}, 0.1f);
    update(b, "h", {6}, 0.1f, 0.9f);
  });
  const Graph f = check_same_graph(g, kOptimizer, 3);
  validate(f);
  CHECK(count(f, OpKind::sgd_momentum_multi) == 1);  // a, c, h
  CHECK(count(f, OpKind::sgd_multi) == 1);           // e, f
  CHECK(count(f, OpKind::sgd_momentum) == 2);        // b, d
  for (const Node& n : f.nodes)
    if (n.op == OpKind::sgd_momentum_multi) {
      CHECK(n.inputs.size() == 9);
      CHECK(f.values[static_cast<size_t>(n.inputs[3])].name == "c");
      CHECK(n.attrs.lr == 0.1f);
    }
}

TEST_CASE("optimizer pass: a value two updates write keeps its updates unfused") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value w = b.parameter("w", {4});
    Attrs at;
    at.lr = 0.1f;
    b.apply(OpKind::sgd, {w, b.input("g1", {4})}, at, "w.update1");
    b.apply(OpKind::sgd, {w, b.input("g2", {4})}, at, "w.update2");
    update(b, "u", {4}, 0.1f);
    update(b, "v", {4}, 0.1f);
    // x is updated, and read as y's gradient: the two cannot run in one parallel launch.
    const Value x = b.parameter("x", {4});
    const Value y = b.parameter("y", {4});
    b.apply(OpKind::sgd, {x, b.input("gx", {4})}, at, "x.update");
    b.apply(OpKind::sgd, {y, x}, at, "y.update");
  });
  const Graph f = check_same_graph(g, kOptimizer, 2);
  validate(f);
  CHECK(count(f, OpKind::sgd) == 4);
  REQUIRE(count(f, OpKind::sgd_multi) == 1);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::sgd_multi) {
      REQUIRE(n.inputs.size() == 4);
      CHECK(f.values[static_cast<size_t>(n.inputs[0])].name == "u");
      CHECK(f.values[static_cast<size_t>(n.inputs[2])].name == "v");
    }
}

TEST_CASE("optimizer pass: the multi update runs after every reader of every tensor it reads or writes") {
  const Graph f = pass_optimizer(build_training_graph(transformer_model(transformer_config(2, 8, 16, 2))));
  validate(f);
  const std::vector<int> order = f.topo_order();
  std::vector<int> step(f.nodes.size());
  for (size_t s = 0; s < order.size(); ++s) step[static_cast<size_t>(order[s])] = static_cast<int>(s);
  const auto readers = f.consumers();
  int checked = 0;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    if (f.nodes[i].op != OpKind::sgd_momentum_multi) continue;
    for (int v : f.nodes[i].inputs)
      for (int r : readers[static_cast<size_t>(v)]) {
        if (r == static_cast<int>(i)) continue;
        CHECK(step[static_cast<size_t>(r)] < step[i]);
        ++checked;
      }
  }
  CHECK(checked > 0);
  check_same_training(transformer_model(transformer_config(2, 8, 16, 2)), kOptimizer, 3);
}

TEST_CASE("optimizer pass: the fused node's name is one no value or node has") {
  const Graph g = recorded([](RecordingBuilder& b) {
    b.input("sgd_multi", {1});  // takes the name the pass would give
    update(b, "a", {4}, 0.1f);
    update(b, "b", {4}, 0.1f);
  });
  const Graph f = pass_optimizer(g);
  validate(f);
  REQUIRE(count(f, OpKind::sgd_multi) == 1);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::sgd_multi) CHECK(n.name == "sgd_multi.1");
}

}  // namespace tg::testing

namespace tg::testing {

namespace {

// w [k, n] updated with momentum from the weight gradient x^T dz (x [rows, k], dz [rows, n]).
Graph gemm_update_graph(int64_t rows, int64_t k, int64_t n, bool gradient_is_output = false) {
  return recorded([&](RecordingBuilder& b) {
    const Value w = b.parameter("w", {k, n});
    const Value x = b.input("x", {rows, k});
    const Value dz = b.input("dz", {rows, n});
    const Value gw = matmul(b, x, dz, true, false);
    Attrs at;
    at.lr = 0.05f;
    at.momentum = 0.9f;
    b.apply(OpKind::sgd_momentum, {w, gw, b.optimizer_state(w, "w.velocity")}, at, "w.update");
    if (gradient_is_output) b.mark_output(gw);
  });
}

}  // namespace

TEST_CASE("optimizer pass, GEMM updates: a weight gradient read only by its update is computed inside it") {
  const Graph g = gemm_update_graph(32, 128, 256);
  const Graph f = pass_optimizer(g, 0, 1);
  CHECK(count(f, OpKind::matmul_sgd_momentum) == 1);
  CHECK(count(f, OpKind::matmul) == 0);
  CHECK(count(f, OpKind::sgd_momentum) == 0);
  CHECK(validation_errors(f).empty());
  const Node& u = f.nodes[0];
  REQUIRE(u.op == OpKind::matmul_sgd_momentum);
  CHECK(u.name == "w.update");
  CHECK(f.values[static_cast<size_t>(u.inputs[0])].name == "w");
  CHECK(f.values[static_cast<size_t>(u.inputs[1])].name == "x");
  CHECK(f.values[static_cast<size_t>(u.inputs[2])].name == "w.velocity");
  CHECK(f.values[static_cast<size_t>(u.inputs[3])].name == "dz");
  CHECK(u.attrs.lr == 0.05f);
  CHECK(u.attrs.momentum == 0.9f);
  // The default threshold (kGemmUpdateMinTiles) leaves a weight of two tiles alone, and
  // so does the switch.
  CHECK(count(pass_optimizer(g), OpKind::matmul_sgd_momentum) == 0);
  CHECK(count(pass_optimizer(g, 0, 0), OpKind::matmul_sgd_momentum) == 0);
  // On the CPU the fused update gives the unfused graph's bits, over several steps.
  const Graph fused = check_same_graph(g, kOptimizer, 3, with_pass_options(gemm_update_tiles(1)));
  CHECK(count(fused, OpKind::matmul_sgd_momentum) == 1);
}

TEST_CASE("optimizer pass, GEMM updates: shapes off the kernel's tiles, or a gradient read elsewhere, stay unfused") {
  CHECK(count(pass_optimizer(gemm_update_graph(24, 128, 128), 0, 1), OpKind::matmul_sgd_momentum) == 0);  // rows
  CHECK(count(pass_optimizer(gemm_update_graph(32, 96, 128), 0, 1), OpKind::matmul_sgd_momentum) == 0);   // k
  CHECK(count(pass_optimizer(gemm_update_graph(32, 128, 200), 0, 1), OpKind::matmul_sgd_momentum) == 0);  // n
  CHECK(count(pass_optimizer(gemm_update_graph(32, 128, 128, true), 0, 1), OpKind::matmul_sgd_momentum) == 0);
  // A 2 x 2-tile weight needs a threshold of at most 4 tiles.
  CHECK(count(pass_optimizer(gemm_update_graph(32, 256, 256), 0, 5), OpKind::matmul_sgd_momentum) == 0);
  CHECK(count(pass_optimizer(gemm_update_graph(32, 256, 256), 0, 4), OpKind::matmul_sgd_momentum) == 1);
}

TEST_CASE("optimizer pass, GEMM updates: with the linear pass the bias gradient is a reduce_sum again, same bits") {
  // Layers 128 -> 128 -> 128 -> 10 at batch 16: the two 128 x 128 weights fuse, the last
  // ([128, 10]) does not.
  const ModelFn model = mlp_model(mlp_config(16, 128, 128, 3, 10));
  const PassOptions small = gemm_update_tiles(1);
  const Graph step =
      run_passes(build_training_graph(model), PassSet::only(PassId::linear).with(PassId::optimizer), small);
  CHECK(count(step, OpKind::matmul_sgd_momentum) == 2);
  CHECK(count(step, OpKind::matmul_bias_grad) == 1);
  CHECK(count(step, OpKind::reduce_sum) == 2);
  CHECK(validation_errors(step).empty());
  check_same_training(model, PassSet::only(PassId::linear).with(PassId::optimizer), 3, with_pass_options(small));
  check_same_training(model, PassSet::all(), 3, with_pass_options(small));
}

TEST_CASE("optimizer pass, GEMM updates: the lanes pass keeps them on the main stream, or on request runs them beside, ahead of the layers below") {
  const ModelFn model = mlp_model(mlp_config(16, 128, 128, 3, 10));
  const PassOptions main = gemm_update_tiles(1);
  PassOptions beside = main;
  beside.lanes_side_gemm_updates = true;
  const Graph step = run_passes(build_training_graph(model), PassSet::all(), main);
  const std::vector<int> topo = step.topo_order();
  // By default (a stream-K kernel wants the whole device): on the main stream; the bias
  // gradients' column sums, which feed only the other updates, still go beside.
  REQUIRE_FALSE(main.lanes_side_gemm_updates);
  {
    const std::vector<bool> side = side_lane_nodes(step, topo, main);
    int fused = 0, sums = 0;
    for (size_t n = 0; n < step.nodes.size(); ++n) {
      if (step.nodes[n].op == OpKind::matmul_sgd_momentum) {
        ++fused;
        CHECK_FALSE(side[n]);
      }
      if (step.nodes[n].op == OpKind::reduce_sum && side[n]) ++sums;
    }
    CHECK(fused == 2);
    CHECK(sums == 2);
  }
  const std::vector<bool> side = side_lane_nodes(step, topo, beside);
  const std::vector<int> order = hoist_side_nodes(step, topo, side);
  std::vector<int> at(step.nodes.size(), -1);
  for (size_t s = 0; s < order.size(); ++s) at[static_cast<size_t>(order[s])] = static_cast<int>(s);
  int fused = 0;
  for (size_t n = 0; n < step.nodes.size(); ++n) {
    const Node& u = step.nodes[n];
    if (u.op != OpKind::matmul_sgd_momentum) continue;
    ++fused;
    CHECK(side[n]);
    // It reads dz, which the input gradient below also reads; it writes only w and its
    // velocity, so it does not wait for that reader, and every reader of w runs before it.
    for (size_t r = 0; r < step.nodes.size(); ++r)
      if (r != n && std::count(step.nodes[r].inputs.begin(), step.nodes[r].inputs.end(), u.inputs[0]) > 0)
        CHECK(at[r] < at[n]);
  }
  CHECK(fused == 2);
  check_same_training(model, PassSet::all(), 3, with_pass_options(beside));
  check_same_training(model, PassSet::all(), 3, with_pass_options(main));
}

}  // namespace tg::testing
