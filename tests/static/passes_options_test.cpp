// The passes' options (PassOptions, static/passes/pass.h): their text form, and that what
// CompileOptions::pass_options says reaches the passes and the scheduling after them, and
// comes back in the compiled plan. On the CPU backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/training.h"
#include "tests/common/models.h"
#include "tests/common/option_refusals.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {

TEST_CASE("pass options: the defaults are the measured choices, and str() reads back") {
  const PassOptions d;
  CHECK(d.gemm_updates);
  CHECK(d.gemm_update_min_tiles == kGemmUpdateMinTiles);
  CHECK(d.lanes_early_updates);
  CHECK_FALSE(d.lanes_side_gemm_updates);
  CHECK(d.elementwise_casts);
  CHECK(d.str() ==
        "gemm_updates=1,gemm_update_min_tiles=512,lanes_early_updates=1,lanes_side_gemm_updates=0,elementwise_casts=1");
  CHECK(PassOptions::from_string(d.str()) == d);
  CHECK(PassOptions::from_string("") == d);
  const PassOptions o = PassOptions::from_string("gemm_update_min_tiles=4,lanes_early_updates=0");
  CHECK(o.gemm_update_min_tiles == 4);
  CHECK_FALSE(o.lanes_early_updates);
  CHECK(o.gemm_updates);
  CHECK(PassOptions::from_string(o.str()) == o);
  CHECK(o.gemm_update_threshold() == 4);
  CHECK(PassOptions::from_string("gemm_updates=0", o).gemm_update_threshold() == 0);
  const auto v = o.values();
  REQUIRE(v.size() == 5);
  CHECK(v[1].key == "gemm_update_min_tiles");
  CHECK(v[1].value == 4);
  CHECK_FALSE(v[1].is_switch);
  CHECK(v[2].is_switch);
  CHECK(PassOptions::help().find("gemm_update_min_tiles=512") != std::string::npos);
}

TEST_CASE("pass options: a bad item is refused with the item named") {
  testing::check_option_refusals<PassOptions>({
      {"gemm_updates=2", "gemm_updates='2': expected 1 (on) or 0 (off)"},
      {"gemm_update_min_tiles=0", "gemm_update_min_tiles='0': expected an integer in [1, 1073741824]"},
      {"gemm_update_min_tiles=-1", "expected an integer in [1, "},
      {"gemm_update_min_tiles=12x", "expected an integer in [1, "},
      {"gemm_update_min_tiles=99999999999999999999999", "expected an integer in [1, "},
      {"gemm_update=0", "'gemm_update' is not a pass option; the keys are gemm_updates, gemm_update_min_tiles, "
                        "lanes_early_updates, lanes_side_gemm_updates, elementwise_casts"},
      {"small_gemm=0", "is not a pass option"},  // a CUDA backend option, not this struct's
      {"lanes_early_updates=1,lanes_early_updates=0", "'lanes_early_updates' is given twice"},
  });
}

TEST_CASE("pass options: gemm_updates and its threshold reach the optimizer pass through compile") {
  // Layers 128 -> 128 -> 128 -> 10: the two 128 x 128 weights fuse once one tile is enough.
  const ModelFn model = mlp_model(mlp_config(16, 128, 128, 3, 10));
  CompileOptions o;
  o.passes = PassSet::all();
  o.pass_options = gemm_update_tiles(1);
  const CompiledPlan fused = compile(model, o);
  CHECK(count(*fused.graph, OpKind::matmul_sgd_momentum) == 2);
  CHECK(fused.pass_options == o.pass_options);
  o.pass_options.gemm_updates = false;
  const CompiledPlan off = compile(model, o);
  CHECK(count(*off.graph, OpKind::matmul_sgd_momentum) == 0);
  CHECK_FALSE(off.pass_options.gemm_updates);
  // The default threshold leaves these small weights alone.
  o.pass_options = PassOptions{};
  CHECK(count(*compile(model, o).graph, OpKind::matmul_sgd_momentum) == 0);
  // run_passes takes the same options.
  const Graph step = build_training_graph(model);
  CHECK(count(run_passes(step, PassSet::only(PassId::optimizer), gemm_update_tiles(1)), OpKind::matmul_sgd_momentum) == 2);
  CHECK(count(run_passes(step, PassSet::only(PassId::optimizer)), OpKind::matmul_sgd_momentum) == 0);
}

TEST_CASE("pass options: under tf32 the passes get no GEMM updates, and the plan says so") {
  // The fused update computes its gradient GEMM in f32 on the CUDA cores; TF32's tensor
  // cores compute the separate gradient GEMM faster.
  const ModelFn model = mlp_model(mlp_config(16, 128, 128, 3, 10));
  CompileOptions o;
  o.passes = PassSet::all();
  o.pass_options = gemm_update_tiles(1);
  o.precision = Precision::tf32;
  const CompiledPlan tf32 = compile(model, o);
  CHECK(count(*tf32.graph, OpKind::matmul_sgd_momentum) == 0);
  CHECK_FALSE(tf32.pass_options.gemm_updates);
  CHECK(tf32.pass_options.gemm_update_min_tiles == 1);
  CHECK(effective_pass_options(o) == tf32.pass_options);
  o.precision = Precision::fp32;
  CHECK(count(*compile(model, o).graph, OpKind::matmul_sgd_momentum) == 2);
  CHECK(effective_pass_options(o) == o.pass_options);
}

TEST_CASE("pass options: lanes_side_gemm_updates reaches the lanes marking through compile") {
  const ModelFn model = mlp_model(mlp_config(16, 128, 128, 3, 10));
  CompileOptions o;
  o.passes = PassSet::all();
  o.pass_options = gemm_update_tiles(1);
  for (bool beside : {false, true}) {
    CAPTURE(beside);
    o.pass_options.lanes_side_gemm_updates = beside;
    const CompiledPlan p = compile(model, o);
    const std::vector<bool>& side = p.exec->plan().live_to_end;
    REQUIRE(side.size() == p.graph->nodes.size());
    int updates = 0;
    for (size_t n = 0; n < p.graph->nodes.size(); ++n)
      if (p.graph->nodes[n].op == OpKind::matmul_sgd_momentum) {
        ++updates;
        CHECK(side[n] == beside);
      }
    CHECK(updates == 2);
  }
}

TEST_CASE("pass options: lanes_early_updates keeps the large updates apart, or not") {
  // Four layers of 1024 x 1024 (4 MiB each, kEarlyUpdateBytes) but the last [1024, 10].
  const Graph step = build_training_graph(mlp_model(mlp_config(8, 1024, 1024, 4, 10)));
  const PassSet set = PassSet::only(PassId::linear).with(PassId::optimizer).with(PassId::lanes);
  PassOptions early;
  early.gemm_updates = false;  // the large updates as sgd_momentum, the case early updates are for
  PassOptions late = early;
  late.lanes_early_updates = false;
  CHECK(count(run_passes(step, set, early), OpKind::sgd_momentum) == 3);
  CHECK(count(run_passes(step, set, late), OpKind::sgd_momentum) == 0);
  CHECK(count(run_passes(step, set, late), OpKind::sgd_momentum_multi) == 1);
  // Without the lanes pass there is nothing to run early: one multi update either way.
  CHECK(count(run_passes(step, PassSet::only(PassId::optimizer), early), OpKind::sgd_momentum) == 0);
}

}  // namespace tg::testing
