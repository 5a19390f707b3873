// Every validation error, on graphs built in code (and broken on purpose).
#include <doctest/doctest.h>

#include <string>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/models.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "tests/common/models.h"

namespace {

using namespace tg;

// x[32,512] -> matmul w[512,256] -> relu -> outputs.
struct Mlp {
  Graph g;
  Value x, w, h, r;
  Mlp() {
    RecordingBuilder b(g);
    x = b.input("x", {32, 512});
    w = b.parameter("w0", {512, 256});
    h = b.apply(OpKind::matmul, {x, w}, {}, "n3");
    r = relu(b, h);
    b.mark_output(r);
  }
};

std::string all_errors(const Graph& g) {
  std::string s;
  for (const std::string& e : validation_errors(g)) s += e + "\n";
  return s;
}

#define CHECK_HAS(g, fragment)                                            \
  do {                                                                    \
    const std::string errs_ = all_errors(g);                              \
    CHECK_MESSAGE(errs_.find(fragment) != std::string::npos, errs_);      \
  } while (0)

}  // namespace

TEST_CASE("validate: recorded models are valid") {
  Mlp m;
  CHECK(validation_errors(m.g).empty());
  CHECK_NOTHROW(validate(m.g));
  MlpConfig mc;
  mc.depth = 3;
  CHECK(validation_errors(build_training_graph(tg::testing::mlp_model(mc))).empty());
  const TransformerConfig tc = tg::testing::transformer_config(2, 4, 16, 2);
  CHECK(validation_errors(build_training_graph(tg::testing::transformer_model(tc))).empty());
  CHECK(validation_errors(build_inference_graph(tg::testing::mlp_model(mc))).empty());
}

TEST_CASE("validate: a cycle names a node on it, not one downstream") {
  Mlp m;
  // relu(h) feeds back into the matmul: n3 -> relu -> n3.
  m.g.nodes[0].inputs[0] = m.r.id;
  const std::string errs = all_errors(m.g);
  CHECK_MESSAGE(errs.find("cycle through node") != std::string::npos, errs);
  CHECK_MESSAGE((errs.find("'n3' -> ") != std::string::npos), errs);
}

TEST_CASE("validate: a downstream node of a cycle is not blamed") {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {4});
  Value d = relu(b, x);  // n0: will read c, downstream of the cycle
  Value a = relu(b, x);  // n1
  Value c = relu(b, a);  // n2
  b.mark_output(d);
  g.nodes[0].inputs[0] = c.id;
  g.nodes[1].inputs[0] = c.id;  // n1 <-> n2
  const std::string errs = all_errors(g);
  CHECK_MESSAGE(errs.find("cycle through node 'n2' (relu): 'n2' -> 'n1' -> 'n2'") != std::string::npos, errs);
  CHECK(errs.find("through node 'n0'") == std::string::npos);
}

TEST_CASE("validate: dangling values") {
  Mlp m;
  m.g.nodes[0].inputs[1] = 99;
  CHECK_HAS(m.g, "matmul 'n3': input 1 refers to value id 99, but the graph has 4 values (a dangling reference)");
  Mlp m2;
  ValueInfo orphan;
  orphan.name = "orphan";
  orphan.shape = {4};
  m2.g.add_value(orphan);
  CHECK_HAS(m2.g, "value 'orphan' (temporary): has no producer");
}

TEST_CASE("validate: duplicate value and node names") {
  Mlp m;
  m.g.values[1].name = "x";
  CHECK_HAS(m.g, "value 'x' (#1): has the same name as value #0");
  Mlp m2;
  m2.g.nodes[1].name = "n3";
  m2.g.values[3].name = "n3b";
  CHECK_HAS(m2.g, "relu 'n3': node #1 has the same name as node #0");
}

TEST_CASE("validate: zero, negative and missing dims") {
  Mlp m;
  m.g.values[0].shape = {32, 0};
  CHECK_HAS(m.g, "value 'x': shape [32,0] has dim 1 = 0; every dim must be >= 1");
  m.g.values[0].shape = {-4, 512};
  CHECK_HAS(m.g, "dim 0 = -4");
  m.g.values[0].shape = Shape{};
  CHECK_HAS(m.g, "value 'x': rank 0 is not supported");
}

TEST_CASE("validate: element counts or bytes that overflow int64") {
  Mlp m;
  m.g.values[1].shape = {int64_t{1} << 40, int64_t{1} << 30};
  CHECK_HAS(m.g, "value 'w0': shape [1099511627776,1073741824] has an element count or byte size that overflows int64");
}

TEST_CASE("validate: wrong arity") {
  Mlp m;
  m.g.nodes[1].inputs.push_back(m.x.id);
  CHECK_HAS(m.g, "relu 'n1': takes 1 input, got 2");
  Mlp m2;
  m2.g.nodes[0].outputs.clear();
  CHECK_HAS(m2.g, "matmul 'n3': has 0 outputs, but the op produces 1");
}

TEST_CASE("validate: recorded shapes are re-inferred") {
  Mlp m;
  m.g.values[1].shape = {256, 10};  // w0 no longer fits x
  CHECK_HAS(m.g, "matmul 'n3': cannot multiply [32,512] by [256,10]: inner dims 512 != 256");
  Mlp m2;
  m2.g.values[2].shape = {32, 10};
  CHECK_HAS(m2.g, "matmul 'n3': output 'n3' is recorded as [32,10], but inputs [32,512], [512,256] with these attributes give [32,256]");
}

TEST_CASE("validate: bad attributes (transpose perm, reshape count)") {
  Graph g;
  RecordingBuilder b(g);
  Value x = b.input("x", {4, 8});
  Value t = transpose(b, x, {{1, 0, 2, 3}});
  Value r = reshape(b, x, {8, 4});
  b.mark_output(t);
  b.mark_output(r);
  CHECK(validation_errors(g).empty());
  g.nodes[0].attrs.perm = {{1, 1, 2, 3}};
  g.nodes[1].attrs.shape = {100};
  CHECK_HAS(g, "transpose 'n0': perm [1,1] is not a permutation of 0..1");
  CHECK_HAS(g, "reshape 'n1': cannot reshape [4,8] (32 elements) to [100] (100 elements)");
}

TEST_CASE("validate: dtypes follow the op table's dtype rule") {
  Mlp m;
  CHECK(validation_errors(m.g).empty());
  m.g.values[0].dtype = DType::BF16;
  CHECK_HAS(m.g, "matmul 'n3': input 1 is f32 but input 0 is bf16; every input of matmul has one dtype");
  Mlp all_bf16;
  for (ValueInfo& v : all_bf16.g.values) v.dtype = DType::BF16;
  CHECK(validation_errors(all_bf16.g).empty());
  all_bf16.g.values[all_bf16.h.id].dtype = DType::F16;
  CHECK_HAS(all_bf16.g, "output 'n3' is recorded as f16, but its inputs give bf16");
  Mlp corrupt;
  corrupt.g.values[1].dtype = static_cast<DType>(9);
  CHECK_HAS(corrupt.g, "value 'w0': dtype #9 is not a dtype; use f32, bf16, f16, i32 or i64");
}

TEST_CASE("validate: losses and updates run in f32 only") {
  Graph g;
  RecordingBuilder b(g);
  b.mark_output(mse_loss(b, b.input("p", {4}), b.input("t", {4})));
  for (ValueInfo& v : g.values) v.dtype = v.producer < 0 ? DType::BF16 : v.dtype;  // the builder would refuse them
  CHECK_HAS(g, "mse_loss 'n0': input 0 is bf16; mse_loss computes in f32 only");
}

TEST_CASE("validate: graph outputs must be values") {
  Mlp m;
  m.g.outputs.push_back(42);
  CHECK_HAS(m.g, "graph output 1: value id 42 is not a value");
}

TEST_CASE("validate: a value produced by two nodes") {
  Mlp m;
  m.g.nodes[1].outputs[0] = m.h.id;
  CHECK_HAS(m.g, "value 'n3': is produced by both node 'n3' and node 'n1'");
}

TEST_CASE("validate: update ops write parameters and optimizer state") {
  Graph g;
  RecordingBuilder b(g);
  Value w = b.parameter("w", {4});
  Value x = b.input("x", {4});
  Value grad = b.input("g", {4});
  Value v = b.optimizer_state(w, "w.velocity");
  b.apply(OpKind::sgd_momentum, {w, grad, v}, {}, "w.update");
  CHECK(validation_errors(g).empty());
  g.nodes[0].inputs[0] = x.id;
  g.nodes[0].inputs[2] = w.id;
  CHECK_HAS(g, "sgd_momentum 'w.update': updates 'x', which is input, not a parameter");
  CHECK_HAS(g, "sgd_momentum 'w.update': velocity 'w' is parameter, not optimizer_state");
  Graph g2;
  RecordingBuilder b2(g2);
  Value in = b2.input("in", {4});
  b2.apply(OpKind::sgd, {in, in}, {}, "bad.update");
  CHECK_HAS(g2, "sgd 'bad.update': updates 'in', which is input, not a parameter");
}

TEST_CASE("validate: leaves with producers and broken producer links") {
  Mlp m;
  m.g.values[2].role = Role::parameter;
  CHECK_HAS(m.g, "value 'n3' is parameter but node 'n3' produces it");
  Mlp m2;
  m2.g.values[3].producer = 17;
  CHECK_HAS(m2.g, "value 'n1': producer is node id 17, but the graph has 2 nodes");
}

TEST_CASE("validate: a corrupt op kind is reported, not read") {
  Mlp m;
  m.g.nodes[1].op = static_cast<OpKind>(200);
  CHECK_HAS(m.g, "op kind 200 is not an op");
}

TEST_CASE("validate: throws one GraphError listing every error") {
  Mlp m;
  m.g.values[0].dtype = DType::BF16;
  m.g.outputs.push_back(-1);
  try {
    validate(m.g);
    FAIL("validate did not throw");
  } catch (const GraphError& e) {
    const std::string s = e.what();
    CHECK(s.find("invalid graph (2 errors)") != std::string::npos);
    CHECK(s.find("bf16") != std::string::npos);
    CHECK(s.find("graph output 1") != std::string::npos);
  }
}
