// The backward() contract: what it issues, what it skips, what it refuses.
#include <doctest/doctest.h>

#include "graph/autodiff.h"
#include "graph/errors.h"

namespace tg {
namespace {

bool same_nodes(const Graph& a, const Graph& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (a.nodes[i].op != b.nodes[i].op || a.nodes[i].inputs != b.nodes[i].inputs ||
        a.nodes[i].outputs != b.nodes[i].outputs || !(a.nodes[i].attrs == b.nodes[i].attrs))
      return false;
  return true;
}

int count_op(const Graph& g, OpKind op, size_t from = 0) {
  int n = 0;
  for (size_t i = from; i < g.nodes.size(); ++i) n += g.nodes[i].op == op;
  return n;
}

TEST_CASE("backward seeds with fill(shape 1) = 1 and returns the seed for the loss itself") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{3});
  const Value loss = reduce_sum(b, x, 0);
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {loss, x});
  REQUIRE(grads[0].valid());
  const Node& seed = g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(grads[0].id)].producer)];
  CHECK(seed.op == OpKind::fill);
  CHECK(seed.attrs.value == 1.0f);
  CHECK(seed.attrs.shape == Shape{1});
  CHECK(grads[1].shape == Shape{3});
}

TEST_CASE("backward skips what no wrt value depends on and computes no unneeded input gradient") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{4});
  const Value z = b.input("z", Shape{4});
  const Value u = relu(b, gelu(b, z));  // independent of x
  const Value loss = reduce_sum(b, mul(b, x, u), 0);
  const size_t fwd = g.nodes.size();
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {x});
  CHECK(grads[0].valid());
  CHECK(count_op(g, OpKind::relu_grad, fwd) == 0);
  CHECK(count_op(g, OpKind::gelu_grad, fwd) == 0);
  CHECK(count_op(g, OpKind::mul, fwd) == 1);  // dx = dy * u only, no du
}

TEST_CASE("backward returns an invalid value for a wrt value the loss does not depend on") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{4});
  const Value y = b.input("y", Shape{4});
  const Value unused = scale(b, y, 2.0f);
  const Value loss = reduce_sum(b, x, 0);
  const size_t before = g.nodes.size();
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {y, unused});
  CHECK_FALSE(grads[0].valid());
  CHECK_FALSE(grads[1].valid());
  CHECK(g.nodes.size() == before);  // nothing depends on y on the way to the loss: nothing issued
}

TEST_CASE("backward accumulates with add in tape order when a value is used several times") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{4});
  const Value loss = reduce_sum(b, add(b, add(b, scale(b, x, 2.0f), scale(b, x, 3.0f)), x), 0);
  const size_t fwd = g.nodes.size();
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {x});
  CHECK(count_op(g, OpKind::add, fwd) == 2);  // three uses of x, two adds
  CHECK(g.nodes.back().op == OpKind::add);
  CHECK(g.nodes.back().outputs[0] == grads[0].id);
}

TEST_CASE("cross_entropy gives no gradient to its labels") {
  Graph g;
  RecordingBuilder b(g);
  const Value logits = b.input("logits", Shape{2, 3});
  const Value labels = b.input("labels", Shape{2});
  const Value loss = cross_entropy(b, logits, labels);
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {logits, labels});
  CHECK(grads[0].valid());
  CHECK_FALSE(grads[1].valid());
}

TEST_CASE("backward issues the same op sequence for the same tape") {
  auto record = [](Graph& g) {
    RecordingBuilder b(g);
    const Value x = b.input("x", Shape{2, 3, 4});
    const Value w = b.parameter("w", Shape{4, 4});
    const Value gamma = b.parameter("gamma", Shape{4});
    const Value beta = b.parameter("beta", Shape{4});
    const Value h = layernorm(b, relu(b, matmul(b, x, w)), gamma, beta);
    const Value loss = mse_loss(b, softmax(b, h), x);
    backward(b, tape_from_graph(g), loss, {w, gamma, beta, x});
  };
  Graph a, c;
  record(a);
  record(c);
  CHECK(a.nodes.size() > 10);
  CHECK(same_nodes(a, c));
}

TEST_CASE("backward refuses ops without a gradient rule, non-scalar losses and reused ids") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{4});
  const Value y = relu(b, x);
  const Value dx = b.apply(OpKind::relu_grad, {x, y});
  const Value loss = reduce_sum(b, dx, 0);
  CHECK_THROWS_WITH_AS(backward(b, tape_from_graph(g), loss, {x}), doctest::Contains("relu_grad has no gradient rule"),
                       GraphError);
  CHECK_THROWS_WITH_AS(backward(b, tape_from_graph(g), y, {x}), doctest::Contains("scalar loss"), GraphError);

  std::vector<TapeEntry> tape = tape_from_graph(g);
  tape[0].output.id = x.id;  // what an eager builder must not do for an in-place relu
  CHECK_THROWS_WITH_AS(backward(b, tape, loss, {x}), doctest::Contains("fresh value id"), GraphError);
  CHECK(op_is_differentiable(OpKind::matmul));
  for (OpKind op : {OpKind::fill, OpKind::sgd, OpKind::sgd_momentum, OpKind::softmax_grad,
                    OpKind::layernorm_grad_x, OpKind::mse_loss_grad, OpKind::cross_entropy_grad})
    CHECK_FALSE(op_is_differentiable(op));
}

TEST_CASE("tape_from_graph lists the nodes in topological order with graph ids") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{2, 2});
  const Value y = gelu(b, x);
  const Value z = transpose(b, y, {1, 0, 2, 3});
  const std::vector<TapeEntry> tape = tape_from_graph(g);
  REQUIRE(tape.size() == 2);
  CHECK(tape[0].op == OpKind::gelu);
  CHECK(tape[0].inputs[0].id == x.id);
  CHECK(tape[0].output.id == y.id);
  CHECK(tape[1].op == OpKind::transpose);
  CHECK(tape[1].output.id == z.id);
  CHECK(tape[1].output.shape == Shape{2, 2});
}

}  // namespace
}  // namespace tg
