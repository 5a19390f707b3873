// The fused ops of the elementwise and optimizer passes in the IR: a fused_elementwise
// program's rules (graph/ew_program.h) and its shapes, its graph-file form and every
// error reading it, the dtypes a cast gives its values, and the roles and aliasing rules
// of the multi-tensor updates.
#include <doctest/doctest.h>

#include <string>

#include "graph/builder.h"
#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/shape_inference.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "tests/graph/graph_equal.h"
#include "tests/graph/load_error.h"

namespace {

using namespace tg;

Attrs program(std::vector<EwInstr> code) {
  Attrs at;
  at.program.code = std::move(code);
  return at;
}

std::string shape_error(std::vector<Shape> in, const Attrs& at) {
  try {
    infer_shape(OpKind::fused_elementwise, in, at, "f");
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

using testing::load_error;

// A file with one fused_elementwise node over x [2,4], y [2,4] and b [4].
std::string fused_file(const std::string& inputs, const std::string& program) {
  return R"({"format": "twograph-graph", "version": 1,
    "inputs": [{"name": "x", "shape": [2, 4]}, {"name": "y", "shape": [2, 4]}, {"name": "b", "shape": [4]}],
    "nodes": [{"name": "f", "op": "fused_elementwise", "inputs": )" +
         inputs + R"(, "attrs": {"program": )" + program + R"(}}],
    "outputs": ["f"]})";
}

#define CHECK_FRAGMENT(msg, fragment)                                   \
  do {                                                                  \
    const std::string m_ = (msg);                                       \
    CHECK_MESSAGE(m_.find(fragment) != std::string::npos, m_);          \
  } while (0)

}  // namespace

TEST_CASE("fused_elementwise: the output has the full inputs' shape, and (cols) inputs are rows") {
  const Attrs at = program({{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::relu, 4}});
  CHECK(infer_shape(OpKind::fused_elementwise, {{2, 3, 4}, {2, 3, 4}, {4}}, at, "f") == Shape{2, 3, 4});
  CHECK(infer_shape(OpKind::fused_elementwise, {{4}, {2, 3, 4}, {2, 3, 4}}, at, "f") == Shape{2, 3, 4});
  CHECK(infer_shape(OpKind::fused_elementwise, {{4}, {4}, {4}}, at, "f") == Shape{4});
  CHECK_FRAGMENT(shape_error({{2, 4}, {3, 4}, {4}}, at), "input 0 is [2,4]; every input has the output's shape [3,4] or is a [4] row");
  CHECK_FRAGMENT(shape_error({{2, 4}, {2, 4}, {1, 4}}, at), "input 2 is [1,4]");
  CHECK_FRAGMENT(shape_error({{2, 4}, {2, 4}, {3}}, at), "input 2 is [3]");
}

TEST_CASE("fused_elementwise: a program is a chain over its inputs, and says what is wrong otherwise") {
  const std::vector<Shape> two{{4}, {4}};
  CHECK(shape_error(two, program({{EwOp::sub, 1, 0}, {EwOp::mul, 2, 2}})) == "");  // the previous result twice
  CHECK_FRAGMENT(shape_error(two, Attrs{}), "program has 0 instructions; give 1 to 128");
  CHECK_FRAGMENT(shape_error(two, program(std::vector<EwInstr>(129, {EwOp::add, 0, 1}))), "program has 129 instructions");
  CHECK_FRAGMENT(shape_error(two, program({{static_cast<EwOp>(42), 0, 1}})), "instruction 0: opcode 42 is not an op");
  CHECK_FRAGMENT(shape_error(two, program({{EwOp::add, 0, 2}})),
                 "instruction 0 (add): operand 1 is 2; operands are the inputs 0..1 (the first instruction reads inputs only)");
  CHECK_FRAGMENT(shape_error(two, program({{EwOp::add, 0, 1}, {EwOp::relu, 4}})),
                 "operands are the inputs 0..1 and the previous result 2");
  CHECK_FRAGMENT(shape_error(two, program({{EwOp::add, 0, 1}, {EwOp::mul, 0, 1}})),
                 "instruction 1 (mul) does not read the previous result 2");
  CHECK_FRAGMENT(shape_error(two, program({{EwOp::relu, 0}})), "input 1 is never read");
  CHECK_FRAGMENT(shape_error(std::vector<Shape>(9, Shape{4}), program({{EwOp::relu, 0}})), "has 9 inputs; a fused program reads 1 to 8");
  // Unary ops ignore operand b, and only scale reads alpha: programs that differ there are equal.
  EwInstr r1{EwOp::relu, 0, 3, 2.0f}, r2{EwOp::relu, 0, 0, 1.0f};
  CHECK(r1 == r2);
  CHECK_FALSE(EwInstr{EwOp::scale, 0, 0, 2.0f} == EwInstr{EwOp::scale, 0, 0, 1.0f});
}

TEST_CASE("fused_elementwise in a graph file: the program reads and saves as (op, operands.., alpha)") {
  const Graph g = load_graph_json(
      fused_file(R"(["x", "y", "b"])", R"([["mul", 0, 1], ["add", 3, 2], ["gelu", 4], ["scale", 5, 0.1], ["sub", 6, 0]])"),
      "t.json");
  REQUIRE(g.nodes.size() == 1);
  const std::vector<EwInstr> want = {{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::gelu, 4}, {EwOp::scale, 5, 0, 0.1f},
                                     {EwOp::sub, 6, 0}};
  CHECK(g.nodes[0].attrs.program.code == want);
  CHECK(g.values[static_cast<size_t>(g.nodes[0].outputs[0])].shape == Shape{2, 4});
  CHECK(validation_errors(g).empty());
  const std::string text = save_graph_json(g);
  CHECK_FRAGMENT(text, R"("program":[["mul",0,1],["add",3,2],["gelu",4],["scale",5,0.1],["sub",6,0]])");
  const Graph back = load_graph_json(text, "saved.json");
  CHECK(testing::graph_difference(g, back) == "");
}

TEST_CASE("fused_elementwise in a graph file: every malformed program is refused with its path") {
  const std::string xy = R"(["x", "y"])";
  CHECK_FRAGMENT(load_error(fused_file(xy, R"({"add": [0, 1]})")), "nodes[0].attrs.program: must be an array of 1 to 128 instructions");
  CHECK_FRAGMENT(load_error(fused_file(xy, "[]")), "got 0 instructions");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["add", 0, 1], "relu"])")),
                 "nodes[0].attrs.program[1]: must be an instruction [op, operand, ...]");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["softmax", 0]])")),
                 "nodes[0].attrs.program[0][0]: unknown op 'softmax'; a program runs: add, sub, mul, scale, relu");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["add", 0]])")), "add takes [op, a, b], got 2 entries");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["scale", 0, 1, 2]])")), "scale takes [op, a, alpha], got 4 entries");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["relu", 0, 1]])")), "relu takes [op, a], got 3 entries");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["add", 0, 200]])")), "program[0][2]: 200 is out of range; must be in [0, 135]");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["add", 0, 1.5]])")), "program[0][2]: must be an integer");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["scale", 0, "half"], ["add", 2, 1]])")), "program[0][2]: must be a number");
  CHECK_FRAGMENT(load_error(fused_file(xy, R"([["add", 0, 1], ["mul", 0, 1]])")),
                 "nodes[0]: fused_elementwise 'f': instruction 1 (mul) does not read the previous result 2");
  CHECK_FRAGMENT(load_error(fused_file(R"(["x", "b", "y"])", R"([["add", 0, 1], ["relu", 5]])")), "operand 0 is 5");
  CHECK_FRAGMENT(load_error(fused_file("[]", R"([["relu", 0]])")), "fused_elementwise 'f' takes one or more inputs, got 0");
  // Other ops do not take a program.
  CHECK_FRAGMENT(load_error(R"({"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [4]}],
    "nodes": [{"name": "r", "op": "relu", "inputs": ["x"], "attrs": {"program": [["relu", 0]]}}], "outputs": ["r"]})"),
                 "relu does not take attribute 'program'");
}

TEST_CASE("multi updates: every group's parameter and velocity roles, and nothing written twice") {
  Graph g;
  RecordingBuilder b(g);
  const Value w = b.parameter("w", {4}), u = b.parameter("u", {4});
  const Value gw = b.input("gw", {4}), gu = b.input("gu", {4});
  const Value vw = b.optimizer_state(w, "w.velocity"), vu = b.optimizer_state(u, "u.velocity");
  Attrs at;
  at.lr = 0.1f;
  b.apply(OpKind::sgd_momentum_multi, {w, gw, vw, u, gu, vu}, at, "step");
  CHECK(validation_errors(g).empty());
  auto errors = [&g] {
    std::string all;
    for (const std::string& e : validation_errors(g)) all += e + "\n";
    return all;
  };
  Graph ok = g;
  g.nodes[0].inputs[3] = gu.id;  // the second group's parameter is an input
  CHECK_FRAGMENT(errors(), "sgd_momentum_multi 'step': updates 'gu', which is input, not a parameter; an optimizer update "
                           "writes a parameter in place: pass the parameter as input 3");
  g = ok;
  g.nodes[0].inputs[5] = u.id;
  CHECK_FRAGMENT(errors(), "sgd_momentum_multi 'step': velocity 'u' is parameter, not optimizer_state");
  CHECK_FRAGMENT(errors(), "'u' is written by inputs 3 and 5; each parameter and velocity may appear in one group only");
  g = ok;
  g.nodes[0].inputs[4] = w.id;
  CHECK_FRAGMENT(errors(), "gradient 'w' (input 4) is also written by input 0");
  g = ok;
  g.nodes[0].inputs[4] = gw.id;  // a gradient read twice is fine
  CHECK(errors().empty());
  g = ok;
  g.nodes[0].inputs.pop_back();
  CHECK_FRAGMENT(errors(), "sgd_momentum_multi 'step': takes a multiple of 3 inputs (and one more, last: the found-inf flag), got 5");

  CHECK_THROWS_WITH_AS(infer_shape(OpKind::sgd_multi, {{4}, {4}, {3}, {4}}, at, "s"),
                       doctest::Contains("sgd_multi s: group 1 (inputs 2..3): gradient [4] differs from the parameter [3]"),
                       GraphError);
  at.momentum = 1.0f;
  CHECK_THROWS_WITH_AS(infer_shape(OpKind::sgd_momentum_multi, {{4}, {4}, {4}}, at, "s"),
                       doctest::Contains("momentum = 1 must be in [0, 1)"), GraphError);
}

TEST_CASE("fused_elementwise: every instruction's name in a graph file reads back as it") {
  for (int i = 0; i < kNumEwOps; ++i) {
    const EwOp op = static_cast<EwOp>(i);
    CAPTURE(ew_op_name(op));
    EwOp back = EwOp::add;
    CHECK(parse_ew_op(ew_op_name(op), back));
    CHECK(back == op);
  }
}

namespace {

// A file with one fused_elementwise node over h [2,4] of dtype `low`, x [2,4] f32 and g [2,4] f16.
std::string typed_file(const std::string& inputs, const std::string& program, const std::string& low = "bf16") {
  return R"({"format": "twograph-graph", "version": 1,
    "inputs": [{"name": "h", "shape": [2, 4], "dtype": ")" + low + R"("}, {"name": "x", "shape": [2, 4]},
               {"name": "g", "shape": [2, 4], "dtype": "f16"}],
    "nodes": [{"name": "f", "op": "fused_elementwise", "inputs": )" +
         inputs + R"(, "attrs": {"program": )" + program + R"(}}],
    "outputs": ["f"]})";
}

}  // namespace

TEST_CASE("fused_elementwise: a cast gives its result a dtype, and the output has the last result's") {
  const EwProgram p{{{EwOp::cast, 0, 0, 1.0f, DType::F32}, {EwOp::add, 2, 1}, {EwOp::cast, 3, 0, 1.0f, DType::F16}}};
  std::vector<DType> results;
  CHECK(ew_program_dtypes(p, {DType::F16, DType::F32}, &results) == "");
  CHECK(results == std::vector<DType>{DType::F32, DType::F32, DType::F16});
  CHECK(infer_dtype(OpKind::fused_elementwise, {DType::F16, DType::F32}, program(p.code), "f") == DType::F16);
  CHECK_FRAGMENT(ew_program_dtypes(p, {DType::F32, DType::BF16}, nullptr),
                 "instruction 1 (add) reads operand 2 (f32) and operand 1 (bf16); both operands of an op have one dtype");
  CHECK_FRAGMENT(ew_program_dtypes(p, {DType::BF16, DType::F32}, nullptr),
                 "instruction 2 (cast) is f16 but the program already has bf16 values");
  CHECK_FRAGMENT(ew_program_dtypes(p, {DType::I32, DType::F32}, nullptr), "input 0 is i32; a program reads f32, bf16 or f16");
  CHECK_FRAGMENT(ew_program_dtypes(program({{EwOp::cast, 0, 0, 1.0f, DType::I64}}).program, {DType::F32}, nullptr),
                 "instruction 0 (cast): to = i64 is not a float dtype");
  // Without casts a program keeps its inputs' one dtype, as the ops it fuses do.
  CHECK(infer_dtype(OpKind::fused_elementwise, {DType::BF16, DType::BF16}, program({{EwOp::mul, 0, 1}, {EwOp::relu, 2}}), "f") ==
        DType::BF16);
  // The cast's dtype is part of the instruction; the other ops ignore `to`.
  CHECK_FALSE(EwInstr{EwOp::cast, 0, 0, 1.0f, DType::BF16} == EwInstr{EwOp::cast, 0, 0, 1.0f, DType::F16});
  CHECK(EwInstr{EwOp::relu, 0, 0, 1.0f, DType::BF16} == EwInstr{EwOp::relu, 0, 0, 1.0f, DType::F16});
}

TEST_CASE("fused_elementwise in a graph file: a cast reads and saves as (cast, a, dtype), and its dtypes are checked") {
  const Graph g = load_graph_json(typed_file(R"(["h", "x"])", R"([["cast", 0, "f32"], ["add", 2, 1], ["cast", 3, "bf16"]])"),
                                  "t.json");
  REQUIRE(g.nodes.size() == 1);
  const std::vector<EwInstr> want = {{EwOp::cast, 0, 0, 1.0f, DType::F32}, {EwOp::add, 2, 1}, {EwOp::cast, 3, 0, 1.0f, DType::BF16}};
  CHECK(g.nodes[0].attrs.program.code == want);
  CHECK(g.values[static_cast<size_t>(g.nodes[0].outputs[0])].dtype == DType::BF16);
  CHECK(validation_errors(g).empty());
  const std::string text = save_graph_json(g);
  CHECK_FRAGMENT(text, R"("program":[["cast",0,"f32"],["add",2,1],["cast",3,"bf16"]])");
  CHECK(testing::graph_difference(g, load_graph_json(text, "saved.json")) == "");
  CHECK_FRAGMENT(text_dump(g), R"(f = fused_elementwise(h[2,4], x[2,4]) {"program":[["cast",0,"f32"],["add",2,1],["cast",3,"bf16"]]} -> [2,4] bf16)");

  const std::string hx = R"(["h", "x"])";
  CHECK_FRAGMENT(load_error(typed_file(hx, R"([["add", 0, 1]])")),
                 "fused_elementwise 'f': instruction 0 (add) reads operand 0 (bf16) and operand 1 (f32); both operands");
  CHECK_FRAGMENT(load_error(typed_file(hx, R"([["cast", 0], ["add", 2, 1]])")), "cast takes [op, a, dtype], got 2 entries");
  CHECK_FRAGMENT(load_error(typed_file(hx, R"([["cast", 0, "f64"], ["add", 2, 1]])")), "program[0][2]: unknown dtype 'f64'");
  CHECK_FRAGMENT(load_error(typed_file(hx, R"([["cast", 0, "i32"], ["add", 2, 1]])")),
                 "instruction 0 (cast): to = i32 is not a float dtype; a program casts to f32, bf16 or f16");
  CHECK_FRAGMENT(load_error(typed_file(R"(["h", "g"])", R"([["cast", 0, "f16"], ["add", 2, 1]])")),
                 "input 1 is f16 but the program already has bf16 values; a program holds f32 and one of bf16 and f16");
  // A node that declares a dtype other than the program's last result's.
  std::string declared = typed_file(hx, R"([["cast", 0, "f32"], ["add", 2, 1]])");
  declared.replace(declared.find(R"("attrs")"), 7, R"("dtype": "bf16", "attrs")");
  CHECK_FRAGMENT(load_error(declared), "f32");
}
