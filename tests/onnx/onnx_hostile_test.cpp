// Hostile models against the importer's checks, one test case per mechanism: each
// model must be refused with a GraphError that names the node (or value) and the
// problem; none may crash, pass, or end in an internal error (a std::logic_error
// would escape refusal() and fail the case).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/onnx/onnx_model_builder.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::testing {
namespace {

// The message of the refusal, which must hold every fragment.
void refused(const ModelBuilder& mb, const std::vector<std::string>& fragments, const onnx::ImportOptions& o = {}) {
  const std::string msg = refusal(mb, o);
  for (const std::string& f : fragments) CHECK_MESSAGE(msg.find(f) != std::string::npos, "'", f, "' not in: ", msg);
}

void imports(const ModelBuilder& mb, const onnx::ImportOptions& o = {}) { CHECK(refusal(mb, o) == "(imported without an error)"); }

ModelBuilder relu_model(int64_t opset = 18) {
  ModelBuilder mb(opset);
  mb.input("x", {2, 3}).node("Relu", {"x"}, {"y"}).output("y");
  return mb;
}

onnx::Tensor tensor(std::vector<int64_t> dims, std::vector<float> f) {
  onnx::Tensor t;
  t.dims = std::move(dims);
  t.f = std::move(f);
  return t;
}

Attribute atensor(onnx::Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::tensor;
  a.t = std::move(t);
  return a;
}

constexpr int64_t k2p32 = int64_t{1} << 32;

TEST_CASE("onnx hostile: every node's arity is checked before the formula matcher and the handlers look at it") {
  // The tanh GELU formula around a Tanh without its input: the matcher read inputs[0] (SIGSEGV).
  ModelBuilder tanh;
  tanh.input("x", {2, 3}).init("k", {1}, {0.7978845608f}).node("Mul", {"x", "k"}, {"s"});
  tanh.node("Tanh", {}, {"t"}).node("Relu", {"t"}, {"y"}).output("y");
  refused(tanh, {"test.onnx: node 'n1' (Tanh): has 0 inputs, but Tanh takes 1 input"});

  ModelBuilder pow;
  pow.input("x", {2, 3}).node("Pow", {"x"}, {"y"}).output("y");
  refused(pow, {"node 'n0' (Pow): has 1 input, but Pow takes 2 inputs"});

  ModelBuilder sqrt;
  sqrt.input("x", {2, 3}).node("Sqrt", {"x"}, {}).node("Relu", {"x"}, {"y"}).output("y");
  refused(sqrt, {"node 'n0' (Sqrt): has 0 outputs, but Sqrt gives 1 output"});

  ModelBuilder div;
  div.input("x", {2, 3}).node("Div", {"x", "x", "x"}, {"y"}).output("y");
  refused(div, {"node 'n0' (Div): has 3 inputs, but Div takes 2 inputs"});

  ModelBuilder omitted;
  omitted.input("x", {2, 3}).node("Mul", {"x", ""}, {"y"}).output("y");
  refused(omitted, {"node 'n0' (Mul): input 1 is \"\" (omitted), but Mul requires it"});

  ModelBuilder concat;
  concat.ints("a", {1}).input("x", {2, 3}).node("Concat", {"a", ""}, {"c"}, {{"axis", ai(0)}});
  concat.node("Relu", {"x"}, {"y"}).output("y");
  refused(concat, {"node 'n0' (Concat): input 1 is \"\" (omitted); every input of Concat is required"});

  ModelBuilder unsq(13);
  unsq.input("x", {2, 3}).node("Unsqueeze", {"x"}, {"y"}, {{"axes", aints({0})}}).output("y");
  refused(unsq, {"node 'n0' (Unsqueeze): has 1 input, but Unsqueeze takes 2 inputs from opset 13"});

  ModelBuilder ln;
  ln.input("x", {2, 3}).node("LayerNormalization", {"x"}, {"y"}).output("y");
  refused(ln, {"node 'n0' (LayerNormalization): has 1 input, but LayerNormalization takes 2 to 3 inputs"});

  ModelBuilder nothing;
  nothing.input("x", {2, 3}).node("Foo", {"x"}, {}).output("x");
  nothing.m.nodes[0].name = "";  // nameless and without outputs: named by its place
  refused(nothing, {"node #0 (Foo): has no outputs"});

  // What ONNX lets a node omit stays allowed: Gemm's C, Dropout's mask output.
  ModelBuilder gemm;
  gemm.input("a", {2, 3}).init("b", {3, 4}, std::vector<float>(12, 0.5f)).node("Gemm", {"a", "b", ""}, {"y"});
  gemm.output("y");
  imports(gemm);
  ModelBuilder dropout;
  dropout.input("x", {2, 3}).node("Dropout", {"x", "", ""}, {"y", ""}).output("y");
  imports(dropout);
}

TEST_CASE("onnx hostile: every op the import maps is in the arity table") {
  for (const auto& [op, handler] : onnx::handlers()) CHECK_MESSAGE(onnx::op_spec(op) != nullptr, op);
}

TEST_CASE("onnx hostile: products of dims are checked multiplies that name the node") {
  // Known dims 2^32 * 2^32 wrapped to 0, and the -1 dim divided by it (SIGFPE).
  ModelBuilder wrap;
  wrap.input("x", {2, 3}).ints("shape", {k2p32, k2p32, -1}).node("Reshape", {"x", "shape"}, {"y"}).output("y");
  refused(wrap, {"node 'n0' (Reshape): a product of dims, 4294967296 * 4294967296, overflows int64"});

  ModelBuilder wrap0;
  wrap0.input("x", {2, 3}).ints("shape", {int64_t{1} << 62, 4, -1}).node("Reshape", {"x", "shape"}, {"y"});
  wrap0.output("y");
  refused(wrap0, {"node 'n0' (Reshape): a product of dims, 4611686018427387904 * 4, overflows int64"});

  // A constant whose dims wrap to its element count was read past its data by Gather.
  ModelBuilder gather;
  gather.input("x", {2, 3});
  gather.m.initializers["d"] = tensor({k2p32, k2p32, 1}, {});
  gather.ints("i", {5}).node("Gather", {"d", "i"}, {"g"}).node("Relu", {"x"}, {"y"}).output("y");
  refused(gather, {"initializer 'd': a product of dims, 4294967296 * 4294967296, overflows int64"});

  ModelBuilder short_data;
  short_data.input("x", {2, 3});
  short_data.m.initializers["d"] = tensor({4, 4}, {1, 2, 3});
  short_data.node("Relu", {"x"}, {"y"}).output("y");
  refused(short_data, {"initializer 'd': holds 3 values, but its dims [4,4] give 16"});

  // Shape arithmetic folded at import: integers that overflow are refused, not wrapped.
  ModelBuilder mul;
  mul.input("x", {2, 3}).ints("a", {int64_t{1} << 62}).ints("b", {4}).node("Mul", {"a", "b"}, {"c"});
  mul.node("Reshape", {"x", "c"}, {"y"}).output("y");
  refused(mul, {"node 'n0' (Mul): the integer Mul of 4611686018427387904 and 4 overflows int64"});

  ModelBuilder neg;
  neg.input("x", {2, 3}).ints("a", {std::numeric_limits<int64_t>::min()}).node("Neg", {"a"}, {"c"});
  neg.node("Reshape", {"x", "c"}, {"y"}).output("y");
  refused(neg, {"node 'n0' (Neg): the integer Neg of -9223372036854775808 overflows int64"});

  ModelBuilder cast;
  cast.input("x", {2, 3}).init("f", {1}, {1e30f}).node("Cast", {"f"}, {"c"}, {{"to", ai(7)}});
  cast.node("Reshape", {"x", "c"}, {"y"}).output("y");
  refused(cast, {"node 'n0' (Cast): casts 1e+30 to an integer, which int64 cannot hold"});

  // A scalar has no axis 0 to squeeze or gather along.
  ModelBuilder squeeze;
  squeeze.input("x", {2, 3}).init("s", {}, {1.0f}).ints("axes", {0}).node("Squeeze", {"s", "axes"}, {"q"});
  squeeze.node("Relu", {"x"}, {"y"}).output("y");
  refused(squeeze, {"node 'n0' (Squeeze): axis 0 is out of range for rank 0"});
}

TEST_CASE("onnx hostile: opsets that do not exist or are imported twice are refused") {
  refused(relu_model(onnx::kLatestOpset + 1),
          {"imports opset 29 of the default ONNX domain, which does not exist", "1 to 28"});
  refused(relu_model(0), {"imports no opset of the default ONNX domain"});
  refused(relu_model(-5), {"imports opset -5 of the default ONNX domain, which does not exist"});
  imports(relu_model(onnx::kLatestOpset));

  ModelBuilder twice = relu_model(17);
  twice.m.opset_imports = {{"", 17}, {"ai.onnx", 13}};
  refused(twice, {"imports the default ONNX domain twice (opsets 17 and 13)", "keep one opset_import per domain"});

  ModelBuilder custom = relu_model(17);
  custom.m.opset_imports = {{"", 17}, {"com.example", 0}};
  refused(custom, {"imports opset 0 of domain 'com.example'; opset versions start at 1"});

  ModelBuilder custom_twice = relu_model(17);
  custom_twice.m.opset_imports = {{"", 17}, {"com.example", 1}, {"com.example", 2}};
  refused(custom_twice, {"imports domain 'com.example' twice"});
}

TEST_CASE("onnx hostile: every value is defined once with a name that is not empty and is UTF-8") {
  ModelBuilder input;
  input.input("x", {2, 3}).node("Relu", {"x"}, {"x"}).output("x");
  refused(input, {"node 'n0' (Relu): defines 'x', which is already graph input 'x'", "SSA"});

  ModelBuilder init;
  init.input("x", {2, 3}).init("w", {2, 3}, std::vector<float>(6, 1.0f)).node("Relu", {"x"}, {"w"});
  init.node("Add", {"x", "w"}, {"y"}).output("y");
  refused(init, {"node 'n0' (Relu): defines 'w', which is already initializer 'w'"});

  ModelBuilder node;
  node.input("x", {2, 3}).node("Relu", {"x"}, {"y"}).node("Neg", {"x"}, {"y"}).output("y");
  refused(node, {"node 'n1' (Neg): defines 'y', which is already an output of node 'n0' (Relu)"});

  ModelBuilder both;
  both.input("w", {2, 3}).init("w", {2, 3}, std::vector<float>(6, 1.0f)).node("Relu", {"w"}, {"y"}).output("y");
  refused(both, {"graph input 'w' is also an initializer"});

  ModelBuilder empty_out;
  empty_out.input("x", {2, 3}).node("Relu", {"x"}, {""}).node("Relu", {"x"}, {"y"}).output("y");
  refused(empty_out, {"node 'n0' (Relu): output 0 has an empty name"});

  ModelBuilder empty_in;
  empty_in.input("", {2, 3}).node("Relu", {"x"}, {"y"}).output("y");
  refused(empty_in, {"graph input 0: has an empty name"});

  ModelBuilder empty_graph_out;
  empty_graph_out.input("x", {2, 3}).node("Relu", {"x"}, {"y"}).output("");
  refused(empty_graph_out, {"graph output 0: has an empty name"});

  ModelBuilder empty_init;
  empty_init.input("x", {2, 3}).init("", {1}, {1.0f}).node("Relu", {"x"}, {"y"}).output("y");
  refused(empty_init, {"an initializer: has an empty name"});

  ModelBuilder listed_twice = relu_model();
  listed_twice.output("y");
  refused(listed_twice, {"graph output 'y' is listed twice"});

  const std::string bad = "r\xff\xfe";
  ModelBuilder out_utf8;
  out_utf8.input("x", {2, 3}).node("Relu", {"x"}, {bad}).node("Neg", {bad}, {"y"}).output("y");
  refused(out_utf8, {"node 'n0' (Relu): output 0 'r\\xff\\xfe' is not valid UTF-8"});

  ModelBuilder in_utf8;
  in_utf8.input(bad, {2, 3}).node("Relu", {bad}, {"y"}).output("y");
  refused(in_utf8, {"graph input 0: its name 'r\\xff\\xfe' is not valid UTF-8"});

  ModelBuilder init_utf8;
  init_utf8.input("x", {2, 3}).init(bad, {3}, {1, 2, 3}).node("Add", {"x", bad}, {"y"}).output("y");
  refused(init_utf8, {"an initializer: its name 'r\\xff\\xfe' is not valid UTF-8"});

  ModelBuilder name_utf8 = relu_model();
  name_utf8.m.nodes[0].name = "\xc0\xaf";  // an overlong '/'
  refused(name_utf8, {"node '\\xc0\\xaf' (Relu): the node's name is not valid UTF-8"});

  // Names in any script are valid UTF-8, and stay.
  ModelBuilder unicode;
  unicode.input("\xce\xb1", {2, 3}).node("Relu", {"\xce\xb1"}, {"\xce\xb2"}).output("\xce\xb2");
  imports(unicode);
}

TEST_CASE("onnx hostile: attributes are read only as the type ONNX gives them") {
  // transB = 1.0 read as the int field (0): the weight used untransposed.
  ModelBuilder gemm;
  gemm.input("a", {2, 3}).init("b", {4, 3}, std::vector<float>(12, 0.5f));
  gemm.node("Gemm", {"a", "b"}, {"y"}, {{"transB", af(1.0f)}}).output("y");
  refused(gemm, {"node 'n0' (Gemm): attribute 'transB' is a float (FLOAT), but Gemm's transB is an integer (INT)"});

  ModelBuilder softmax;
  softmax.input("x", {2, 3}).node("Softmax", {"x"}, {"y"}, {{"axis", as("-1")}}).output("y");
  refused(softmax, {"node 'n0' (Softmax): attribute 'axis' is a string (STRING), but Softmax's axis is an integer"});

  ModelBuilder perm;
  perm.input("x", {2, 3}).node("Transpose", {"x"}, {"y"}, {{"perm", ai(1)}}).output("y");
  refused(perm, {"node 'n0' (Transpose): attribute 'perm' is an integer (INT), but Transpose's perm is a list of "
                 "integers (INTS)"});

  ModelBuilder gelu;
  gelu.input("x", {2, 3}).node("Gelu", {"x"}, {"y"}, {{"approximate", ai(1)}}).output("y");
  refused(gelu, {"node 'n0' (Gelu): attribute 'approximate' is an integer (INT), but Gelu's approximate is a string"});

  Attribute graph;  // a GRAPH or SPARSE_TENSOR attribute reads as Kind::other
  ModelBuilder other;
  other.input("x", {2, 3}).node("Flatten", {"x"}, {"y"}, {{"axis", graph}}).output("y");
  refused(other, {"node 'n0' (Flatten): attribute 'axis' is of another type"});

  ModelBuilder cast;
  cast.input("x", {2, 3}).node("Cast", {"x"}, {"y"}).output("y");
  refused(cast, {"node 'n0' (Cast): has no attribute 'to', which Cast requires"});

  ModelBuilder two_values;
  two_values.input("x", {2, 3}).node("Constant", {}, {"k"}, {{"value_float", af(2.0f)}, {"value_int", ai(3)}});
  two_values.node("Mul", {"x", "k"}, {"y"}).output("y");
  refused(two_values, {"node 'n0' (Constant): has 2 value attributes; a Constant has exactly one"});

  // Checked before the matcher reads it: keepdims of the LayerNorm formula's ReduceMean.
  ModelBuilder keepdims;
  keepdims.input("x", {2, 3}).node("ReduceMean", {"x"}, {"m"}, {{"axes", aints({-1})}, {"keepdims", af(1.0f)}});
  keepdims.node("Sub", {"x", "m"}, {"y"}).output("y");
  refused(keepdims, {"node 'n0' (ReduceMean): attribute 'keepdims' is a float (FLOAT)"});

  ModelBuilder tensor_attr;
  tensor_attr.input("x", {2, 3}).ints("shape", {2, 3});
  tensor_attr.node("ConstantOfShape", {"shape"}, {"c"}, {{"value", atensor(tensor({2}, {1.0f}))}});
  tensor_attr.node("Add", {"x", "c"}, {"y"}).output("y");
  refused(tensor_attr, {"node 'n0' (ConstantOfShape): attribute 'value': holds 1 values, but its dims [2] give 2"});
}

TEST_CASE("onnx hostile: infinite and NaN numbers are refused before they reach the graph file") {
  const float inf = std::numeric_limits<float>::infinity();
  ModelBuilder eps;
  eps.input("x", {2, 3}).init("g", {3}, {1, 1, 1});
  eps.node("LayerNormalization", {"x", "g"}, {"y"}, {{"epsilon", af(inf)}}).output("y");
  refused(eps, {"node 'n0' (LayerNormalization): attribute 'epsilon' is inf; give a finite number"});

  ModelBuilder alpha;
  alpha.input("a", {2, 3}).init("b", {3, 4}, std::vector<float>(12, 0.5f));
  alpha.node("Gemm", {"a", "b"}, {"y"}, {{"alpha", af(std::nanf(""))}}).output("y");
  refused(alpha, {"node 'n0' (Gemm): attribute 'alpha' is nan; give a finite number"});

  ModelBuilder scale;
  scale.input("x", {2, 3}).init("k", {1}, {inf}).node("Mul", {"x", "k"}, {"y"}).output("y");
  refused(scale, {"node 'n0' (Mul): maps to a scale with alpha = inf", "finite"});

  ModelBuilder bias;
  bias.input("x", {2, 3}).init("k", {1}, {-inf}).node("Add", {"x", "k"}, {"y"}).output("y");
  refused(bias, {"node 'n0' (Add): maps to a fill with value = -inf"});

  ModelBuilder tiny;  // 1 / 1e-45 overflows f32
  tiny.input("x", {2, 3}).init("k", {1}, {1e-45f}).node("Div", {"x", "k"}, {"y"}).output("y");
  refused(tiny, {"node 'n0' (Div): maps to a scale with alpha = inf"});

  ModelBuilder weight;
  weight.input("x", {2, 3}).init("w", {3}, {1.0f, inf, 2.0f}).node("Add", {"x", "w"}, {"y"}).output("y");
  refused(weight, {"node 'n0' (Add): 'w' holds inf at element 1; it becomes a parameter"});

  ModelBuilder beta;  // beta * C overflows to inf in the folded bias
  beta.input("a", {2, 3}).init("b", {3, 4}, std::vector<float>(12, 0.5f)).init("c", {4}, {1e30f, 0, 0, 0});
  beta.node("Gemm", {"a", "b", "c"}, {"y"}, {{"beta", af(1e30f)}}).output("y");
  refused(beta, {"node 'n0' (Gemm): 'c' holds inf at element 0"});

  // The LayerNorm formula with an inf epsilon fuses to one node; its epsilon is refused.
  ModelBuilder formula;
  const std::map<std::string, Attribute> axes{{"axes", aints({-1})}};
  formula.input("x", {2, 4}).init("two", {}, {2.0f}).init("eps", {}, {inf});
  formula.node("ReduceMean", {"x"}, {"mean"}, axes).node("Sub", {"x", "mean"}, {"d"}).node("Pow", {"d", "two"}, {"sq"});
  formula.node("ReduceMean", {"sq"}, {"var"}, axes).node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"s"});
  formula.node("Div", {"d", "s"}, {"y"}).output("y");
  refused(formula, {"node 'n6' (LayerNormalization): attribute 'epsilon' is inf"});
}

TEST_CASE("onnx hostile: values over the IR's per-value limit are bad input that names the value") {
  ModelBuilder dim;
  dim.input("x", {int64_t{1} << 40, 3}).node("Relu", {"x"}, {"y"}).output("y");
  refused(dim, {"test.onnx: input 'x': a value of shape [1099511627776,3] is over the IR's limit of 68719476736 "
                "elements (256 GiB)"});

  ModelBuilder sym;
  sym.symbolic_input("x", "batch", 3).node("Relu", {"x"}, {"y"}).output("y");
  onnx::ImportOptions big;
  big.dims["batch"] = 10000000000000;
  refused(sym, {"input 'x': a value of shape [10000000000000,3] is over the IR's limit"}, big);
  big.dims["batch"] = std::numeric_limits<int64_t>::max();
  refused(sym, {"input 'x': a value of shape [9223372036854775807,3] is over the IR's limit"}, big);

  ModelBuilder expand;
  expand.input("x", {2, 3}).ints("shape", {int64_t{1} << 20, int64_t{1} << 20, 2, 3});
  expand.node("Expand", {"x", "shape"}, {"y"}).output("y");
  refused(expand, {"node 'n0' (Expand): a value of shape [1048576,1048576,2,3] is over the IR's limit"});

  ModelBuilder negative;
  negative.input("x", {1, 3}).ints("shape", {-4, 3}).node("Expand", {"x", "shape"}, {"y"}).output("y");
  refused(negative, {"node 'n0' (Expand): shape [-4,3] has a dim < 1"});

  // Two operands within the limit whose product is not.
  ModelBuilder matmul;
  matmul.input("a", {int64_t{1} << 20, 1}).input("b", {1, int64_t{1} << 20});
  matmul.node("MatMul", {"a", "b"}, {"y"}).output("y");
  refused(matmul, {"node 'n0' (MatMul): a value of shape [1048576,1048576] is over the IR's limit"});
}

TEST_CASE("onnx hostile: a folded constant with a negative dim is named as such, not as too large") {
  ModelBuilder mb;
  mb.input("x", {2, 3}).ints("shape", {2, -3}).node("ConstantOfShape", {"shape"}, {"c"}).node("Add", {"x", "c"}, {"y"});
  mb.output("y");
  const std::string msg = refusal(mb);
  CHECK_MESSAGE(msg.find("with a negative dim -3") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("elements") == std::string::npos, msg);
}

}  // namespace
}  // namespace tg::testing
