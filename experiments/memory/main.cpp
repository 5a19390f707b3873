// tg-memory: where does memory go in training vs inference? Every role's bytes
// are predicted by a closed formula (formulas.cpp) and measured three ways:
// the static planner's bytes per role, the dynamic allocator's peak, and (GPU)
// the cudaMemGetInfo delta of compiling a plan.
#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynamic/trainer.h"
#include "experiments/harness/harness.h"
#include "experiments/launch/exec_common.h"
#include "experiments/memory/formulas.h"
#include "graph/training.h"
#include "static/compiler.h"
#include "static/planner.h"

namespace th = tg::harness;
using namespace tg;
using namespace tg::memory;

namespace {

struct Case {
  std::string model;  // "mlp" or "transformer"
  int64_t batch = 0;
  ModelFn fn;
  Predicted train_mom, train_sgd, infer;
};

Case mlp_case(const MlpConfig& c) {
  Case k;
  k.model = "mlp";
  k.batch = c.batch;
  k.fn = [c](Builder& b) { return mlp(b, c); };
  k.train_mom = predict_mlp(c, true, true);
  k.train_sgd = predict_mlp(c, true, false);
  k.infer = predict_mlp(c, false, false);
  return k;
}
Case transformer_case(const TransformerConfig& c) {
  Case k;
  k.model = "transformer";
  k.batch = c.batch;
  k.fn = [c](Builder& b) { return transformer_block(b, c); };
  k.train_mom = predict_transformer(c, true, true);
  k.train_sgd = predict_transformer(c, true, false);
  k.infer = predict_transformer(c, false, false);
  return k;
}

std::vector<int> node_order(const Graph& g) {
  std::vector<int> s(g.nodes.size());
  std::iota(s.begin(), s.end(), 0);  // nodes are appended in a valid order
  return s;
}

MemoryPlan plan(const Graph& g, PlanMode mode, InPlacePolicy ip = InPlacePolicy::elementwise) {
  PlanOptions o;
  o.mode = mode;
  o.in_place = ip;
  return plan_memory(g, node_order(g), o);
}

// The planner's Role -> the report's role. Outputs (prediction, loss) are workspace.
RoleBytes measured_roles(const MemoryPlan& p) {
  RoleBytes r{};
  auto at = [&](MemRole m) -> int64_t& { return r[static_cast<size_t>(m)]; };
  at(MemRole::parameters) = p.role(Role::parameter);
  at(MemRole::gradients) = p.role(Role::gradient);
  at(MemRole::momentum) = p.role(Role::optimizer_state);
  at(MemRole::activations) = p.role(Role::activation);
  at(MemRole::workspace) = p.role(Role::temporary) + p.role(Role::output);
  at(MemRole::inputs) = p.role(Role::input);
  return r;
}

// --explain: every value that owns storage, so a formula can be checked line by line.
void explain(const Graph& g, const MemoryPlan& p, const std::string& what) {
  fmt::print("-- {}: {} values, {}\n", what, g.values.size(), p.summary());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& vi = g.values[v];
    const bool root = p.storage[v] == static_cast<int>(v) && p.placement[v] != Placement::unused;
    fmt::print("  {:4} {:<11} {:>10} B {:<5} {}\n", v, role_name(vi.role), vi.bytes(), root ? "own" : "-", vi.name);
  }
}

struct Agreement {
  double worst = 0;  // largest |measured/predicted - 1| over all roles
  std::string where;
};

// Per role: predicted and planner (naive plan: one buffer per value, so a role's
// bytes are the plain sum of its values), and their ratio.
void compare_roles(th::Experiment& e, const Case& k, const std::string& mode, const Graph& g, const Predicted& pred,
                   Agreement& agree, bool explain_values) {
  const MemoryPlan naive = plan(g, PlanMode::naive);
  if (explain_values) explain(g, naive, k.model + " " + mode);
  const RoleBytes meas = measured_roles(naive);
  const std::string label = fmt::format("{} b{} {}", k.model, k.batch, mode);
  for (int i = 0; i < kNumMemRoles; ++i) {
    const auto r = static_cast<MemRole>(i);
    const int64_t pb = pred.bytes[static_cast<size_t>(i)], mb = meas[static_cast<size_t>(i)];
    if (pb == 0 && mb == 0) continue;
    const th::Params base{{"model", k.model}, {"batch", k.batch}, {"mode", mode}, {"role", mem_role_name(r)}};
    auto p1 = base, p2 = base;
    p1.emplace("source", "predicted");
    p1.emplace("config", label + " predicted");
    p2.emplace("source", "planner");
    p2.emplace("config", label + " planner");
    e.report().add_value("role_bytes", p1, static_cast<double>(pb), "B");
    auto& m = e.report().add_value("role_bytes", p2, static_cast<double>(mb), "B");
    const double ratio = pb > 0 ? static_cast<double>(mb) / static_cast<double>(pb) : INFINITY;
    m.extra["measured/predicted"] = ratio;
    if (std::fabs(ratio - 1) > agree.worst) {
      agree.worst = std::fabs(ratio - 1);
      agree.where = fmt::format("{} {}: predicted {} B, planner {} B", label, mem_role_name(r), pb, mb);
    }
  }
}

void arenas(th::Experiment& e, const Case& k, const std::string& mode, const Graph& g) {
  for (PlanMode pm : {PlanMode::naive, PlanMode::planned}) {
    const MemoryPlan p = plan(g, pm);
    const th::Params base{{"model", k.model}, {"batch", k.batch}, {"mode", mode}, {"plan", plan_mode_name(pm)}};
    auto& m = e.report().add_value("arena_bytes", base, static_cast<double>(p.arena_bytes), "B");
    m.extra["lower_bound_B"] = static_cast<double>(p.lower_bound);
    m.extra["external_B"] = static_cast<double>(p.external_bytes);
    if (pm == PlanMode::planned)
      e.report().add_value("arena_lower_bound", {{"model", k.model}, {"batch", k.batch}, {"mode", mode}},
                           static_cast<double>(p.lower_bound), "B");
  }
}

// Dynamic executor: allocator stats after `steps` iterations.
AllocatorStats dynamic_run(const Case& k, Backend& be, const std::string& alloc, DynamicOptions o, int steps) {
  DynamicTrainer t(k.fn, be, alloc, o);
  const Feeds f = bench::model_feeds(k.fn, 17, 10);
  for (int i = 0; i < steps; ++i) {
    if (o.inference) t.run_inference(f);
    else t.step(f);
    // The first iteration keeps every tensor (it learns the free plan): measure the
    // peak of the later, steady-state iterations.
    if (i == 0 && steps > 1) {
      be.synchronize();
      t.allocator().reset_peak();
    }
  }
  be.synchronize();
  return t.allocator_stats();
}

void add_stats(th::Experiment& e, th::Params p, const AllocatorStats& s) {
  auto& m = e.report().add_value("allocator_peak", p, static_cast<double>(s.peak), "B");
  m.extra["raw_allocs"] = static_cast<double>(s.raw_allocs);
  m.extra["allocs"] = static_cast<double>(s.allocs);
  e.report().add_value("allocator_peak_reserved", p, static_cast<double>(s.peak_reserved), "B");
}

void dynamic_part(th::Experiment& e, const Case& k, Backend& be, Agreement& agree) {
  const int steps = 3;  // the first learns the free plan; the later ones use it
  std::vector<std::string> allocs{"raw", "caching"};
  if (be.kind() == DeviceKind::cuda) allocs.push_back("pool");
  for (const auto& a : allocs)
    add_stats(e, {{"model", k.model}, {"batch", k.batch}, {"mode", "train_momentum"}, {"allocator", a}},
              dynamic_run(k, be, a, DynamicOptions{}, steps));
  // Nothing freed early: every tensor of the iteration is live at its end, so the
  // peak is the closed-form sum of every role.
  DynamicOptions keep;
  keep.free_early = false;
  const AllocatorStats s = dynamic_run(k, be, "caching", keep, 1);
  const int64_t pred = k.train_mom.total();
  auto& m = e.report().add_value("dynamic_peak_keep_all",
                                 {{"model", k.model}, {"batch", k.batch}, {"mode", "train_momentum"}},
                                 static_cast<double>(s.peak), "B");
  m.extra["predicted_B"] = static_cast<double>(pred);
  m.extra["measured/predicted"] = static_cast<double>(s.peak) / static_cast<double>(pred);
  const double err = std::fabs(static_cast<double>(s.peak) / static_cast<double>(pred) - 1);
  if (err > agree.worst) {
    agree.worst = err;
    agree.where = fmt::format("{} b{} dynamic peak (free_early off): predicted {} B, measured {} B", k.model, k.batch,
                              pred, s.peak);
  }
  DynamicOptions inf;
  inf.inference = true;
  add_stats(e, {{"model", k.model}, {"batch", k.batch}, {"mode", "inference"}, {"allocator", "caching"}},
            dynamic_run(k, be, "caching", inf, steps));
}

// GPU only: what compiling a naive training plan takes from cudaMemGetInfo's free
// memory, against the formula total (every role; naive = nothing shared).
void meminfo_part(th::Experiment& e, const Case& k, const std::shared_ptr<Backend>& be) {
  size_t free0 = 0, free1 = 0, total = 0;
  be->synchronize();
  device_memory_info(*be, free0, total);
  CompileOptions co;
  co.backend = be;
  co.plan.mode = PlanMode::naive;
  CompiledPlan p = compile(k.fn, co);
  p.step(bench::model_feeds(k.fn, 17, 10));
  be->synchronize();
  device_memory_info(*be, free1, total);
  const double delta = static_cast<double>(free0) - static_cast<double>(free1);
  auto& m = e.report().add_value("meminfo_delta", {{"model", k.model}, {"batch", k.batch}, {"plan", "naive"}}, delta,
                                 "B");
  m.extra["predicted_B"] = static_cast<double>(k.train_mom.total());
  m.extra["measured/predicted"] = delta / static_cast<double>(k.train_mom.total());
}

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-memory", "Where does memory go? Bytes per role: closed formula vs planner, allocator, device",
                    "tg-memory --device auto --quick --json docs/results/memory.json");
  bool explain_values = false;
  ex.add_flag("--explain", explain_values, "Print every value of each graph (role, bytes, owns storage)");
  return ex.run(argc, argv, [&](th::Experiment& e) {
    const bool q = e.quick();
    MlpConfig mc;
    mc.batch = q ? 32 : 256;
    mc.in = mc.width = q ? 128 : 1024;
    mc.depth = q ? 4 : 8;
    TransformerConfig tc;
    tc.batch = q ? 2 : 8;
    tc.seq = q ? 32 : 256;
    tc.d_model = q ? 64 : 512;
    tc.heads = q ? 4 : 8;
    const std::vector<int64_t> mlp_batches = q ? std::vector<int64_t>{8, 32, 128} : std::vector<int64_t>{32, 128, 512, 2048};
    const std::vector<int64_t> tf_batches = q ? std::vector<int64_t>{1, 2, 4} : std::vector<int64_t>{1, 4, 8, 16};

    std::vector<Case> cases;
    for (int64_t b : mlp_batches) { MlpConfig c = mc; c.batch = b; cases.push_back(mlp_case(c)); }
    for (int64_t b : tf_batches) { TransformerConfig c = tc; c.batch = b; cases.push_back(transformer_case(c)); }
    const int64_t main_mlp_batch = mc.batch, main_tf_batch = tc.batch;

    auto be = bench::make_backend(e.device());
    Agreement agree;
    th::Progress bar(cases.size(), "tg-memory");
    for (const Case& k : cases) {
      TG_NVTX_RANGE("tg-memory case");
      const bool main_point = k.batch == (k.model == "mlp" ? main_mlp_batch : main_tf_batch);
      TrainOptions sgd;
      sgd.use_momentum = false;
      const Graph train = build_training_graph(k.fn);
      compare_roles(e, k, "train_momentum", train, k.train_mom, agree, explain_values && main_point);
      arenas(e, k, "train_momentum", train);
      if (main_point) {  // the other comparisons at one batch per model
        compare_roles(e, k, "train_sgd", build_training_graph(k.fn, sgd), k.train_sgd, agree, false);
        const Graph inf = build_inference_graph(k.fn);
        compare_roles(e, k, "inference", inf, k.infer, agree, explain_values);
        arenas(e, k, "inference", inf);
        dynamic_part(e, k, *be, agree);
        if (e.on_gpu()) meminfo_part(e, k, be);
      }
      bar.tick(k.model);
    }
    // In-place ReLU (mlp): the flag changes nothing unless the planner honours it.
    for (bool ip : {false, true}) {
      MlpConfig c = mc;
      c.in_place_relu = ip;
      const Graph g = build_training_graph([c](Builder& b) { return mlp(b, c); });
      const Graph gi = build_inference_graph([c](Builder& b) { return mlp(b, c); });
      for (const auto& [mode, gr] : {std::pair<const char*, const Graph*>{"train_momentum", &g}, {"inference", &gi}}) {
        const MemoryPlan p = plan(*gr, PlanMode::planned, InPlacePolicy::flagged);
        auto& m = e.report().add_value("inplace_relu_arena",
                                       {{"model", "mlp"}, {"batch", c.batch}, {"mode", mode}, {"in_place_relu", ip}},
                                       static_cast<double>(p.arena_bytes), "B");
        m.extra["lower_bound_B"] = static_cast<double>(p.lower_bound);
        m.extra["num_in_place"] = p.num_in_place;
      }
      DynamicOptions o;
      o.in_place_relu = ip;
      for (bool early : {true, false}) {
        o.free_early = early;
        const Case k = mlp_case(c);
        const AllocatorStats s = dynamic_run(k, *be, "caching", o, early ? 3 : 1);
        e.report().add_value("inplace_relu_dynamic_peak",
                             {{"model", "mlp"}, {"batch", c.batch}, {"in_place_relu", ip}, {"free_early", early}},
                             static_cast<double>(s.peak), "B");
      }
    }
    if (!e.on_gpu()) {
      e.report().skip("meminfo_delta", "cudaMemGetInfo needs a GPU (CPU backend: host memory is shared with "
                                       "everything else on the machine, so a delta means nothing)");
      e.report().skip("allocator=pool", "the pool allocator is CUDA's cudaMallocAsync: GPU only");
    }
    fmt::print(stderr, "tg-memory: worst formula error {:.2f}% ({}); target <= 5%\n", agree.worst * 100,
               agree.where.empty() ? "-" : agree.where);
    if (agree.worst > 0.05)
      e.report().skip("agreement", fmt::format("a formula is off by {:.1f}% (> 5%): {}", agree.worst * 100, agree.where));
  });
}
