#pragma once
// The static (TensorFlow-1 style) compiler: a model function goes in once,
// a StaticExecutable comes out. Phases, each timed: record the forward graph,
// autodiff to the training graph (forward + backward + optimizer update),
// validate, plan memory, build the schedule, capture, instantiate.
#include <memory>
#include <string>

#include "graph/models.h"
#include "graph/precision.h"
#include "graph/training.h"
#include "kernels/backend.h"
#include "static/executable.h"
#include "static/passes/pass.h"
#include "static/planner.h"

namespace tg {

struct CompileOptions {
  bool training = true;           // false: the inference graph (forward, prediction only)
  TrainOptions train;
  // The precision policy (graph/precision.h): bf16 and fp16 autocast the model as it is
  // recorded; tf32 is the CUDA backend's choice (kernels/cuda_options.h) and records f32.
  // fp16 turns train.loss_scale on unless it is set (graph/loss_scale.h).
  Precision precision = Precision::fp32;
  // The graph passes between autodiff and planning (static/passes/pass.h). none: the
  // graph autodiff made, which runs the same kernels as the dynamic executor.
  PassSet passes = PassSet::none();
  // What the passes and the scheduling after them choose (static/passes/pass.h), as
  // effective_pass_options gives them to the passes: copied into CompiledPlan::pass_options.
  PassOptions pass_options;
  PlanOptions plan;
  bool use_cuda_graph = true;     // CUDA: capture + replay; false: plain launches of the schedule
  bool instantiate = true;        // false: capture only (the `update` strategy instantiates)
  bool poison_arena = false;      // fill the arena with NaN once (tests)
  FeedCopy feed_copy = FeedCopy::threads_streaming;  // CUDA: how feeds go into pinned staging (executable.h)
  bool inputs_in_graph = true;    // CUDA graph: copy the inputs inside it (executable.h)
  std::shared_ptr<Backend> backend;       // null: the CPU backend
  std::shared_ptr<ParameterStore> params; // null: a new store; pass one to share parameters
                                          // between plans (one per shape)
  uint64_t seed = 0;              // initial_values seed (same as the interpreter's and dynamic's)
};

// Milliseconds per phase. `record` is the forward recording alone; `autodiff`
// the rest of build_training_graph (backward and update nodes).
struct CompileTimings {
  double record = 0, autodiff = 0, passes = 0, validate = 0, plan = 0, schedule = 0, capture = 0, instantiate = 0;
  double total() const { return record + autodiff + passes + validate + plan + schedule + capture + instantiate; }
  std::string str() const;
};

struct CompiledPlan {
  std::shared_ptr<const Graph> graph;  // after the passes
  CompileTimings timings;
  std::vector<PassStats> pass_stats;   // one per pass that ran
  PassOptions pass_options;            // what the passes were given: effective_pass_options(CompileOptions)
  int loss = -1;        // value id, -1 for inference
  int prediction = -1;  // value id
  std::unique_ptr<StaticExecutable> exec;

  // Shorthands over exec.
  void run(const Feeds& f = {}) { exec->run(f); }
  float step(const Feeds& f = {}) { return exec->step(f); }
  std::vector<float> read(int value) const { return exec->read(value); }
  std::vector<float> read(const std::string& name) const { return exec->read(name); }
  void read_into(int value, std::vector<float>& out) const { exec->read_into(value, out); }
  const MemoryPlan& memory() const { return exec->plan(); }
};

CompiledPlan compile(const ModelFn& model, const CompileOptions& opt = {});

// The phases after autodiff, for a graph built elsewhere (a graph file, a test).
// `loss` is the value id that step() returns, or -1 (an id of `graph`, before the passes
// renumber it). `t` receives the timings.
// The pass options as the passes get them: CompileOptions::pass_options, less the GEMM
// updates under TF32 (their fused kernel computes in f32 on the CUDA cores).
PassOptions effective_pass_options(const CompileOptions& opt);
CompiledPlan compile_graph(Graph graph, int loss, const CompileOptions& opt = {}, CompileTimings t = {},
                           std::vector<std::string> pruned_inputs = {});

}  // namespace tg
