#include "static/compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/precision.h"
#include "graph/validate.h"
#include "kernels/gemm/gemm_mode.h"
#include "trace/trace.h"

namespace tg {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

std::string CompileTimings::str() const {
  return fmt::format("record {:.3f} ms, autodiff {:.3f}, passes {:.3f}, validate {:.3f}, plan {:.3f}, schedule {:.3f}, "
                     "capture {:.3f}, instantiate {:.3f} (total {:.3f} ms)",
                     record, autodiff, passes, validate, plan, schedule, capture, instantiate, total());
}

CompiledPlan compile(const ModelFn& model_as_written, const CompileOptions& opt) {
  if (!model_as_written) throw std::invalid_argument("compile: the model function is empty");
  const ModelFn model = with_precision(model_as_written, opt.precision);
  CompileTimings t;
  // The forward recording alone, timed on its own: build_training_graph records
  // it again inside, and the difference is charged to autodiff.
  auto t0 = Clock::now();
  Graph forward;
  {
    TG_TRACE_SCOPE("graph build");
    RecordingBuilder b(forward);
    model(b);
  }
  t.record = ms_since(t0);
  t0 = Clock::now();
  TrainOptions train = opt.train;
  train.loss_scale.enabled = loss_scale_enabled(train.loss_scale, opt.precision);
  Graph g = [&] {
    TG_TRACE_SCOPE(opt.training ? "autodiff" : "graph build");
    return opt.training ? build_training_graph(model, train) : build_inference_graph(model);
  }();
  const double build = ms_since(t0);
  if (opt.training) t.autodiff = std::max(0.0, build - t.record);
  else t.record = build;
  const int loss = opt.training && !g.outputs.empty() ? g.outputs[0] : -1;
  std::vector<std::string> pruned;
  for (int v : forward.values_with_role(Role::input))
    if (g.find_value(forward.values[static_cast<size_t>(v)].name) < 0) pruned.push_back(forward.values[static_cast<size_t>(v)].name);
  return compile_graph(std::move(g), loss, opt, t, std::move(pruned));
}

PassOptions effective_pass_options(const CompileOptions& opt) {
  PassOptions p = opt.pass_options;
  // matmul_sgd_momentum computes its gradient GEMM in f32 on the CUDA cores; under TF32 the
  // separate gradient GEMM runs on the tensor cores, several times faster than that.
  if (opt.precision == Precision::tf32) p.gemm_updates = false;
  return p;
}

CompiledPlan compile_graph(Graph graph, int loss, const CompileOptions& opt, CompileTimings t,
                           std::vector<std::string> pruned_inputs) {
  TG_TRACE_SCOPE("compile");
  CompiledPlan out;
  out.pass_options = effective_pass_options(opt);
  if (loss >= static_cast<int>(graph.values.size()))
    throw std::invalid_argument(fmt::format("compile: loss value {} is not in the graph", loss));
  std::shared_ptr<Backend> backend = opt.backend;
  if (!backend) backend = opt.params ? nullptr : std::shared_ptr<Backend>(make_cpu_backend());
  std::shared_ptr<ParameterStore> params = opt.params;
  if (!params) params = std::make_shared<ParameterStore>(backend, opt.seed);
  else if (backend && &params->backend() != backend.get())
    throw std::invalid_argument("compile: the parameter store belongs to another backend; pass the same backend");
  out.pass_options.backend_pads_gemms = params->backend().pads_unaligned_gemms();
  auto t0 = Clock::now();
  if (!opt.passes.empty()) {
    TG_TRACE_SCOPE("passes");
    // The passes renumber values; the loss keeps its name (a graph output is never fused away).
    validate(graph);  // a pass assumes a valid graph
    const std::string loss_name = loss >= 0 ? graph.values[static_cast<size_t>(loss)].name : "";
    graph = run_passes(std::move(graph), opt.passes, out.pass_options, &out.pass_stats);
    if (loss >= 0) loss = graph.find_value(loss_name);
  }
  t.passes = ms_since(t0);
  t0 = Clock::now();
  std::vector<int> order;
  {
    TG_TRACE_SCOPE("validate");
    validate(graph);  // names the node, op and shapes of every problem
    order = graph.topo_order();
  }
  t.validate = ms_since(t0);

  t0 = Clock::now();
  trace::Span plan_span("plan");
  PlanOptions po = opt.plan;
  const NodeWorkspaces ws = node_workspaces(graph, params->backend());
  po.workspace_bytes = ws.shared;
  if (std::any_of(ws.own.begin(), ws.own.end(), [](int64_t b) { return b > 0; })) po.node_workspace = ws.own;
  // The lanes pass: which nodes run on a side stream. Not in the batch-invariant mode, whose
  // GEMMs use the backend's one scratch buffer (kernels/gemm/gemm_mode.h).
  if (opt.passes.has(PassId::lanes) && !kernels::batch_invariant_matmul()) {
    po.live_to_end = side_lane_nodes(graph, order, out.pass_options);
    if (std::find(po.live_to_end.begin(), po.live_to_end.end(), true) == po.live_to_end.end()) po.live_to_end.clear();
    else po.workspace_bytes = 2 * ((po.workspace_bytes + 255) / 256 * 256);  // a half per stream
    if (!po.live_to_end.empty() && out.pass_options.lanes_early_updates)
      order = hoist_side_nodes(graph, order, po.live_to_end);
  }
  MemoryPlan plan = plan_memory(graph, order, po);
  t.plan = ms_since(t0);
  plan_span.end();  // the executable's phases below are spans of their own

  out.loss = loss;
  for (int o : graph.outputs)
    if (o != loss) {
      out.prediction = o;
      break;
    }
  out.graph = std::make_shared<const Graph>(std::move(graph));
  ExecutableOptions eo;
  eo.use_cuda_graph = opt.use_cuda_graph;
  eo.instantiate = opt.instantiate;
  eo.poison_arena = opt.poison_arena;
  eo.feed_copy = opt.feed_copy;
  eo.inputs_in_graph = opt.inputs_in_graph;
  eo.pruned_inputs = std::move(pruned_inputs);
  t0 = Clock::now();
  out.exec = std::make_unique<StaticExecutable>(out.graph, order, std::move(plan), params, loss, eo);
  // The constructor allocates, resolves pointers, builds the schedule and (CUDA)
  // captures and instantiates; the latter two it times itself.
  t.capture = out.exec->capture_ms();
  t.instantiate = out.exec->instantiate_ms();
  t.schedule = std::max(0.0, ms_since(t0) - t.capture - t.instantiate);
  out.timings = t;
  return out;
}

}  // namespace tg
