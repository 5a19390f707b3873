// The graph passes on the CUDA backend (label gpu; skipped without a device). The rows,
// elementwise and optimizer passes are exact by construction (their kernels round each
// step as the ops they replace), so they must give the unfused graph's bits on the GPU
// too. The linear pass moves bias, activation and residual into cuBLASLt epilogues, whose
// GEMM algorithm and GELU are cuBLASLt's own: all passes together train within a
// tolerance of the unfused graph, stated below, not to its bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_backend.h"
#include "static/compiler.h"
#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#include "tests/static/passes_test_util.h"

namespace tg::testing {

namespace {

std::shared_ptr<Backend> gpu() { return std::shared_ptr<Backend>(make_cuda_backend(0, false)); }

CompileOptions on_gpu() {
  CompileOptions o;
  o.backend = gpu();
  o.poison_arena = true;
  return o;
}

const ModelFn& mlp() {
  static const ModelFn m = mlp_model(mlp_config(32, 64, 64, 4, 10));
  return m;
}
const ModelFn& transformer() {
  static const ModelFn m = transformer_model(transformer_config(2, 16, 32, 2));
  return m;
}

// Per step, |loss(all passes) - loss(none)| <= kAtol + kRtol * |loss(none)|: a few ulp of
// each GEMM's reordered sums and cuBLASLt's GELU, grown over the steps.
constexpr double kAtol = 1e-5, kRtol = 1e-3;

}  // namespace

TEST_CASE("passes on CUDA: rows, elementwise and optimizer give the unfused bits (mlp, transformer, chain)") {
  TG_REQUIRE_GPU();
  const PassSet exact = PassSet::only(PassId::rows).with(PassId::elementwise).with(PassId::optimizer);
  for (PassSet set : {exact, PassSet::only(PassId::elementwise), PassSet::only(PassId::optimizer)}) {
    CAPTURE(set.str());
    check_same_training(mlp(), set, 5, on_gpu());
    check_same_training(transformer(), set, 4, on_gpu());
  }
  // The chain of tg-launch: long fused chains, captured in a CUDA Graph and replayed.
  check_same_training(chain_model(chain_config(200, 4099)), PassSet::only(PassId::elementwise), 3, on_gpu());
  CompileOptions plain = on_gpu();
  plain.use_cuda_graph = false;
  check_same_training(transformer(), exact, 3, plain);
}

TEST_CASE("passes on CUDA: the lanes pass (a side stream) gives the serial bits, graph and plain launches") {
  TG_REQUIRE_GPU();
  const PassSet exact = PassSet::only(PassId::rows).with(PassId::elementwise).with(PassId::optimizer);
  // The small MLP runs on the small-GEMM kernel; the wider one on cuBLASLt, whose side-stream
  // GEMMs use the second half of the workspace.
  const ModelFn wide = mlp_model(mlp_config(256, 512, 512, 3, 10));
  for (PassSet set : {PassSet::only(PassId::lanes), exact.with(PassId::lanes)}) {
    CAPTURE(set.str());
    check_same_training(mlp(), set, 5, on_gpu());
    check_same_training(wide, set, 4, on_gpu());
    check_same_training(transformer(), set, 4, on_gpu());
    CompileOptions plain = on_gpu();
    plain.use_cuda_graph = false;
    check_same_training(mlp(), set, 3, plain);
  }
  // Early updates (TG_LANES_EARLY): 4 MiB weights, each update apart and moved up on the side
  // stream, on cuBLASLt GEMMs. The linear pass's epilogues round as cuBLASLt does, not as the
  // unfused graph: the reference is the same passes without early updates.
  {
    const bool was = lanes_early_updates();
    const ModelFn big = mlp_model(mlp_config(64, 1024, 1024, 4, 10));
    CompileOptions o = on_gpu();
    o.passes = exact.with(PassId::lanes).with(PassId::linear);
    set_lanes_early_updates(false);
    CompiledPlan serial = compile(big, o);
    set_lanes_early_updates(true);
    CompiledPlan early = compile(big, o);
    set_lanes_early_updates(was);
    CHECK(early.graph->nodes.size() > serial.graph->nodes.size());  // the large updates apart
    CHECK(check_plan(*early.graph, early.exec->order(), early.memory()) == "");
    check_same_steps(serial, early, 3);
  }
  // The marked nodes run on the side stream: the plan says so, and the kernels are the same.
  CompileOptions lanes = on_gpu();
  lanes.passes = PassSet::only(PassId::lanes);
  CompiledPlan a = compile(wide, on_gpu()), b = compile(wide, lanes);
  const auto& side = b.exec->plan().live_to_end;
  // The weight gradients, the bias gradients' column sums, the weight and bias updates.
  CHECK(std::count(side.begin(), side.end(), true) == 3 + 3 + 6);
  CHECK(a.exec->kernels_per_run() == b.exec->kernels_per_run());
  // The column sums use the backend's scratch: the side stream has its own, so a sum there
  // never shares it with a main-stream op that runs at the same time.
  const auto backend = std::static_pointer_cast<CudaBackend>(gpu());
  CHECK(backend->side_context().scratch != nullptr);
  CHECK(backend->side_context().scratch != backend->context().scratch);
  CHECK(backend->side_context().scratch_bytes == backend->context().scratch_bytes);
}

TEST_CASE("passes on CUDA: all passes train mlp and transformer within a tolerance of the unfused graph") {
  TG_REQUIRE_GPU();
  // The transformer once more with the heads pass alone (its pointer-array GEMMs).
  struct Run {
    const ModelFn* model;
    PassSet set;
  };
  for (const Run& r : {Run{&mlp(), PassSet::all()}, Run{&transformer(), PassSet::all()},
                       Run{&transformer(), PassSet::only(PassId::heads)}}) {
    const ModelFn* model = r.model;
    CAPTURE(r.set.str());
    CompileOptions fused = on_gpu();
    fused.passes = r.set;
    CompiledPlan a = compile(*model, on_gpu());
    CompiledPlan b = compile(*model, fused);
    CHECK(b.graph->nodes.size() < a.graph->nodes.size());
    const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 3));
    double worst = 0;
    for (int s = 0; s < 5; ++s) {
      const double la = a.step(feeds), lb = b.step(feeds);
      CHECK_MESSAGE(std::fabs(lb - la) <= kAtol + kRtol * std::fabs(la), "step ", s, ": loss ", lb, " with all passes, ",
                    la, " unfused");
      worst = std::max(worst, std::fabs(lb - la) / std::max(std::fabs(la), 1e-30));
    }
    const char* name = model == &mlp() ? "mlp" : "transformer";
    MESSAGE(name, ": ", a.graph->nodes.size(), " nodes unfused, ", b.graph->nodes.size(), " with passes ",
            r.set.str(), "; largest relative loss difference over 5 steps ", worst);
  }
}

TEST_CASE("passes on CUDA: GEMM updates (matmul_sgd_momentum) train like the separate GEMM and update") {
  TG_REQUIRE_GPU();
  // Layers 256 -> 256 -> 256 -> 10 at batch 64: the two 256 x 256 weights (4 tiles each) fuse
  // once the threshold allows it; the same passes without the fusion are the reference.
  const ModelFn model = mlp_model(mlp_config(64, 256, 256, 3, 10));
  CompileOptions fused = on_gpu();
  fused.passes = PassSet::all();
  auto compile_with = [&](int64_t min_tiles) {
    GemmUpdateTiles tiles(min_tiles);
    return compile(model, fused);
  };
  CompiledPlan b = compile_with(1);
  CompiledPlan a = compile_with(0);
  CHECK(count(*b.graph, OpKind::matmul_sgd_momentum) == 2);
  CHECK(count(*a.graph, OpKind::matmul_sgd_momentum) == 0);
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 3));
  for (int s = 0; s < 5; ++s) {
    const double la = a.step(feeds), lb = b.step(feeds);
    CHECK_MESSAGE(std::fabs(lb - la) <= kAtol + kRtol * std::fabs(la), "step ", s, ": loss ", lb,
                  " with GEMM updates, ", la, " without");
  }
  for (const char* w : {"mlp.l0.w", "mlp.l1.w"}) {
    const std::vector<float> pa = a.read(w), pb = b.read(w);
    double worst = 0;
    for (size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(pb[i]) - pa[i]));
    CHECK_MESSAGE(worst <= 1e-4, w, ": largest difference ", worst);
  }
}

}  // namespace tg::testing
