// The elementwise pass (static/passes/elementwise.cpp): chains on graphs made for them,
// the graphs it must leave alone, the program it writes, and the chain model of
// tg-launch, where a long chain of tiny ops becomes a few kernels; casts between f32 and a
// 16-bit dtype inside chains, and autocast's training graphs. Every rewritten graph runs to
// the unfused graph's bits on the CPU.
#include <doctest/doctest.h>

#include "graph/builder.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "static/passes/pass.h"
#include "tests/common/models.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {

namespace {

const PassSet kElementwise = PassSet::only(PassId::elementwise);

const Node& only_fused(const Graph& f) {
  REQUIRE(count(f, OpKind::fused_elementwise) == 1);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::fused_elementwise) return n;
  return f.nodes[0];
}

std::string input_name(const Graph& f, const Node& n, int i) {
  return f.values[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])].name;
}

}  // namespace

TEST_CASE("elementwise pass: a chain of six ops with a bias row is one node, its program in chain order") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value y = b.input("y", {4, 6});
    Value h = add(b, x, y);
    h = mul(b, h, y);
    h = bias_add(b, h, b.parameter("b", {6}));
    h = relu(b, h);
    h = scale(b, h, 0.5f);
    h = sub(b, h, x);
    b.mark_output(h);
  });
  const Graph f = check_same_graph(g, kElementwise);
  validate(f);
  REQUIRE(f.nodes.size() == 1);
  const Node& n = f.nodes[0];
  CHECK(n.op == OpKind::fused_elementwise);
  CHECK(n.name == g.nodes.back().name);
  REQUIRE(n.inputs.size() == 3);
  CHECK(input_name(f, n, 0) == "x");
  CHECK(input_name(f, n, 1) == "y");
  CHECK(input_name(f, n, 2) == "b");
  // Operands 0..2 are x, y, b; 3.. the results.
  const std::vector<EwInstr> want = {{EwOp::add, 0, 1},         {EwOp::mul, 3, 1}, {EwOp::add, 4, 2},
                                     {EwOp::relu, 5},           {EwOp::scale, 6, 0, 0.5f},
                                     {EwOp::sub, 7, 0}};
  CHECK(n.attrs.program.code == want);
  CHECK(f.values[static_cast<size_t>(n.outputs[0])].shape == Shape{4, 6});
}

TEST_CASE("elementwise pass: a value with two readers or a graph output ends a chain (the diamond stays)") {
  // h feeds both arms: relu stays alone; one arm fuses with the add that joins them.
  const Graph diamond = recorded([](RecordingBuilder& b) {
    const Value h = relu(b, b.input("x", {8}));
    b.mark_output(add(b, scale(b, h, 2.0f), scale(b, h, 3.0f)));
  });
  const Graph f = check_same_graph(diamond, kElementwise);
  validate(f);
  CHECK(count(f, OpKind::relu) == 1);
  CHECK(count(f, OpKind::scale) == 1);
  CHECK(only_fused(f).attrs.program.size() == 2);
  CHECK(f.find_value(diamond.values[static_cast<size_t>(diamond.nodes[0].outputs[0])].name) >= 0);

  // mul(h, h) reads h twice: the chain runs through it, the program reading the previous
  // result as both operands; then scale goes on from the square.
  const Graph square = recorded([](RecordingBuilder& b) {
    const Value h = relu(b, b.input("x", {8}));
    b.mark_output(scale(b, mul(b, h, h), 0.5f));
  });
  const Graph fs = check_same_graph(square, kElementwise);
  validate(fs);
  const std::vector<EwInstr> squared = {{EwOp::relu, 0}, {EwOp::mul, 1, 1}, {EwOp::scale, 2, 0, 0.5f}};
  CHECK(only_fused(fs).attrs.program.code == squared);
  CHECK(fs.nodes.size() == 1);

  // An intermediate that is a graph output stays; the chain ends at it and goes on after.
  const Graph out = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {8});
    const Value a = scale(b, relu(b, x), 2.0f);
    b.mark_output(a);
    b.mark_output(relu(b, add(b, a, x)));
  });
  const Graph fo = check_same_graph(out, kElementwise);
  CHECK(fo.nodes.size() == 2);
  CHECK(count(fo, OpKind::fused_elementwise) == 2);

  // Ops that are not elementwise end a chain; a single op is left as it is.
  const Graph single = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    b.mark_output(softmax(b, relu(b, x)));
  });
  CHECK(pass_elementwise(single).nodes.size() == 2);
  CHECK(count(pass_elementwise(single), OpKind::fused_elementwise) == 0);
}

TEST_CASE("elementwise pass: an in-place relu fuses, and the planner still runs the fused node in place") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value t = matmul(b, x, b.parameter("w", {6, 6}));
    b.mark_output(scale(b, add(b, relu(b, t, /*in_place=*/true), x), 0.25f));
  });
  CompileOptions flagged;
  flagged.plan.in_place = InPlacePolicy::flagged;
  const Graph f = check_same_graph(g, kElementwise, 1, flagged);
  const Node& n = only_fused(f);
  CHECK(n.attrs.in_place);  // the chain's head asked to run over t, the fused node's input 0
  CHECK(input_name(f, n, 0) == g.values[static_cast<size_t>(g.nodes[0].outputs[0])].name);
  flagged.passes = kElementwise;
  CompiledPlan p = compile_graph(g, -1, flagged);
  CHECK(p.memory().num_in_place == 1);
}

TEST_CASE("elementwise pass: bias rows of a rank-3 value, gelu and its gradient, and copies") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {2, 3, 8});
    const Value dy = b.input("dy", {2, 3, 8});
    const Value z = bias_add(b, x, b.parameter("b", {8}));
    const Value y = gelu(b, copy(b, z));
    b.mark_output(b.apply(OpKind::gelu_grad, {mul(b, dy, y), x}));
  });
  const Graph f = check_same_graph(g, kElementwise);
  const Node& n = only_fused(f);
  CHECK(f.nodes.size() == 1);
  CHECK(n.attrs.program.size() == 4);  // add, gelu, mul, gelu_grad: the copy has no instruction
  CHECK(n.inputs.size() == 3);

  // A chain of copies only has nothing to run: it stays.
  const Graph copies = recorded([](RecordingBuilder& b) { b.mark_output(copy(b, copy(b, b.input("x", {4})))); });
  CHECK(count(pass_elementwise(copies), OpKind::copy) == 2);
}

TEST_CASE("elementwise pass: tanh, sigmoid, exp, log, gelu_erf and their gradients join one chain") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {2, 3, 8});
    const Value dy = b.input("dy", {2, 3, 8});
    Value h = x;
    // sigmoid first: log reads a positive value.
    for (OpKind op : {OpKind::sigmoid, OpKind::log, OpKind::exp, OpKind::tanh, OpKind::gelu_erf}) h = b.apply(op, {h});
    h = mul(b, dy, h);
    for (OpKind op : {OpKind::log_grad, OpKind::sigmoid_grad, OpKind::tanh_grad, OpKind::gelu_erf_grad})
      h = b.apply(op, {h, x});
    b.mark_output(h);
  });
  const Graph f = check_same_graph(g, kElementwise);
  const Node& n = only_fused(f);
  CHECK(f.nodes.size() == 1);
  CHECK(n.attrs.program.size() == 10);
  CHECK(n.inputs.size() == 2);
}

TEST_CASE("elementwise pass: a long chain is split where it would pass the instructions or the inputs a node holds") {
  const int n_ops = 3 * kMaxEwInstrs + 5;
  const Graph g = recorded([&](RecordingBuilder& b) {
    Value h = b.input("x", {16});
    for (int i = 0; i < n_ops; ++i) h = relu(b, scale(b, h, 1.0f));
    b.mark_output(h);
  });
  const Graph f = check_same_graph(g, kElementwise);
  CHECK(static_cast<int>(f.nodes.size()) == (2 * n_ops + kMaxEwInstrs - 1) / kMaxEwInstrs);
  for (const Node& n : f.nodes) CHECK(n.attrs.program.size() <= kMaxEwInstrs);

  // Each add brings a new input: a node holds kMaxEwInputs of them.
  const Graph wide = recorded([&](RecordingBuilder& b) {
    Value h = b.input("x", {16});
    for (int i = 0; i < 20; ++i) h = add(b, h, b.input("in" + std::to_string(i), {16}));
    b.mark_output(h);
  });
  const Graph fw = check_same_graph(wide, kElementwise);
  for (const Node& n : fw.nodes) CHECK(n.inputs.size() <= static_cast<size_t>(kMaxEwInputs));
  CHECK(fw.nodes.size() == 3);  // 21 distinct inputs: 8 (x and 7), then 1 + 7, 1 + 6
}

TEST_CASE("elementwise pass on tg-launch's chain: 1000 ops become a few kernels, with the unfused bits") {
  const int n_ops = 1000;
  const Graph infer = build_inference_graph(chain_model(without_loss(chain_config(n_ops, 64))));
  REQUIRE(static_cast<int>(infer.nodes.size()) == n_ops);
  const Graph f = check_same_graph(infer, kElementwise, 2);
  CHECK(static_cast<int>(f.nodes.size()) == (n_ops + kMaxEwInstrs - 1) / kMaxEwInstrs);  // 8 kernels
  for (const Node& n : f.nodes) CHECK(n.inputs.size() == 2);  // the chain's input and chain.w

  // In training the forward relu outputs are read twice (next op, relu_grad): fewer fuse.
  const ModelFn train = chain_model(chain_config(60, 64));
  check_same_training(train, kElementwise, 3);
  CompileOptions o;
  o.passes = kElementwise;
  const CompiledPlan before = compile(train), after = compile(train, o);
  MESSAGE("chain of 60, training graph: ", before.graph->nodes.size(), " nodes unfused, ", after.graph->nodes.size(),
          " with the elementwise pass");
  CHECK(after.graph->nodes.size() < before.graph->nodes.size());
}

namespace {

CompileOptions without_casts() {
  CompileOptions o;
  o.pass_options.elementwise_casts = false;
  return o;
}

}  // namespace

TEST_CASE("elementwise pass: autocast's residual, cast(bf16 GEMM output) + x, is one node that reads the GEMM's output") {
  const Graph g = recorded([](RecordingBuilder& b) {
    const Value x = b.input("x", {4, 6});
    const Value t = matmul(b, cast(b, x, DType::BF16), b.input("w", {6, 6}, DType::BF16));
    b.mark_output(add(b, x, cast(b, t, DType::F32)));
  });
  const Graph f = check_same_graph(g, kElementwise);
  validate(f);
  const Node& n = only_fused(f);
  REQUIRE(n.inputs.size() == 2);
  CHECK(f.values[static_cast<size_t>(n.inputs[0])].dtype == DType::BF16);  // the GEMM's output
  CHECK(input_name(f, n, 1) == "x");
  const std::vector<EwInstr> want = {{EwOp::cast, 0, 0, 1.0f, DType::F32}, {EwOp::add, 1, 2}};
  CHECK(n.attrs.program.code == want);
  CHECK(f.values[static_cast<size_t>(n.outputs[0])].dtype == DType::F32);
  CHECK(count(f, OpKind::cast) == 1);  // x's cast to bf16 feeds a GEMM: no chain

  // Off, the cast ends every chain: nothing left to fuse here.
  const Graph off = check_same_graph(g, kElementwise, 1, without_casts());
  CHECK(count(off, OpKind::fused_elementwise) == 0);
  CHECK(count(off, OpKind::cast) == 2);
}

TEST_CASE("elementwise pass: casts first, in the middle and last of one chain, with the unfused bits") {
  for (DType low : {DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(low));
    const Graph g = recorded([low](RecordingBuilder& b) {
      const Value x = b.input("x", {5, 7});
      const Value h = b.input("h", {5, 7}, low);
      Value v = cast(b, h, DType::F32);              // first
      v = gelu(b, add(b, v, x));                     // f32
      v = mul(b, cast(b, v, low), h);                // middle: back to low
      v = bias_add(b, v, b.input("b", {7}, low));
      b.mark_output(cast(b, b.apply(OpKind::tanh, {v}), DType::F32));  // last
    });
    const Graph f = check_same_graph(g, kElementwise);
    validate(f);
    CHECK(f.nodes.size() == 1);
    const Node& n = only_fused(f);
    CHECK(n.attrs.program.size() == 8);
    CHECK(f.values[static_cast<size_t>(n.outputs[0])].dtype == DType::F32);
    CHECK(count(check_same_graph(g, kElementwise, 1, without_casts()), OpKind::cast) == 3);
  }
}

TEST_CASE("elementwise pass: no chain holds bf16 and f16, integer and parameter casts stay, in place keeps the dtype") {
  // bf16 -> f32 -> f16: the chain ends before the second 16-bit dtype.
  const Graph two = recorded([](RecordingBuilder& b) {
    const Value h = relu(b, b.input("h", {8}, DType::BF16));
    const Value v = add(b, cast(b, h, DType::F32), b.input("x", {8}));
    b.mark_output(scale(b, cast(b, v, DType::F16), 2.0f));
  });
  const Graph f2 = check_same_graph(two, kElementwise);
  validate(f2);
  CHECK(count(f2, OpKind::fused_elementwise) == 2);
  for (const Node& n : f2.nodes) {
    std::vector<DType> in;
    for (int v : n.inputs) in.push_back(f2.values[static_cast<size_t>(v)].dtype);
    CHECK(ew_program_dtypes(n.attrs.program, in, nullptr) == "");
  }
  // A direct cast between the 16-bit dtypes is no chain op.
  const Graph direct = recorded([](RecordingBuilder& b) {
    b.mark_output(relu(b, cast(b, relu(b, b.input("h", {8}, DType::BF16)), DType::F16)));
  });
  CHECK(count(check_same_graph(direct, kElementwise), OpKind::fused_elementwise) == 0);
  // ids cast to f32 are no float program's input cast.
  const Graph ids = recorded([](RecordingBuilder& b) {
    b.mark_output(scale(b, add(b, cast(b, b.input("i", {8}, DType::I32), DType::F32), b.input("x", {8})), 2.0f));
  });
  const Graph fi = check_same_graph(ids, kElementwise);
  CHECK(count(fi, OpKind::cast) == 1);
  CHECK(only_fused(fi).attrs.program.size() == 2);
  // A parameter's cast is left to the low_copies pass.
  const Graph param = recorded([](RecordingBuilder& b) {
    b.mark_output(relu(b, add(b, b.input("h", {8}, DType::BF16), cast(b, b.parameter("p", {8}), DType::BF16))));
  });
  const Graph fp = check_same_graph(param, kElementwise);
  CHECK(count(fp, OpKind::cast) == 1);
  CHECK(only_fused(fp).attrs.program.size() == 2);
  // An in-place head whose chain ends in another dtype: the fused node is not in place.
  const Graph inplace = recorded([](RecordingBuilder& b) {
    const Value h = relu(b, b.input("h", {4, 6}, DType::BF16), /*in_place=*/true);
    b.mark_output(add(b, cast(b, h, DType::F32), b.input("x", {4, 6})));
  });
  CompileOptions flagged;
  flagged.plan.in_place = InPlacePolicy::flagged;
  CHECK_FALSE(only_fused(check_same_graph(inplace, kElementwise, 1, flagged)).attrs.in_place);
}

TEST_CASE("elementwise pass on autocast's bf16 and fp16 training steps: the casts join chains, with the unfused bits") {
  const ModelFn model = transformer_model(transformer_config(2, 8, 16, 2));
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    CompileOptions base;
    base.precision = p;
    check_same_training(model, kElementwise, 3, base);
    CompileOptions fused = base, off = base;
    fused.passes = off.passes = kElementwise;
    off.pass_options.elementwise_casts = false;
    const int before = count(*compile(model, base).graph, OpKind::cast);
    const int with_casts = count(*compile(model, fused).graph, OpKind::cast);
    const int without = count(*compile(model, off).graph, OpKind::cast);
    MESSAGE(std::string(precision_name(p)), " transformer training step: ", before, " casts unfused, ", without,
            " with the elementwise pass without casts, ", with_casts, " with them");
    CHECK(without == before);
    CHECK(with_casts < before);
  }
}

}  // namespace tg::testing
