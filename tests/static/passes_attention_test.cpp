// The attention pass (static/passes/attention.cpp): a training step's attention and
// attention_lse of each layer become one attention_fwd_lse, whose CPU kernel runs the two
// references, so the step keeps the unfused graph's bits in f32 and bf16, with key lengths
// and beside the other passes; the statistic stays in memory from the forward to
// attention_grad; what is not such a pair is left alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/init.h"
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

namespace {

const PassSet kAttention = PassSet::only(PassId::attention);

// Every pass of all() but the attention pass.
PassSet all_but_attention() {
  PassSet s = PassSet::none();
  for (int i = 0; i < kNumPasses; ++i)
    if (static_cast<PassId>(i) != PassId::attention && PassSet::all().has(static_cast<PassId>(i)))
      s = s.with(static_cast<PassId>(i));
  return s;
}

// Each attention_fwd_lse of g planned as m for the schedule `order`: its statistic (second
// output, an activation) is in the arena from the node's step to its last reader's, and
// attention_grad reads it. Returns the nodes checked.
int check_lse_lifetimes(const Graph& g, const std::vector<int>& order, const MemoryPlan& m) {
  std::vector<int> step(g.nodes.size(), -1);
  for (size_t s = 0; s < order.size(); ++s) step[static_cast<size_t>(order[s])] = static_cast<int>(s);
  const auto readers = g.consumers();
  int checked = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& f = g.nodes[n];
    if (f.op != OpKind::attention_fwd_lse) continue;
    REQUIRE(f.outputs.size() == 2);
    const size_t lse = static_cast<size_t>(f.outputs[1]);
    INFO("attention_fwd_lse ", f.name, ", statistic ", g.values[lse].name);
    int last = -1, grads = 0;
    for (int r : readers[lse]) {
      last = std::max(last, step[static_cast<size_t>(r)]);
      grads += g.nodes[static_cast<size_t>(r)].op == OpKind::attention_grad;
    }
    CHECK(grads == 1);
    CHECK(g.values[lse].role == Role::activation);
    CHECK(m.offset[lse] >= 0);
    CHECK(m.first_step[lse] <= step[n]);
    CHECK(m.last_step[lse] >= last);
    ++checked;
  }
  return checked;
}

// A tiny GPT-2's feeds: ids and labels in the vocabulary, the labels past each length
// ignored, and the key lengths when the model has them (0 for the last sequence: every key
// masked, the rows' output and statistic 0).
Feeds gpt2_feeds(const Gpt2Config& c, uint64_t seed) {
  Feeds f;
  std::vector<float> ids(static_cast<size_t>(c.batch * c.seq)), labels(ids.size());
  random_labels(ids, seed, c.vocab);
  random_labels(labels, seed + 1, c.vocab);
  if (c.padding) {
    std::vector<float> lengths(static_cast<size_t>(c.batch));
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t len = b + 1 == c.batch ? 0 : std::max<int64_t>(1, c.seq - 3 * b);
      lengths[static_cast<size_t>(b)] = static_cast<float>(len);
      for (int64_t t = std::max<int64_t>(len, 1); t < c.seq; ++t)
        labels[static_cast<size_t>(b * c.seq + t)] = static_cast<float>(c.ignore_index);
    }
    f["lengths"] = lengths;
  }
  f["ids"] = ids;
  f["labels"] = labels;
  return f;
}

// The same model compiled with passes `base` and with `base` plus the attention pass,
// trained `steps` steps on `feeds`: the fused step has one attention_fwd_lse per attention
// and no attention or attention_lse left, and every loss and parameter has the unfused bits.
void check_fused_step(const ModelFn& model, Precision p, PassSet base, const Feeds& feeds, int layers, int steps) {
  CompileOptions o;
  o.precision = p;
  o.passes = base;
  CompiledPlan a = compile(model, o);
  o.passes = base.with(PassId::attention);
  CompiledPlan b = compile(model, o);
  CHECK(count(*a.graph, OpKind::attention) == layers);
  CHECK(count(*a.graph, OpKind::attention_lse) == layers);
  CHECK(count(*b.graph, OpKind::attention_fwd_lse) == layers);
  CHECK(count(*b.graph, OpKind::attention) == 0);
  CHECK(count(*b.graph, OpKind::attention_lse) == 0);
  CHECK(count(*b.graph, OpKind::attention_grad) == layers);
  CHECK(b.graph->nodes.size() + static_cast<size_t>(layers) == a.graph->nodes.size());
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  CHECK(check_lse_lifetimes(*b.graph, b.exec->order(), b.memory()) == layers);
  check_same_steps(a, b, steps, feeds);
}

}  // namespace

TEST_CASE("attention pass: a tiny GPT-2 trains with one attention forward per layer, bit for bit, f32 and bf16") {
  const Gpt2Config c = tiny_gpt2_config();
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    check_fused_step(gpt2_model(c), p, PassSet::none(), gpt2_feeds(c, 5), c.layers, 3);
  }
}

// GPT-2 small's bf16 training step as the static compiler builds it (the graph and its memory
// plan, nothing allocated): one forward per layer, its statistic kept for the backward.
TEST_CASE("attention pass: GPT-2 small's bf16 step has 12 attention_fwd_lse, no attention_lse, each planned to its grad") {
  Gpt2Config c = gpt2_small_config();
  c.batch = 8;
  c.seq = 1024;
  TrainOptions train;
  const Graph step = build_training_graph(with_precision(gpt2_model(c), Precision::bf16), train);
  CHECK(count(step, OpKind::attention_lse) == 12);
  const Graph g = run_passes(step, PassSet::all());
  CHECK(count(g, OpKind::attention_fwd_lse) == 12);
  CHECK(count(g, OpKind::attention_lse) == 0);
  CHECK(count(g, OpKind::attention) == 0);
  const std::vector<int> order = g.topo_order();
  const MemoryPlan m = plan_memory(g, order);
  CHECK(check_plan(g, order, m) == "");
  CHECK(check_lse_lifetimes(g, order, m) == 12);
}

TEST_CASE("attention pass: key lengths (one sequence fully masked) and every other pass, f32 and bf16") {
  Gpt2Config c = tiny_gpt2_config();
  c.batch = 3;
  c.padding = true;
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(p));
    check_fused_step(gpt2_model(c), p, PassSet::none(), gpt2_feeds(c, 7), c.layers, 2);
    check_fused_step(gpt2_model(c), p, all_but_attention(), gpt2_feeds(c, 9), c.layers, 2);
  }
}

TEST_CASE("attention pass: the transformer block with fused attention, causal and not, with the unfused bits") {
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    TransformerConfig c = transformer_config(2, 8, 16, 2);
    c.fused_attention = true;
    c.causal = causal;
    for (const PassSet set : {kAttention, PassSet::all()}) {
      CAPTURE(set.str());
      check_same_training(transformer_model(c), set, 3);
    }
    CompileOptions o;
    o.passes = kAttention;
    CHECK(count(*compile(transformer_model(c), o).graph, OpKind::attention_fwd_lse) == 1);
  }
}

TEST_CASE("attention pass: both results as graph outputs, read back with the ops' bits") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value q = b.input("q", {2, 5, 8}), k = b.input("k", {2, 5, 8}), v = b.input("v", {2, 5, 8});
    Attrs at;
    at.heads.count = 2;
    at.alpha = 0.5f;
    at.causal = true;
    b.mark_output(b.apply(OpKind::attention, {q, k, v}, at));
    b.mark_output(b.apply(OpKind::attention_lse, {q, k}, at));
  });
  const Graph f = check_same_graph(g, kAttention);
  validate(f);
  CHECK(count(f, OpKind::attention_fwd_lse) == 1);
  CHECK(f.nodes.size() == 1);
}

// A 16-bit statistic is the pair hi + lo (graph/attention.h split_lse) on the CPU backend, and
// so in the reference interpreter, whose kernels run on f32 views: unfused (attention_lse)
// and fused (attention_fwd_lse) alone, and in a bf16 GPT-2 step with every pass, whose
// attention gradients (and every parameter after the step) read lo.
TEST_CASE("attention pass: the reference interpreter splits a 16-bit statistic as the static CPU plan does") {
  for (const DType dt : {DType::BF16, DType::F16}) {
    const std::string dtype = dtype_name(dt);
    CAPTURE(dtype);
    const Graph g = recorded([dt](RecordingBuilder& b) {
      const Value q = b.input("q", {2, 5, 8}, dt), k = b.input("k", {2, 5, 8}, dt), v = b.input("v", {2, 5, 8}, dt);
      Attrs at;
      at.heads.count = 2;
      at.alpha = 0.5f;
      at.causal = true;
      b.mark_output(b.apply(OpKind::attention, {q, k, v}, at));
      b.mark_output(b.apply(OpKind::attention_lse, {q, k}, at));
    });
    for (const PassSet set : {PassSet::none(), kAttention}) {
      CAPTURE(set.str());
      const Graph f = run_passes(g, set);
      CHECK(count(f, OpKind::attention_fwd_lse) == (set.has(PassId::attention) ? 1 : 0));
      std::vector<std::vector<float>> want = make_values(f, 3);
      CompiledPlan plan = compile_graph(f, -1);
      plan.run(feeds_from(f, want));
      interpret(f, want);
      for (const int o : f.outputs)
        CHECK_MESSAGE(bitwise_diff(plan.read(o), want[static_cast<size_t>(o)]) == "", "output ",
                      f.values[static_cast<size_t>(o)].name);
      const std::vector<float>& lse = want[static_cast<size_t>(f.outputs[1])];
      bool lo = false;  // some row's lo is not 0: the split is there to see
      for (size_t i = 1; i < lse.size(); i += 2) lo = lo || lse[i] != 0.0f;
      CHECK(lo);
    }
  }
  const Graph step =
      run_passes(build_training_graph(with_precision(gpt2_model(tiny_gpt2_config()), Precision::bf16)), PassSet::all());
  CHECK(count(step, OpKind::attention_fwd_lse) == tiny_gpt2_config().layers);
  CompileOptions o;
  o.seed = 5;
  CompiledPlan plan = compile_graph(step, step.outputs[0], o);
  std::vector<std::vector<float>> want = make_values(step, 5);
  const Feeds feeds = feeds_from(step, want);
  for (int s = 0; s < 2; ++s) {
    INFO("step ", s);
    const float loss = plan.step(s == 0 ? feeds : Feeds{});
    interpret(step, want);
    CHECK(bitwise_diff({loss}, want[static_cast<size_t>(step.outputs[0])]) == "");
    for (size_t v = 0; v < step.values.size(); ++v) {
      const ValueInfo& info = step.values[v];
      if (info.role != Role::parameter && info.role != Role::optimizer_state) continue;
      CHECK_MESSAGE(bitwise_diff(plan.read(static_cast<int>(v)), want[v]) == "", "value ", info.name);
    }
  }
}

TEST_CASE("attention pass: an inference graph and pairs of other scores are left as they are") {
  // Inference: attention alone.
  const Gpt2Config c = tiny_gpt2_config();
  CompileOptions o;
  o.training = false;
  CompiledPlan none = compile(gpt2_model(c), o);
  o.passes = kAttention;
  CompiledPlan fused = compile(gpt2_model(c), o);
  CHECK(fused.graph->nodes.size() == none.graph->nodes.size());
  CHECK(count(*fused.graph, OpKind::attention) == c.layers);
  // A statistic of another scale, of another k, with key lengths the attention does not
  // have, or recorded before the attention that reads it: none is the attention's. Heads of
  // 2 dims, so that a statistic [4, 5, 2] reshapes into a head view [2, 5, 4].
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value q = b.input("q", {2, 5, 4}), k = b.input("k", {2, 5, 4}), k2 = b.input("k2", {2, 5, 4});
    const Value len = b.input("len", {2}, DType::I32);
    Attrs at;
    at.heads.count = 2;
    at.alpha = 0.5f;
    Attrs other = at;
    other.alpha = 0.25f;
    const Value early = b.apply(OpKind::attention_lse, {q, k}, at);
    // v depends on the early statistic: fusing it would make a cycle.
    const Value v = b.apply(OpKind::reshape, {early}, [] {
      Attrs r;
      r.shape = Shape{2, 5, 4};
      return r;
    }());
    b.mark_output(b.apply(OpKind::attention, {q, k, v}, at));
    b.mark_output(b.apply(OpKind::attention_lse, {q, k}, other));
    b.mark_output(b.apply(OpKind::attention_lse, {q, k2}, at));
    b.mark_output(b.apply(OpKind::attention_lse, {q, k, len}, at));
  });
  const Graph f = pass_attention(g);
  CHECK(count(f, OpKind::attention_fwd_lse) == 0);
  CHECK(f.nodes.size() == g.nodes.size());
}

}  // namespace tg::testing
