// The vocab_pad pass (static/passes/vocab_pad.cpp) on the CPU backend: a bf16 GPT-2 step's
// output layer over an unaligned vocabulary becomes products at padded extents, with the
// step's bits unchanged; the padded weight copy is filled, zero-padded and refreshed like
// any other copy, also beside a plan that keeps the unpadded one on the same store.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/models.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "kernels/interpreter.h"
#include "tests/static/passes_test_util.h"

namespace tg {
namespace {

using testing::bitwise_diff;
using testing::count;

// Rows (batch x seq) and width of at least 128, so that each of the head's products does
// 64 multiply-adds per element the backend would copy (kStagingMinRatio); vocabulary 11:
// 22 bytes a bf16 row, padded to 16 classes.
Gpt2Config head_config() {
  Gpt2Config c;
  c.batch = 2;
  c.seq = 64;
  c.vocab = 11;
  c.context = 64;
  c.d_model = 128;
  c.heads = 2;
  c.layers = 1;
  c.ignore_index = 3;
  return c;
}

// The options that let the pass pad a product this small.
PassOptions small_products() {
  PassOptions o;
  o.vocab_pad_min_product = 1;
  return o;
}

Graph step_graph(Precision p) {
  const Gpt2Config c = head_config();
  return build_training_graph(with_precision([c](Builder& b) { return gpt2(b, c); }, p));
}

// Every pass before vocab_pad, as run_passes would apply them.
Graph before_pad(const Graph& step) {
  PassOptions o = small_products();
  o.backend_pads_gemms = false;  // vocab_pad leaves the graph as it is
  return run_passes(step, PassSet::all(), o);
}

const Node* find_op(const Graph& g, OpKind op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return &n;
  return nullptr;
}

}  // namespace

TEST_CASE("vocab_pad: the head's copy, logits and their gradient padded to 16 classes, the rest as it was") {
  const Graph base = before_pad(step_graph(Precision::bf16));
  const Graph g = pass_vocab_pad(base, small_products());
  CHECK(validation_errors(g).empty());
  const int copy = g.find_value("gpt2.wte.bf16.padded");
  REQUIRE(copy >= 0);
  CHECK(g.values[static_cast<size_t>(copy)].shape == Shape{16, 128});
  CHECK(is_weight_copy(g, copy));
  CHECK(g.find_value("gpt2.wte.bf16") < 0);  // the unpadded copy is gone
  for (OpKind op : {OpKind::cross_entropy, OpKind::cross_entropy_grad}) {
    const Node* n = find_op(g, op);
    REQUIRE(n != nullptr);
    CHECK(n->attrs.size == 11);
    CHECK(g.values[static_cast<size_t>(n->inputs[0])].shape == Shape{128, 16});
  }
  // The prediction keeps its name and shape, cut from the padded logits; the weight's
  // gradient is the padded product's first rows.
  CHECK(count(g, OpKind::slice) == count(base, OpKind::slice) + 2);
  const int prediction = g.outputs[1];
  CHECK(g.values[static_cast<size_t>(prediction)].name == base.values[static_cast<size_t>(base.outputs[1])].name);
  CHECK(g.values[static_cast<size_t>(prediction)].shape == Shape{128, 11});
  CHECK(g.nodes.size() == base.nodes.size() + 2);

  // Not where the backend computes unaligned products as they are, not below the backend's
  // smallest padded product, not in fp32 (no weight copies), not an aligned vocabulary.
  PassOptions unpadded = small_products();
  unpadded.backend_pads_gemms = false;
  CHECK(pass_vocab_pad(base, unpadded).nodes.size() == base.nodes.size());
  CHECK(pass_vocab_pad(base, PassOptions{}).find_value("gpt2.wte.bf16.padded") < 0);
  const Graph f32 = before_pad(step_graph(Precision::fp32));
  CHECK(pass_vocab_pad(f32, small_products()).nodes.size() == f32.nodes.size());
  Gpt2Config aligned = head_config();
  aligned.vocab = 16;
  const Graph a = before_pad(build_training_graph(with_precision([aligned](Builder& b) { return gpt2(b, aligned); },
                                                                 Precision::bf16)));
  CHECK(pass_vocab_pad(a, small_products()).find_value("gpt2.wte.bf16.padded") < 0);
  // Nor a vocabulary of 1024 or fewer classes in whole 4-element steps: its unpadded rows take
  // the CUDA gradient's 4-wide frame, of another order than the padded rows' frame.
  Gpt2Config fours = head_config();
  fours.vocab = 12;
  const Graph f = before_pad(build_training_graph(with_precision([fours](Builder& b) { return gpt2(b, fours); },
                                                                 Precision::bf16)));
  CHECK(pass_vocab_pad(f, small_products()).find_value("gpt2.wte.bf16.padded") < 0);
}

TEST_CASE("vocab_pad: the padded step has the unpadded step's bits, and its copy is the rounded weight and zeros") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    const Graph base = before_pad(step_graph(p));
    const Graph padded = pass_vocab_pad(base, small_products());
    REQUIRE(padded.find_value(std::string("gpt2.wte.") + dtype_name(precision_dtype(p)) + ".padded") >= 0);
    const int loss = base.outputs[0];
    CompiledPlan a = compile_graph(base, loss);
    CompiledPlan b = compile_graph(padded, padded.outputs[0]);
    CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
    const Feeds feeds = testing::feeds_from(base, make_values(base, 7));
    for (int s = 0; s < 3; ++s) {
      INFO("step ", s);
      const float la = a.step(feeds), lb = b.step(feeds);
      CHECK(bitwise_diff({lb}, {la}) == "");
      const std::string out = base.values[static_cast<size_t>(base.outputs[1])].name;
      CHECK(bitwise_diff(b.read(out), a.read(out)) == "");
    }
    for (int v : base.values_with_role(Role::parameter)) {
      const std::string& name = base.values[static_cast<size_t>(v)].name;
      CHECK_MESSAGE(bitwise_diff(b.read(name), a.read(name)) == "", "parameter ", name);
    }
    // The copy after the last step: the weight rounded, then five rows of zeros.
    const std::string copy = std::string("gpt2.wte.") + dtype_name(precision_dtype(p));
    std::vector<float> want = b.read("gpt2.wte");
    for (float& x : want) x = round_to_dtype(x, precision_dtype(p));
    CHECK(bitwise_diff(a.read(copy), want) == "");
    want.resize(16 * 128, 0.0f);
    CHECK(bitwise_diff(b.read(copy + ".padded"), want) == "");
  }
}

TEST_CASE("vocab_pad: a plan with the padded copy and one with the unpadded one step on one store alike") {
  const Graph base = before_pad(step_graph(Precision::bf16));
  const Graph padded = pass_vocab_pad(base, small_products());
  // Two plans on one store, stepping in turns, against one plan stepping alone: each step
  // must see copies that follow the weights the other plan's step wrote.
  CompiledPlan alone = compile_graph(base, base.outputs[0]);
  CompileOptions shared;
  shared.params = std::make_shared<ParameterStore>(std::shared_ptr<Backend>(make_cpu_backend()), 0);
  CompiledPlan p0 = compile_graph(padded, padded.outputs[0], shared);
  CompiledPlan p1 = compile_graph(base, base.outputs[0], shared);
  const Feeds feeds = testing::feeds_from(base, make_values(base, 9));
  for (int s = 0; s < 4; ++s) {
    INFO("step ", s);
    const float want = alone.step(feeds);
    const float got = (s % 2 == 0 ? p0 : p1).step(feeds);
    CHECK(bitwise_diff({got}, {want}) == "");
  }
  CHECK(bitwise_diff(p0.read("gpt2.wte"), alone.read("gpt2.wte")) == "");
}

TEST_CASE("vocab_pad: the reference interpreter runs the padded step to the unpadded step's bits") {
  const Graph base = before_pad(step_graph(Precision::bf16));
  const Graph g = pass_vocab_pad(base, small_products());
  std::vector<std::vector<float>> a = make_values(base, 5), b = make_values(g, 5);
  for (int s = 0; s < 2; ++s) {
    INFO("step ", s);
    interpret(base, a);
    interpret(g, b);
    CHECK(bitwise_diff(b[static_cast<size_t>(g.outputs[0])], a[static_cast<size_t>(base.outputs[0])]) == "");
  }
  for (int v : base.values_with_role(Role::parameter)) {
    const std::string& name = base.values[static_cast<size_t>(v)].name;
    CHECK_MESSAGE(bitwise_diff(b[static_cast<size_t>(g.find_value(name))], a[static_cast<size_t>(v)]) == "",
                  "parameter ", name);
  }
}

TEST_CASE("cross_entropy size: the classes a logits row holds, checked against the logits") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {4, 8});
  const Value labels = b.input("labels", {4}, DType::I32);
  Attrs at;
  at.size = 9;
  CHECK_THROWS_AS(b.apply(OpKind::cross_entropy, {x, labels}, at), GraphError);
  at.size = -1;
  CHECK_THROWS_AS(b.apply(OpKind::cross_entropy, {x, labels}, at), GraphError);
  at.size = 5;
  CHECK(b.apply(OpKind::cross_entropy, {x, labels}, at).shape == Shape{1});
}

}  // namespace tg
