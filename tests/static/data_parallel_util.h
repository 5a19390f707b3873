#pragma once
// Data parallelism's tests on any backend: one model trained by the static and the dynamic
// executor over the ranks of a group, each rank on its shard of every global batch.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/static/vs_dynamic_test.h"

namespace tg::testing {

// Rank `rank`'s rows of a global feed whose leading axis is the batch (every feed of the
// models here): the rank-th of `world` equal blocks.
inline Feeds shard_of(const Feeds& global, int rank, int world) {
  Feeds local;
  for (const auto& [name, data] : global) {
    REQUIRE(data.size() % static_cast<size_t>(world) == 0);
    const size_t n = data.size() / static_cast<size_t>(world);
    local[name].assign(data.begin() + static_cast<std::ptrdiff_t>(n * static_cast<size_t>(rank)),
                       data.begin() + static_cast<std::ptrdiff_t>(n * static_cast<size_t>(rank + 1)));
  }
  return local;
}

// What one rank ends with: every parameter and optimizer state by name, per executor.
struct RankState {
  std::map<std::string, std::vector<float>> static_state, dynamic_state;
  std::vector<float> static_losses, dynamic_losses;
};

// The trained state of a plan, by name.
inline std::map<std::string, std::vector<float>> state_of(const CompiledPlan& plan) {
  std::map<std::string, std::vector<float>> state;
  for (Role r : {Role::parameter, Role::optimizer_state})
    for (int id : plan.graph->values_with_role(r)) state[plan.graph->values[static_cast<size_t>(id)].name] = plan.read(id);
  return state;
}

// How a test configures both executors alike (optimizer, precision, clipping).
struct RunConfig {
  TrainOptions train;
  Precision precision = Precision::fp32;
  bool use_cuda_graph = false;
};

inline DynamicOptions dynamic_options(const RunConfig& c) {
  DynamicOptions d = dynamic_options_like(c.train);
  d.precision = c.precision;
  return d;
}

// Trains `local_model` (the model at the per-rank batch) for the given global feeds, rank
// `rank` of a run whose static backend joined one group and dynamic backend another.
inline RankState train_rank(const ModelFn& local_model, const RunConfig& cfg, std::shared_ptr<Backend> be_static,
                            std::shared_ptr<Backend> be_dynamic, const std::vector<Feeds>& global_feeds, int rank,
                            int world) {
  CompileOptions co;
  co.backend = be_static;
  co.train = cfg.train;
  co.precision = cfg.precision;
  co.use_cuda_graph = cfg.use_cuda_graph;
  CompiledPlan plan = compile(local_model, co);
  DynamicTrainer dyn(local_model, *be_dynamic, "caching", dynamic_options(cfg));
  RankState out;
  for (const Feeds& global : global_feeds) {
    const Feeds local = shard_of(global, rank, world);
    out.static_losses.push_back(plan.step(local));
    out.dynamic_losses.push_back(dyn.step(local));
  }
  out.static_state = state_of(plan);
  for (const std::string& name : dyn.parameter_names()) out.dynamic_state[name] = dyn.parameter(name);
  for (const std::string& name : dyn.state_names()) out.dynamic_state[name] = dyn.parameter(name);
  return out;
}

// Every rank's static state equal to its dynamic state and to rank 0's, bit for bit.
inline void check_ranks_agree(const std::vector<RankState>& ranks) {
  REQUIRE(!ranks.empty());
  for (size_t r = 0; r < ranks.size(); ++r) {
    CAPTURE(r);
    CHECK(bitwise_diff(ranks[r].static_losses, ranks[r].dynamic_losses) == "");
    REQUIRE(ranks[r].static_state.size() == ranks[r].dynamic_state.size());
    for (const auto& [name, values] : ranks[r].static_state) {
      INFO("state ", name);
      REQUIRE(ranks[r].dynamic_state.count(name) == 1);
      CHECK(bitwise_diff(values, ranks[r].dynamic_state.at(name)) == "");
      CHECK(bitwise_diff(values, ranks[0].static_state.at(name)) == "");
    }
  }
}

}  // namespace tg::testing
