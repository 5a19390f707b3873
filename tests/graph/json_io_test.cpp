// Graph files: loading, every kind of load error, and exact save -> load round trips.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/models.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "tests/common/models.h"
#include "tests/graph/graph_equal.h"
#include "tests/graph/load_error.h"

namespace {

using namespace tg;

const std::string kHead = R"("format": "twograph-graph", "version": 1, )";

using testing::load_error;

#define CHECK_LOAD_ERROR(text, fragment)                                  \
  do {                                                                    \
    const std::string err_ = load_error(text);                            \
    CHECK_MESSAGE(err_.find(fragment) != std::string::npos, err_);        \
  } while (0)

void check_round_trip(const Graph& g) {
  const std::string text = save_graph_json(g);
  const Graph back = load_graph_json(text, "saved.json");
  CHECK_MESSAGE(testing::graph_difference(g, back) == "", testing::graph_difference(g, back) << "\n" << text);
  CHECK(save_graph_json(back) == text);  // and saving again is stable
}

}  // namespace

TEST_CASE("json: the example of the brief loads with inferred shapes") {
  const Graph g = load_graph_json("{" + kHead + R"(
    "inputs": [{"name": "x", "shape": [32, 512]}],
    "parameters": [{"name": "w0", "shape": [512, 256], "init": {"uniform": 0.05}}],
    "nodes": [{"name": "h0", "op": "matmul", "inputs": ["x", "w0"], "attrs": {"trans_b": false}}],
    "outputs": ["h0"]})", "brief.json");
  REQUIRE(g.values.size() == 3);
  CHECK(g.values[2].name == "h0");
  CHECK(g.values[2].shape == Shape{32, 256});
  CHECK(g.values[2].role == Role::output);
  CHECK(g.values[2].producer == 0);
  CHECK(g.values[1].role == Role::parameter);
  CHECK(g.values[1].init.a == 0.05f);
  CHECK(g.outputs == std::vector<int>{2});
  CHECK(validation_errors(g).empty());
}

TEST_CASE("json: roles, dtypes, optimizer state defaults") {
  const Graph g = load_graph_json("{" + kHead + R"(
    "inputs": [{"name": "g", "shape": [4]}],
    "parameters": [{"name": "w", "shape": [4]}],
    "optimizer_state": [{"name": "v", "shape": [4]}],
    "nodes": [{"name": "d", "op": "copy", "inputs": ["g"], "role": "gradient"},
              {"name": "w.update", "op": "sgd_momentum", "inputs": ["w", "d", "v"], "attrs": {"lr": 0.5}}],
    "outputs": []})", "t.json");
  CHECK(g.values[g.find_value("v")].role == Role::optimizer_state);
  CHECK(g.values[g.find_value("v")].init == ParamInit{ParamInit::Kind::constant, 0.0f});
  CHECK(g.values[g.find_value("w")].init == ParamInit{});
  CHECK(g.values[g.find_value("d")].role == Role::gradient);
  CHECK(g.nodes[1].outputs.empty());
  CHECK(g.nodes[1].attrs.lr == 0.5f);
  CHECK(validation_errors(g).empty());
}

TEST_CASE("json: nodes may come in any order (forward references)") {
  const Graph g = load_graph_json("{" + kHead + R"(
    "inputs": [{"name": "x", "shape": [2, 3]}],
    "nodes": [{"name": "b", "op": "relu", "inputs": ["a"]},
              {"name": "a", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}}],
    "outputs": ["b"]})", "t.json");
  CHECK(g.values[g.find_value("b")].shape == Shape{3, 2});
}

TEST_CASE("json: JSON syntax errors report line and column") {
  CHECK_LOAD_ERROR("{\n  \"format\": \"twograph-graph\",\n  \"version\": 1\n  \"nodes\": []\n}", "t.json:4:9: invalid JSON");
  CHECK_LOAD_ERROR("{\"format\": \"twograph-graph\", \"nodes\": [", "is the file truncated?");
  CHECK_LOAD_ERROR("", "t.json: is empty");
  CHECK_LOAD_ERROR(" \n", "t.json: is empty");
  CHECK_LOAD_ERROR("{\"a\": 1, \"a\": 2}", "key 'a' appears twice");
}

TEST_CASE("json: deep nesting is refused before parsing") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_LOAD_ERROR(deep, "t.json:1:65: JSON nested more than 64 levels deep");
  // Brackets inside strings do not count.
  CHECK_NOTHROW(load_graph_json("{" + kHead + "\"description\": \"" + std::string(1000, '[') + "\", \"nodes\": [], \"outputs\": []}", "t.json"));
}

TEST_CASE("json: size cap") {
  const std::string big(kMaxGraphFileBytes + 1, ' ');
  CHECK_LOAD_ERROR(big, "graph files are limited to 64 MiB");
}

TEST_CASE("json: wrong types and bad numbers name the JSON path") {
  auto with_input_shape = [](const std::string& shape) {
    return "{" + kHead + R"("inputs": [{"name": "x", "shape": )" + shape + R"(}], "nodes": [], "outputs": ["x"]})";
  };
  CHECK_LOAD_ERROR(with_input_shape("[32.5, 4]"), "inputs[0].shape[0]: must be an integer, got 32.5");
  CHECK_LOAD_ERROR(with_input_shape("[4, \"8\"]"), "inputs[0].shape[1]: must be an integer, got a string");
  CHECK_LOAD_ERROR(with_input_shape("[4, -3]"), "inputs[0].shape[1]: dim is -3; every dim must be >= 1");
  CHECK_LOAD_ERROR(with_input_shape("[0]"), "dim is 0");
  CHECK_LOAD_ERROR(with_input_shape("[99999999999999999999]"), "inputs[0].shape[0]: must be an integer, got 1e+20");
  CHECK_LOAD_ERROR(with_input_shape("[18446744073709551615]"), "is too large");
  CHECK_LOAD_ERROR(with_input_shape("[4294967296, 4294967296, 4]"), "overflows int64");
  CHECK_LOAD_ERROR(with_input_shape("[]"), "inputs[0].shape: has 0 dims");
  CHECK_LOAD_ERROR(with_input_shape("[1, 2, 3, 4, 5, 6, 7]"), "has 7 dims; give 1 to 6");
  CHECK_LOAD_ERROR(with_input_shape("\"32x512\""), "inputs[0].shape: must be an array of dims");
  CHECK_LOAD_ERROR(with_input_shape("[1e400]"), "t.json");
}

TEST_CASE("json: unknown keys anywhere are errors") {
  CHECK_LOAD_ERROR("{" + kHead + R"("input": [], "nodes": [], "outputs": []})", "(top level): unknown key 'input'; known:");
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4], "init": {"uniform": 1}}], "nodes": [], "outputs": []})",
                   "inputs[0]: unknown key 'init'");
  const std::string nodes = "{" + kHead + R"("inputs": [{"name": "x", "shape": [4, 4]}], "nodes": [
      {"name": "a", "op": "relu", "inputs": ["x"]},
      {"name": "b", "op": "relu", "inputs": ["x"]},
      {"name": "c", "op": "matmul", "inputs": ["x", "x"], "attrs": {"tranz_b": true}}], "outputs": []})";
  CHECK_LOAD_ERROR(nodes, "nodes[2].attrs: unknown attribute 'tranz_b'; known: trans_a, trans_b, axis");
}

TEST_CASE("json: an attribute the op does not take is an error") {
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4, 4]}],
      "nodes": [{"name": "c", "op": "matmul", "inputs": ["x", "x"], "attrs": {"alpha": 2}}], "outputs": []})",
                   "nodes[0].attrs: matmul does not take attribute 'alpha'; matmul takes: trans_a, trans_b");
}

TEST_CASE("json: attribute values are type- and range-checked") {
  auto node = [](const std::string& op, const std::string& attrs) {
    return "{" + kHead + R"("inputs": [{"name": "x", "shape": [4, 4]}], "nodes": [{"name": "n", "op": ")" + op +
           R"(", "inputs": ["x"], "attrs": )" + attrs + "}], \"outputs\": []}";
  };
  CHECK_LOAD_ERROR(node("relu", R"({"in_place": 1})"), "nodes[0].attrs.in_place: must be true or false, got 1");
  CHECK_LOAD_ERROR(node("scale", R"({"alpha": 1e39})"), "nodes[0].attrs.alpha: 1e+39 does not fit in a 32-bit float");
  CHECK_LOAD_ERROR(node("transpose", R"({"perm": [1, 0, 2]})"), "nodes[0].attrs.perm: has 3 entries, but input 'x' [4,4] has rank 2");
  CHECK_LOAD_ERROR(node("transpose", R"({"perm": [0, 7]})"), "nodes[0].attrs.perm[1]: 7 is out of range");
  CHECK_LOAD_ERROR(node("transpose", R"({"perm": [0, 0]})"), "nodes[0]: transpose 'n': perm [0,0] is not a permutation");
  CHECK_LOAD_ERROR(node("reshape", R"({"shape": [3]})"), "element counts must match");
  CHECK_LOAD_ERROR(node("reduce_sum", R"({"axis": "last"})"), "nodes[0].attrs.axis: must be an integer, got a string");
  auto heads = [](const std::string& attrs) {
    return "{" + kHead + R"("inputs": [{"name": "x", "shape": [2, 3, 8]}], "nodes": [{"name": "n", "op": "matmul_heads", "inputs": ["x", "x"], "attrs": )" +
           attrs + "}], \"outputs\": []}";
  };
  CHECK_LOAD_ERROR(heads(R"({"heads": 2})"), "nodes[0].attrs.heads: must be an object like");
  CHECK_LOAD_ERROR(heads(R"({"heads": {"a": true}})"), "nodes[0].attrs.heads: has no count");
  CHECK_LOAD_ERROR(heads(R"({"heads": {"count": 2, "c": true}})"), "nodes[0].attrs.heads.c: is not a key of heads");
  CHECK_LOAD_ERROR(heads(R"({"heads": {"count": 0}})"), "nodes[0].attrs.heads.count:");
  CHECK_LOAD_ERROR(heads(R"({"heads": {"count": 3, "a": true, "b": true}, "trans_b": true})"),
                   "last dim is not a multiple of 3");
  CHECK(load_error(heads(R"({"heads": {"count": 2, "a": true, "b": true}, "trans_b": true})")) == "");
  auto pool = [](const std::string& attrs) {
    return "{" + kHead + R"("inputs": [{"name": "x", "shape": [1, 2, 5, 5]}], "nodes": [{"name": "p", "op": "max_pool2d", "inputs": ["x"], "attrs": )" +
           attrs + "}], \"outputs\": []}";
  };
  CHECK_LOAD_ERROR(pool(R"({"conv": [2, 2]})"), "nodes[0].attrs.conv: must be an object like");
  CHECK_LOAD_ERROR(pool(R"({"conv": {"kernel": [2]}})"), "nodes[0].attrs.conv.kernel: must be an array of 2 integers");
  CHECK_LOAD_ERROR(pool(R"({"conv": {"kernel": [2, 2], "stride": [0, 1]}})"), "nodes[0].attrs.conv.stride[0]:");
  CHECK_LOAD_ERROR(pool(R"({"conv": {"kernel": [2, 2], "pad": [1, 1, 1, 1]}})"), "nodes[0].attrs.conv.pad: is not a key of conv");
  CHECK_LOAD_ERROR(pool(R"({"conv": {"stride": [2, 2]}})"), "a pool needs its window");
  CHECK(load_error(pool(R"({"conv": {"kernel": [3, 3], "stride": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": true}})")) == "");
}

TEST_CASE("json: names, ops, arity and outputs") {
  const std::string x = "{" + kHead + R"("inputs": [{"name": "x", "shape": [4]}], )";
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "h", "op": "relu", "inputs": ["x"]}, {"name": "y", "op": "add", "inputs": ["h", "h9"]}], "outputs": []})",
                   "nodes[1].inputs[1]: unknown value 'h9'");
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "h", "op": "relux", "inputs": ["x"]}], "outputs": []})", "nodes[0].op: unknown op 'relux'; known ops: matmul");
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "x", "op": "relu", "inputs": ["x"]}], "outputs": []})",
                   "nodes[0].name: 'x' is already the name of inputs[0].name");
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "r", "op": "relu", "inputs": ["x", "x"]}], "outputs": []})",
                   "nodes[0].inputs: relu 'r' takes 1 input, got 2");
  CHECK_LOAD_ERROR(x + R"("nodes": [], "outputs": ["y"]})", "outputs[0]: unknown value 'y'");
  CHECK_LOAD_ERROR(x + R"("nodes": [], "outputs": ["x", "x"]})", "outputs[1]: 'x' is listed twice");
  CHECK_LOAD_ERROR(x + R"("outputs": []})", "(top level): missing key 'nodes'");
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "h", "op": "relu", "inputs": ["x"], "role": "input"}], "outputs": []})",
                   "nodes[0].role: 'input' is not a role of a computed value");
  CHECK_LOAD_ERROR(x + R"("nodes": [{"name": "h", "op": "relu", "inputs": ["x"], "shape": [5]}], "outputs": []})",
                   "nodes[0].shape: relu 'h' declares [5], but its inputs [4] give [4]");
}

TEST_CASE("json: a cycle in a file is reported with the node") {
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4]}], "nodes": [
      {"name": "a", "op": "add", "inputs": ["b", "x"]}, {"name": "b", "op": "relu", "inputs": ["a"]}], "outputs": ["b"]})",
                   "t.json: graph has a cycle through node 'a' (add): 'a' -> 'b' -> 'a'");
}

TEST_CASE("json: format and version are checked") {
  CHECK_LOAD_ERROR(R"({"format": "onnx", "version": 1, "nodes": [], "outputs": []})", "format: is 'onnx'");
  CHECK_LOAD_ERROR(R"({"format": "twograph-graph", "version": 2, "nodes": [], "outputs": []})", "version: is 2; this build reads version 1");
  CHECK_LOAD_ERROR("[1]", "(top level): must be a JSON object");
}

TEST_CASE("json: bf16 and f16 load and validate, and a node's dtype follows its inputs") {
  const Graph g = load_graph_json("{" + kHead + R"("inputs": [{"name": "x", "shape": [4], "dtype": "bf16"}, {"name": "y", "shape": [4], "dtype": "f16"}],
    "nodes": [{"name": "h", "op": "relu", "inputs": ["x"]}, {"name": "k", "op": "scale", "inputs": ["y"], "attrs": {"alpha": 2}, "dtype": "f16"}],
    "outputs": ["h", "k"]})", "t.json");
  CHECK(g.values[0].dtype == DType::BF16);
  CHECK(g.values[g.outputs[0]].dtype == DType::BF16);
  CHECK(g.values[g.outputs[1]].dtype == DType::F16);
  CHECK(validation_errors(g).empty());
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4], "dtype": "bf16"}],
    "nodes": [{"name": "h", "op": "relu", "inputs": ["x"], "dtype": "f32"}], "outputs": ["h"]})",
                   "relu 'h' declares f32, but its inputs give bf16; fix the dtype or remove it");
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4], "dtype": "bf16"}, {"name": "y", "shape": [4]}],
    "nodes": [{"name": "h", "op": "mul", "inputs": ["x", "y"]}], "outputs": ["h"]})",
                   "mul 'h': input 1 is f32 but input 0 is bf16; every input of mul has one dtype");
  CHECK_LOAD_ERROR("{" + kHead + R"("inputs": [{"name": "x", "shape": [4], "dtype": "f64"}], "nodes": [], "outputs": []})", "unknown dtype 'f64'");
}

TEST_CASE("json: round trip of recorded models is exact, ids included") {
  MlpConfig mc;
  mc.depth = 3;
  mc.in_place_relu = true;
  check_round_trip(build_inference_graph(tg::testing::mlp_model(mc)));
  check_round_trip(build_training_graph(tg::testing::mlp_model(mc)));
  mc.loss = MlpConfig::Loss::cross_entropy;
  TrainOptions plain;
  plain.use_momentum = false;
  check_round_trip(build_training_graph(tg::testing::mlp_model(mc), plain));
  check_round_trip(build_training_graph(tg::testing::transformer_model(tg::testing::transformer_config(2, 4, 16, 2))));
  ChainConfig cc;
  cc.n = 10;
  check_round_trip(build_training_graph(tg::testing::chain_model(cc)));
}

TEST_CASE("json: round trip keeps every attribute, dtype and init") {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {4, 6});
  Value w = b.parameter("w", {6, 6}, ParamInit{ParamInit::Kind::uniform, 0.123f});
  Value c = b.parameter("c", {6}, ParamInit{ParamInit::Kind::constant, -2.5f});
  Value h = matmul(b, x, w, false, true);
  h = scale(b, h, 0.1f);
  h = layernorm(b, h, c, c, 1e-3f);
  h = reshape(b, h, {-1, 2, 3});
  h = transpose(b, h, {{2, 0, 1, 3}});
  Value f = fill(b, {3, 4, 2}, 7.25f);
  h = add(b, h, f);
  h = broadcast(b, reduce_mean(b, h, 1), 0, 5);
  b.mark_output(h);
  // A bf16 chain: the builder gives each node its inputs' dtype.
  Value y = b.input("y", {4, 6});
  g.values[static_cast<size_t>(y.id)].dtype = DType::BF16;
  Value k = gelu(b, scale(b, y, 0.5f));
  b.mark_output(k);
  CHECK(g.values[static_cast<size_t>(k.id)].dtype == DType::BF16);
  check_round_trip(g);
}

TEST_CASE("json: round trip of rank-6 values and a rank-6 transpose, built and loaded") {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {2, 1, 3, 2, 2, 4});
  Value h = transpose(b, x, {{5, 3, 1, 0, 4, 2}});
  h = reshape(b, h, {4, 2, 1, 3, 2, -1});
  h = broadcast(b, reduce_sum(b, h, 2), -1, 3);
  b.mark_output(h);
  CHECK(g.values[static_cast<size_t>(h.id)].shape == Shape{4, 2, 3, 2, 2, 3});
  check_round_trip(g);
  // The example file's own round trip, and the entries past its perm's length.
  const Graph f = load_graph_file("tests/graphs/rank6.json");
  check_round_trip(f);
  for (const Node& n : f.nodes)
    if (n.op == OpKind::transpose) CHECK(n.attrs.perm == perm_of({2, 0, 3, 1, 4, 5}));
}

TEST_CASE("json: graphs the format cannot express are refused by save") {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {4});
  b.mark_output(relu(b, x));
  g.values[1].name = "renamed";
  CHECK_THROWS_WITH_AS(save_graph_json(g), doctest::Contains("names a node's output after the node"), GraphError);
  g.values[1].name = "n0";
  g.values[1].producer = -1;
  g.nodes.clear();
  CHECK_THROWS_WITH_AS(save_graph_json(g), doctest::Contains("has no producer and role output"), GraphError);
}

TEST_CASE("json: files: missing, directory, and a good one") {
  CHECK_THROWS_WITH_AS(load_graph_file("/nonexistent/g.json"), doctest::Contains("no such file"), GraphError);
  CHECK_THROWS_WITH_AS(load_graph_file("tests/graphs"), doctest::Contains("not a regular file"), GraphError);
  CHECK_THROWS_WITH_AS(load_graph_file("/dev/zero"), doctest::Contains("not a regular file"), GraphError);
  const Graph g = load_graph_file("tests/graphs/minimal.json");
  CHECK(g.values.size() == 3);
}
