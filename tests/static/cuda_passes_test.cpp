// The graph passes on the CUDA backend (label gpu; skipped without a device). The rows,
// elementwise and optimizer passes are exact by construction (their kernels round each
// step as the ops they replace), so they must give the unfused graph's bits on the GPU
// too. The linear pass moves bias, activation and residual into cuBLASLt epilogues, whose
// GEMM algorithm and GELU are cuBLASLt's own: all passes together train within a
// tolerance of the unfused graph, stated below, not to its bits. The attention pass through
// cuDNN: the statistic's bits always, the step's where cuDNN's output keeps attention's.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

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

// The tolerances come from what a step changes, so that they scale with it: over the steps,
// each parameter moves by its update (the reference's final values minus the initial ones)
// and the loss by its own change. A fused plan must stay within kUpdateShare of that
// movement, per parameter and per step's loss; before the first update the losses may
// differ by kForwardRtol, a few ulp of the GEMMs' reordered sums and cuBLASLt's GELU.
// "the tolerances catch an update 40% short" below proves that they are tight enough.
constexpr double kUpdateShare = 0.01, kForwardRtol = 2e-5;

struct Trained {
  std::vector<double> losses;                         // one a step
  std::map<std::string, std::vector<float>> initial;  // each parameter before the first step
  std::map<std::string, std::vector<float>> final;    // and after the last
};

Trained train(CompiledPlan& p, const Feeds& feeds, int steps) {
  Trained t;
  const std::vector<int> params = p.graph->values_with_role(Role::parameter);
  for (int v : params) t.initial[p.graph->values[static_cast<size_t>(v)].name] = p.read(v);
  for (int s = 0; s < steps; ++s) t.losses.push_back(p.step(feeds));
  for (int v : params) t.final[p.graph->values[static_cast<size_t>(v)].name] = p.read(v);
  return t;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

// Where `got` leaves the tolerance around `ref`: one line per loss or parameter outside
// it, empty when every one is inside. `worst` receives the largest share of the movement.
std::vector<std::string> outside_tolerance(const Trained& ref, const Trained& got, double* worst = nullptr) {
  std::vector<std::string> out;
  double largest = 0;
  REQUIRE(ref.losses.size() == got.losses.size());
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    const double moved = std::fabs(ref.losses[s] - ref.losses[0]);
    const double allowed = kForwardRtol * std::fabs(ref.losses[0]) + kUpdateShare * moved;
    const double diff = std::fabs(got.losses[s] - ref.losses[s]);
    if (s > 0) largest = std::max(largest, diff / moved);
    if (diff > allowed)
      out.push_back(fmt::format("step {}: loss {} against {}: difference {:.3g} over {:.3g} ({} x the loss's change {:.3g})",
                                s, got.losses[s], ref.losses[s], diff, allowed, kUpdateShare, moved));
  }
  // A parameter whose gradient is exactly zero stays in place in the reference (the key
  // bias of attention: softmax ignores what it adds to a row of scores). Its tolerance is
  // the smallest movement of any parameter that did move: the fused plan may leave the
  // same rounding noise in it, not an update.
  double smallest_move = 0;
  for (const auto& [name, end] : ref.final) {
    const double moved = max_abs_diff(end, ref.initial.at(name));
    if (moved > 0 && (smallest_move == 0 || moved < smallest_move)) smallest_move = moved;
  }
  if (smallest_move == 0) out.push_back("the reference moved no parameter, so no tolerance can be derived");
  for (const auto& [name, end] : ref.final) {
    const double moved = max_abs_diff(end, ref.initial.at(name));
    if (moved == 0) {
      const double diff = max_abs_diff(got.final.at(name), end);
      if (diff > kUpdateShare * smallest_move)
        out.push_back(fmt::format("{}: the reference left it in place, the plan moved it by {:.3g}, over {} x the "
                                  "smallest update of a parameter {:.3g}", name, diff, kUpdateShare, smallest_move));
      continue;
    }
    const double diff = max_abs_diff(got.final.at(name), end);
    largest = std::max(largest, diff / moved);
    if (diff > kUpdateShare * moved)
      out.push_back(fmt::format("{}: largest difference {:.3g} over {} x its largest update {:.3g}", name, diff,
                                kUpdateShare, moved));
  }
  if (worst) *worst = largest;
  return out;
}

void check_within_tolerance(const Trained& ref, const Trained& got, const std::string& what) {
  double worst = 0;
  for (const std::string& line : outside_tolerance(ref, got, &worst)) FAIL_CHECK(what, ": ", line);
  MESSAGE(what, ": largest difference ", worst, " of the movement (tolerance ", kUpdateShare, ")");
}

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
  // Early updates (PassOptions::lanes_early_updates): 4 MiB weights, each update apart and
  // moved up on the side stream, on cuBLASLt GEMMs. The linear pass's epilogues round as
  // cuBLASLt does, not as the unfused graph: the reference is the same passes without early
  // updates.
  {
    const ModelFn big = mlp_model(mlp_config(64, 1024, 1024, 4, 10));
    CompileOptions o = on_gpu();
    o.passes = exact.with(PassId::lanes).with(PassId::linear);
    o.pass_options.lanes_early_updates = false;
    CompiledPlan serial = compile(big, o);
    o.pass_options.lanes_early_updates = true;
    CompiledPlan early = compile(big, o);
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
    const Trained ref = train(a, feeds, 5), got = train(b, feeds, 5);
    const char* name = model == &mlp() ? "mlp" : "transformer";
    check_within_tolerance(ref, got, fmt::format("{}, {} nodes unfused, {} with passes {}", name, a.graph->nodes.size(),
                                                 b.graph->nodes.size(), r.set.str()));
  }
}

TEST_CASE("passes on CUDA: GEMM updates (matmul_sgd_momentum) train like the separate GEMM and update") {
  TG_REQUIRE_GPU();
  // Layers 256 -> 256 -> 256 -> 10 at batch 64: the two 256 x 256 weights (4 tiles each) fuse
  // once the threshold allows it; the same passes without the fusion are the reference.
  const ModelFn model = mlp_model(mlp_config(64, 256, 256, 3, 10));
  CompileOptions fused = on_gpu();
  fused.passes = PassSet::all();
  auto compile_with = [&](bool gemm_updates) {
    CompileOptions o = fused;
    o.pass_options = gemm_update_tiles(1);
    o.pass_options.gemm_updates = gemm_updates;
    return compile(model, o);
  };
  CompiledPlan b = compile_with(true);
  CompiledPlan a = compile_with(false);
  CHECK(count(*b.graph, OpKind::matmul_sgd_momentum) == 2);
  CHECK(count(*a.graph, OpKind::matmul_sgd_momentum) == 0);
  CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");
  const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 3));
  const Trained ref = train(a, feeds, 5), got = train(b, feeds, 5);
  check_within_tolerance(ref, got, "GEMM updates");
}

TEST_CASE("passes on CUDA: the tolerances catch an update 40% short") {
  TG_REQUIRE_GPU();
  // The unfused plan against itself with the learning rate at 0.6: every update 40% short,
  // as a wrong GEMM update or optimizer kernel would make it. Every parameter and every
  // loss after the first step must fall outside the tolerances above.
  for (const ModelFn* model : {&mlp(), &transformer()}) {
    CompileOptions shortened = on_gpu();
    shortened.train.lr *= 0.6f;
    CompiledPlan a = compile(*model, on_gpu());
    CompiledPlan b = compile(*model, shortened);
    const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 3));
    const Trained ref = train(a, feeds, 5), got = train(b, feeds, 5);
    const std::vector<std::string> outside = outside_tolerance(ref, got);
    size_t moved = 0;  // a parameter with a zero gradient (attention's key bias) stays put in both
    for (const auto& [name, end] : ref.final) moved += max_abs_diff(end, ref.initial.at(name)) > 0;
    const size_t expected = moved + ref.losses.size() - 1;
    CHECK_MESSAGE(outside.size() == expected, outside.size(), " of ", expected,
                  " losses and parameters outside the tolerance");
  }
}

// The attention pass through cuDNN (CudaBackendOptions::attention_cudnn, on by default in a
// build with the frontend): a causal transformer block with the fused attention (heads of 64
// dims, a sequence no multiple of cuDNN's tiles), bf16 and fp16. attention_fwd_lse runs the
// cuDNN graph attention_lse runs (a forward with statistics), so a probe of the block's
// attention geometry, its attention and attention_lse as graph outputs, must give the
// statistic's bits with the pass. Its output is that forward's, where attention runs cuDNN's
// inference forward, which cuDNN does not promise to match bit for bit: the probe says whether
// it did, and the training step is held to the unfused step's bits where it did, to the
// passes' tolerance where it did not. The message says which held.
TEST_CASE("passes on CUDA: the attention pass through cuDNN keeps the statistic's bits, the step's where the output's") {
  TG_REQUIRE_GPU();
  if (!kBuiltWithCudnnFrontend) {
    std::printf("TG_SKIP: this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)\n");
    return;
  }
  TransformerConfig c = transformer_config(2, 40, 128, 2);
  c.fused_attention = true;
  c.causal = true;
  const ModelFn model = transformer_model(c);
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    CAPTURE(precision_name(p));
    CompileOptions base = on_gpu();
    base.precision = p;
    CompileOptions fused = on_gpu();
    fused.precision = p;
    fused.passes = PassSet::only(PassId::attention);
    CompiledPlan a = compile(model, base), b = compile(model, fused);
    REQUIRE(count(*b.graph, OpKind::attention_fwd_lse) == 1);
    CHECK(count(*b.graph, OpKind::attention_lse) == 0);
    CHECK(check_plan(*b.graph, b.exec->order(), b.memory()) == "");

    const Node* att = nullptr;
    for (const Node& n : a.graph->nodes)
      if (n.op == OpKind::attention) att = &n;
    REQUIRE(att != nullptr);
    const ValueInfo& qv = a.graph->values[static_cast<size_t>(att->inputs[0])];
    const Graph probe = recorded([&](RecordingBuilder& rb) {
      const Value q = rb.input("q", qv.shape, qv.dtype), k = rb.input("k", qv.shape, qv.dtype),
                  v = rb.input("v", qv.shape, qv.dtype);
      rb.mark_output(rb.apply(OpKind::attention, {q, k, v}, att->attrs));
      rb.mark_output(rb.apply(OpKind::attention_lse, {q, k}, att->attrs));
    });
    const Feeds probe_feeds = feeds_from(probe, make_values(probe, 17));
    CompileOptions po = on_gpu();
    CompiledPlan pa = compile_graph(probe, -1, po);
    po = on_gpu();
    po.passes = PassSet::only(PassId::attention);
    CompiledPlan pb = compile_graph(probe, -1, po);
    REQUIRE(count(*pb.graph, OpKind::attention_fwd_lse) == 1);
    pa.run(probe_feeds);
    pb.run(probe_feeds);
    const std::string out = probe.values[static_cast<size_t>(probe.outputs[0])].name;
    const std::string lse = probe.values[static_cast<size_t>(probe.outputs[1])].name;
    CHECK(bitwise_diff(pb.read(lse), pa.read(lse)) == "");
    const bool out_bitwise = bitwise_diff(pb.read(out), pa.read(out)) == "";
    for (const auto& ch : std::static_pointer_cast<CudaBackend>(po.backend)->attention_choices()) {
      INFO(op_name(ch.key.op), " ", dtype_name(ch.key.dtype), ": engine ", ch.engine, "; why own: ", ch.why);
      CHECK(ch.cudnn);
    }

    const Feeds feeds = feeds_from(*a.graph, make_values(*a.graph, 3));
    const Trained ref = train(a, feeds, 5), got = train(b, feeds, 5);
    const std::string what = fmt::format("{} transformer, attention pass, cuDNN's output {}", precision_name(p),
                                         out_bitwise ? "bitwise attention's" : "not attention's bits");
    MESSAGE(what);
    std::printf("TG_NOTE: %s\n", what.c_str());
    if (out_bitwise) {
      CHECK(bitwise_diff(std::vector<float>(got.losses.begin(), got.losses.end()),
                         std::vector<float>(ref.losses.begin(), ref.losses.end())) == "");
      for (const auto& [name, end] : ref.final) {
        INFO(what, ": parameter ", name);
        CHECK(bitwise_diff(got.final.at(name), end) == "");
      }
    } else {
      check_within_tolerance(ref, got, what);
    }
  }
}

}  // namespace tg::testing
