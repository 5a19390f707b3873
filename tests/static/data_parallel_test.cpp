// Data parallelism on the CPU backend (graph/data_parallel.h, kernels/thread_group.h): the
// buckets, the all_reduce nodes of the training graph, static == dynamic bitwise over 2 and 4
// thread ranks with the same bucketing, and agreement with one rank over the global batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "graph/validate.h"
#include "static/passes/pass.h"
#include "kernels/thread_group.h"
#include "tests/common/models.h"
#include "tests/static/data_parallel_util.h"

namespace tg {
namespace {

using testing::RankState;
using testing::RunConfig;

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

// The MLP at a batch of its own: the per-rank model and the one-rank model of the global batch.
ModelFn mlp_at(int64_t batch) { return testing::mlp_model(testing::mlp_config(batch, 24, 32, 3, 6)); }
ModelFn transformer_at(int64_t batch) { return testing::transformer_model(testing::transformer_config(batch, 4, 16, 2)); }

std::vector<Feeds> global_feeds(const ModelFn& global_model, int steps) {
  const Graph g = build_training_graph(global_model);
  std::vector<Feeds> feeds;
  for (int i = 0; i < steps; ++i) feeds.push_back(testing::random_feeds(testing::input_shapes_of(g), 300 + 31 * i));
  return feeds;
}

// `world` thread ranks, each training model_at(batch / world) on its shard, both executors.
std::vector<RankState> train_data_parallel(const std::function<ModelFn(int64_t)>& model_at, int64_t batch, int world,
                                           RunConfig cfg, const std::vector<Feeds>& feeds) {
  cfg.train.data_parallel.enabled = true;
  ThreadGroup for_static(world), for_dynamic(world);
  std::vector<RankState> ranks(static_cast<size_t>(world));
  run_thread_ranks(for_static, [&](int rank) {
    auto be_static = cpu(), be_dynamic = cpu();
    be_static->set_communicator(for_static.communicator(rank));
    be_dynamic->set_communicator(for_dynamic.communicator(rank));
    try {
      ranks[static_cast<size_t>(rank)] =
          testing::train_rank(model_at(batch / world), cfg, be_static, be_dynamic, feeds, rank, world);
    } catch (...) {
      for_dynamic.abort("a rank failed");  // run_thread_ranks aborts the static group only
      throw;
    }
  });
  return ranks;
}

// The largest |a - b| / (atol + rtol |b|) over every parameter (1 or less: within tolerance).
double worst_ratio(const std::map<std::string, std::vector<float>>& a, const std::map<std::string, std::vector<float>>& b,
                   double atol, double rtol) {
  double worst = 0.0;
  for (const auto& [name, values] : b) {
    const std::vector<float>& got = a.at(name);
    REQUIRE(got.size() == values.size());
    for (size_t i = 0; i < values.size(); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - values[i]) / (atol + rtol * std::fabs(values[i])));
  }
  return worst;
}

}  // namespace

TEST_CASE("data parallel: buckets hold the parameters in reverse order, closed at bucket_bytes") {
  const std::vector<Shape> shapes = {{4, 8}, {8}, {8, 8}, {8}, {8, 2}, {2}};  // 128, 32, 256, 32, 64, 8 bytes
  using B = std::vector<std::vector<int>>;
  CHECK(gradient_buckets(shapes, int64_t{25} << 20) == B{{5, 4, 3, 2, 1, 0}});
  CHECK(gradient_buckets(shapes, 1) == B{{5}, {4}, {3}, {2}, {1}, {0}});
  // A bucket closes once it holds at least the size, as DDP's do: 8 + 64 + 32 >= 100.
  CHECK(gradient_buckets(shapes, 100) == B{{5, 4, 3}, {2}, {1, 0}});
  CHECK_THROWS_WITH_AS(gradient_buckets(shapes, 0), doctest::Contains("bucket_bytes = 0"), std::invalid_argument);
}

TEST_CASE("data parallel: the training graph reduces every gradient once, bucket by bucket") {
  for (int64_t bucket_bytes : {int64_t{25} << 20, int64_t{1024}, int64_t{1}}) {
    CAPTURE(bucket_bytes);
    TrainOptions o;
    o.data_parallel.enabled = true;
    o.data_parallel.bucket_bytes = bucket_bytes;
    const Graph g = build_training_graph(mlp_at(8), o);
    CHECK(validation_errors(g).empty());
    std::vector<Shape> shapes;
    int updates = 0;
    for (const Node& n : g.nodes) updates += n.op == OpKind::sgd_momentum;
    for (int id : parameter_ids(g)) shapes.push_back(g.values[static_cast<size_t>(id)].shape);
    const size_t buckets = gradient_buckets(shapes, bucket_bytes).size();
    CHECK(testing::count_op(g, OpKind::all_reduce) == static_cast<int>(buckets));
    CHECK(updates == static_cast<int>(shapes.size()));
    // Every update reads a reduced gradient.
    for (const Node& n : g.nodes)
      if (n.op == OpKind::sgd_momentum) {
        const std::string& grad = g.values[static_cast<size_t>(n.inputs[1])].name;
        CHECK(grad.size() > 13);
        CHECK(grad.compare(grad.size() - 13, 13, ".grad.reduced") == 0);
      }
  }
  // Recorded among the backward nodes, as the gradients become final: the last layer's bucket
  // is reduced before backward reaches the first layer's weight gradient (the last matmul).
  TrainOptions o;
  o.data_parallel.enabled = true;
  o.data_parallel.bucket_bytes = 1;
  const Graph g = build_training_graph(mlp_at(8), o);
  size_t first_reduce = g.nodes.size(), last_matmul = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op == OpKind::all_reduce) first_reduce = std::min(first_reduce, n);
    if (g.nodes[n].op == OpKind::matmul) last_matmul = n;
  }
  CHECK(first_reduce < last_matmul);
  // Off: no all_reduce at all, the graph of a one-process run.
  CHECK(testing::count_op(build_training_graph(mlp_at(8)), OpKind::all_reduce) == 0);
}

TEST_CASE("data parallel: the lanes pass runs every bucket's all-reduce beside backward, unless clipping reads it") {
  TrainOptions o;
  o.data_parallel.enabled = true;
  o.data_parallel.bucket_bytes = 1;  // a bucket per parameter: several collectives
  const Graph g = build_training_graph(mlp_at(8), o);
  const std::vector<int> order = g.topo_order();
  const std::vector<bool> side = side_lane_nodes(g, order);
  int reduces = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op != OpKind::all_reduce) continue;
    ++reduces;
    CHECK(side[n]);
    // Its bucket's join and split go with it.
    const int producer = g.values[static_cast<size_t>(g.nodes[n].inputs[0])].producer;
    CHECK(side[static_cast<size_t>(producer)]);
  }
  CHECK(reduces > 1);
  // On the side stream the first bucket's collective is issued before the main stream's last
  // input gradient: it overlaps the rest of backward.
  const std::vector<int> issued = hoist_side_nodes(g, order, side);
  size_t first_reduce = issued.size(), last_main_matmul = 0;
  for (size_t i = 0; i < issued.size(); ++i) {
    const Node& node = g.nodes[static_cast<size_t>(issued[i])];
    if (node.op == OpKind::all_reduce) first_reduce = std::min(first_reduce, i);
    if (node.op == OpKind::matmul && !side[static_cast<size_t>(issued[i])]) last_main_matmul = i;
  }
  CHECK(first_reduce < last_main_matmul);
  // Clipping reads every reduced gradient for the global norm: the collectives stay on the main
  // stream (the hazard rule would otherwise have nothing to guard).
  o.clip_grad_norm = 1.0f;
  const Graph clipped = build_training_graph(mlp_at(8), o);
  const std::vector<bool> clipped_side = side_lane_nodes(clipped, clipped.topo_order());
  for (size_t n = 0; n < clipped.nodes.size(); ++n)
    if (clipped.nodes[n].op == OpKind::all_reduce) CHECK_FALSE(clipped_side[n]);
}

TEST_CASE("data parallel: static == dynamic bitwise over 2 and 4 thread ranks, every rank alike") {
  const int64_t batch = 8;
  const std::vector<Feeds> feeds = global_feeds(mlp_at(batch), 4);
  for (int world : {2, 4}) {
    for (int64_t bucket_bytes : {int64_t{25} << 20, int64_t{512}}) {
      CAPTURE(world);
      CAPTURE(bucket_bytes);
      RunConfig cfg;
      cfg.train.data_parallel.bucket_bytes = bucket_bytes;
      testing::check_ranks_agree(train_data_parallel(mlp_at, batch, world, cfg, feeds));
    }
  }
}

TEST_CASE("data parallel: static == dynamic bitwise under AdamW with clipping, bf16 autocast, and a transformer") {
  const int64_t batch = 4;
  {
    RunConfig cfg;
    cfg.train.adamw = true;
    cfg.train.clip_grad_norm = 0.5f;
    cfg.train.data_parallel.bucket_bytes = 256;
    testing::check_ranks_agree(train_data_parallel(mlp_at, batch, 2, cfg, global_feeds(mlp_at(batch), 3)));
  }
  {
    RunConfig cfg;
    cfg.precision = Precision::bf16;
    cfg.train.data_parallel.bucket_bytes = 1024;
    testing::check_ranks_agree(train_data_parallel(mlp_at, batch, 4, cfg, global_feeds(mlp_at(batch), 3)));
  }
  {
    RunConfig cfg;
    cfg.train.data_parallel.bucket_bytes = 2048;
    testing::check_ranks_agree(
        train_data_parallel(transformer_at, batch, 2, cfg, global_feeds(transformer_at(batch), 3)));
  }
  {
    // 16 parameters in one bucket: joined in a tree of concats (at most kMaxOpInputs inputs each).
    auto deep_at = [](int64_t b) { return testing::mlp_model(testing::mlp_config(b, 12, 16, 8, 4)); };
    const Graph g = build_training_graph(deep_at(batch), [] {
      TrainOptions o;
      o.data_parallel.enabled = true;
      return o;
    }());
    CHECK(testing::count_op(g, OpKind::all_reduce) == 1);
    CHECK(testing::count_op(g, OpKind::concat) == 4);  // of six, six and four gradients, then of those three
    testing::check_ranks_agree(train_data_parallel(deep_at, batch, 2, RunConfig{}, global_feeds(deep_at(batch), 3)));
  }
}

// The mean over ranks of the per-rank mean gradients is the global batch's mean gradient, up
// to rounding: the sums are grouped by rank first. The tolerance, atol 1e-6 + rtol 1e-5 on
// every parameter and velocity after 4 steps at lr 0.01, leaves room for that rounding (the
// test prints the worst ratio); a missing reduction is far past it (checked below).
TEST_CASE("data parallel: N ranks agree with one rank over the global batch within tolerance") {
  const int64_t batch = 8;
  const std::vector<Feeds> feeds = global_feeds(mlp_at(batch), 4);
  CompileOptions co;
  CompiledPlan one = compile(mlp_at(batch), co);
  for (const Feeds& f : feeds) one.step(f);
  const auto want = testing::state_of(one);
  for (int world : {2, 4}) {
    CAPTURE(world);
    RunConfig cfg;
    cfg.train.data_parallel.bucket_bytes = 512;
    const std::vector<RankState> ranks = train_data_parallel(mlp_at, batch, world, cfg, feeds);
    const double ratio = worst_ratio(ranks[0].static_state, want, 1e-6, 1e-5);
    MESSAGE("world ", world, ": worst |diff| / (1e-6 + 1e-5 |ref|) = ", ratio);
    CHECK(ratio <= 1.0);
    // Not the same as no reduction at all: each rank's own shard moves the weights elsewhere.
    CompiledPlan alone = compile(mlp_at(batch / world), co);
    for (const Feeds& f : feeds) alone.step(testing::shard_of(f, 0, world));
    CHECK(worst_ratio(testing::state_of(alone), want, 1e-6, 1e-5) > 10.0);
  }
}

}  // namespace tg
