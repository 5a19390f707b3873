// matmul's gradient rule: every transpose combination of the three forms
// (rank 2, rank 3 batched, batched A times a shared rank-2 B).
#include <doctest/doctest.h>

#include "graph/autodiff.h"
#include "tests/autodiff/gradcheck.h"

namespace tg::testing {
namespace {

// A is [lead.., m, k] (or [lead.., k, m] with trans_a), B is [k, n] or [batch, k, n].
void check_matmul(std::vector<int64_t> lead, bool batched_b, bool ta, bool tb) {
  const int64_t m = 3, k = 4, n = 2;
  Shape sa, sb;
  for (int64_t d : lead) sa[sa.rank++] = d;
  sa[sa.rank++] = ta ? k : m;
  sa[sa.rank++] = ta ? m : k;
  if (batched_b) sb[sb.rank++] = lead.at(0);
  sb[sb.rank++] = tb ? n : k;
  sb[sb.rank++] = tb ? k : n;
  CAPTURE(sa.str());
  CAPTURE(sb.str());
  CAPTURE(ta);
  CAPTURE(tb);
  check_op_gradients([&](Builder& b, std::vector<Value>& wrt) {
    wrt.push_back(b.input("a", sa));
    wrt.push_back(b.input("b", sb));
    return matmul(b, wrt[0], wrt[1], ta, tb);
  });
}

TEST_CASE("grad matmul") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    check_matmul({}, false, ta, tb);      // rank 2
    check_matmul({2}, true, ta, tb);      // rank 3 batched
    check_matmul({2}, false, ta, tb);     // rank 3 A, shared rank-2 B
    check_matmul({2, 2}, false, ta, tb);  // rank 4 A, shared rank-2 B
  }
}

TEST_CASE("matmul with a shared B sums dB over the batch in one 2-D matmul") {
  Graph g;
  RecordingBuilder b(g);
  const Value a = b.input("a", Shape{2, 3, 4});
  const Value w = b.parameter("w", Shape{4, 5});
  const Value loss = reduce_sum(b, reshape(b, matmul(b, a, w), Shape{30}), 0);
  const size_t fwd = g.nodes.size();
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {w});
  REQUIRE(grads[0].valid());
  CHECK(grads[0].shape == Shape{4, 5});
  int matmuls = 0;
  for (size_t i = fwd; i < g.nodes.size(); ++i) matmuls += g.nodes[i].op == OpKind::matmul;
  CHECK(matmuls == 1);  // only dB: dA is not asked for
  const Node& mm = g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(grads[0].id)].producer)];
  CHECK(mm.op == OpKind::matmul);
  CHECK(g.values[static_cast<size_t>(mm.inputs[0])].shape == Shape{6, 4});
}

}  // namespace
}  // namespace tg::testing
