#pragma once
// Random DAGs of elementwise / matmul / view / slice ops with random sizes, for the
// planner's property tests and the poisoning runs. Deterministic per seed.
#include <cstdint>
#include <vector>

#include "graph/builder.h"
#include "graph/graph.h"
#include "graph/init.h"

namespace tg::testing {

inline Graph random_graph(uint64_t seed, int num_nodes) {
  Graph g;
  RecordingBuilder b(g);
  uint64_t st = seed * 7919 + 1;
  auto rnd = [&](int64_t n) { return static_cast<int64_t>(splitmix64(st) % static_cast<uint64_t>(n)); };
  std::vector<Value> pool;
  int params = 0, inputs = 0;
  auto new_input = [&](Shape s) {
    Value v = b.input("x" + std::to_string(inputs++), s);
    pool.push_back(v);
    return v;
  };
  auto new_param = [&](Shape s) { return b.parameter("w" + std::to_string(params++), s); };
  new_input({1 + rnd(24), 1 + rnd(40)});
  // Pick mostly recent values so that chains form, sometimes old ones so that
  // lifetimes cross.
  auto pick = [&]() -> Value {
    const int64_t n = static_cast<int64_t>(pool.size());
    return rnd(3) == 0 ? pool[static_cast<size_t>(rnd(n))] : pool[static_cast<size_t>(n - 1 - rnd(std::min<int64_t>(n, 3)))];
  };
  auto same_shape = [&](const Value& a) -> Value {
    for (size_t i = pool.size(); i-- > 0;)
      if (pool[i].shape == a.shape && pool[i].id != a.id && rnd(2) == 0) return pool[i];
    return rnd(4) == 0 ? a : new_input(a.shape);
  };
  while (static_cast<int>(g.nodes.size()) < num_nodes) {
    Value a = pick();
    Value out;
    switch (rnd(12)) {
      case 0: out = add(b, a, same_shape(a)); break;
      case 1: out = sub(b, a, same_shape(a)); break;
      case 2: out = mul(b, a, same_shape(a)); break;
      case 3: out = scale(b, a, 0.5f); break;
      case 4: out = relu(b, a, rnd(2) == 0); break;
      case 5: out = gelu(b, a); break;
      case 6: out = copy(b, a); break;
      case 7: out = bias_add(b, a, new_param({a.shape.last()})); break;
      case 8: {
        if (a.shape.rank != 2) continue;
        out = matmul(b, a, new_param({a.shape[1], 1 + rnd(40)}));
        break;
      }
      case 9: {
        if (a.shape.rank == 2) out = reshape(b, a, {a.shape[1], a.shape[0]});
        else out = reshape(b, a, {1, a.shape.numel()});
        break;
      }
      case 10: {  // rows: a block of a (a view where the planner can make it one)
        if (a.shape.rank != 2) continue;
        const int64_t start = rnd(a.shape[0]);
        out = slice(b, a, 0, start, 1 + rnd(a.shape[0] - start));
        break;
      }
      default: {
        if (a.shape.rank != 2 || a.shape[0] == 1) continue;
        out = reduce_sum(b, a, 0);
        Value r = reshape(b, out, {1, out.shape.numel()});
        pool.push_back(out);
        out = r;
        break;
      }
    }
    pool.push_back(out);
    if (rnd(8) == 0) b.mark_output(out);
  }
  b.mark_output(pool.back());
  return g;
}

}  // namespace tg::testing
