// Where does a static step's GPU time go? Compiles tg-train's configurations (training and
// inference), runs the schedule once as plain launches with a CUDA event pair around every
// op, and prints the time per op kind, the number of launches and the sum, next to the
// CUDA Graph replay of the same plan. Events around each op serialize what PDL overlaps,
// so the sum is an upper bound; the split between op kinds is what this is for.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/train/train_bench.h"
#include "probe_common.cuh"
#include "static/compiler.h"
#include "static/cuda_graph.h"

using namespace tg;

namespace {

// The mean time of a replay, after 5 untimed ones.
double replay_us(CompiledPlan& p, int iters) {
  return probe::mean_us(static_cast<cudaStream_t>(backend_stream(p.exec->backend())), 5, iters, [&] { p.run(); });
}

CompileOptions options(const std::shared_ptr<Backend>& be, bool training, const PassSet& passes, bool cuda_graph) {
  CompileOptions opt;
  opt.backend = be;
  opt.training = training;
  opt.passes = passes;
  opt.use_cuda_graph = cuda_graph;
  return opt;
}

// An op's kind for the tables: its name, and for matmul and linear the product's shape.
std::string kind_of(const kernels::OpCall& c) {
  std::string kind = op_name(c.op);
  if (c.op == OpKind::matmul || c.op == OpKind::linear) {
    const Shape& a = c.in[0].shape;
    const Shape& o = c.out.shape;
    kind += fmt::format(" {}x{}x{}{}{}", o.rows(), o.last(), c.attrs->trans_a ? a.rows() : a.last(),
                        c.attrs->trans_a ? "^T" : "", c.attrs->trans_b ? " B^T" : "");
  }
  return kind;
}

// The plain schedule captured on one stream, in schedule order, as a CUDA Graph (so every op
// follows the one before, with programmatic dependent launch as the backend sets it): its replay
// time, then the same with each op kind left out in turn. The difference is what that kind adds
// to a serialized replay, launch gaps included; the outputs of a graph with ops left out are
// wrong, only its time is of interest.
void marginal(const std::shared_ptr<Backend>& be, const std::string& label, const ModelFn& fn, bool training,
              const PassSet& passes) {
  CompiledPlan plain = compile(fn, options(be, training, passes, false));
  plain.run(bench::model_feeds(fn, 42, 10));
  plain.exec->synchronize();
  auto s = static_cast<cudaStream_t>(backend_stream(*be));
  const auto& ops = plain.exec->schedule();
  auto replay_without = [&](const std::string& left_out) {
    std::vector<int> kept;
    for (size_t i = 0; i < ops.size(); ++i)
      if (kind_of(ops[i].call) != left_out) kept.push_back(static_cast<int>(i));
    const cuda::CudaGraph graph = capture_steps(
        s, static_cast<int>(kept.size()), [&](int i) { be->run(ops[kept[i]].call); },
        [&](int i) { return kind_of(ops[kept[i]].call); });
    const cuda::GraphExec exec = cuda::GraphExec::instantiate(graph);
    return probe::mean_us(s, 5, 30, [&] { exec.launch(s); });
  };
  std::map<std::string, int> counts;
  for (const auto& op : ops) ++counts[kind_of(op.call)];
  const double all = replay_without("");
  fmt::print("== {} {}: serialized replay of {} ops {:.1f} us; without each kind:\n", label,
             training ? "train" : "infer", ops.size(), all);
  for (const auto& [kind, n] : counts)
    fmt::print("   {:<44} x{:<4} adds {:>8.1f} us\n", kind, n, all - replay_without(kind));
}

void profile(const std::shared_ptr<Backend>& be, const std::string& label, const ModelFn& fn, bool training,
             const PassSet& passes) {
  CompileOptions opt = options(be, training, passes, true);
  CompiledPlan graph_plan = compile(fn, opt);
  graph_plan.run(bench::model_feeds(fn, 42, 10));
  const double replay = replay_us(graph_plan, 50);
  opt.use_cuda_graph = false;
  CompiledPlan plain = compile(fn, opt);
  plain.run(bench::model_feeds(fn, 42, 10));
  plain.exec->synchronize();
  auto s = static_cast<cudaStream_t>(backend_stream(*be));
  const auto& ops = plain.exec->schedule();
  const std::vector<probe::Event> ev(ops.size() + 1);
  std::map<std::string, std::pair<int, double>> by_kind;
  double total = 0;
  for (int rep = 0; rep < 3; ++rep) {  // the last repetition counts
    by_kind.clear();
    total = 0;
    CK(cudaEventRecord(ev[0], s));
    for (size_t i = 0; i < ops.size(); ++i) {
      be->run(ops[i].call);
      CK(cudaEventRecord(ev[i + 1], s));
    }
    CK(cudaEventSynchronize(ev.back()));
    for (size_t i = 0; i < ops.size(); ++i) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
      auto& k = by_kind[kind_of(ops[i].call)];
      ++k.first;
      k.second += ms * 1000.0;
      total += ms * 1000.0;
    }
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_kind.begin(), by_kind.end());
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.second.second > y.second.second; });
  fmt::print("== {} {}: {} launches, sum of per-op times {:.1f} us, graph replay {:.1f} us\n", label,
             training ? "train" : "infer", ops.size(), total, replay);
  for (auto& r : rows)
    fmt::print("   {:<44} x{:<4} {:>10.1f} us  {:>5.1f}%\n", r.first, r.second.first, r.second.second,
               100.0 * r.second.second / total);
}

}  // namespace

// Usage: tg-probe-step-profile [PASSES [marginal]] (none by default; e.g. all, or linear,optimizer;
// marginal: what each op kind adds to a serialized replay, for the width-4096 MLP's step)
int main(int argc, char** argv) {
  const PassSet passes = argc > 1 ? parse_passes(argv[1]) : PassSet::none();
  if (argc > 2 && std::string(argv[2]) == "marginal") {
    auto be = make_backend(0);
    const train::Config c = train::mlp_config("mlp_w4096_d4", 1024, 4096, 4);
    marginal(be, fmt::format("{} b{}", c.sweep, c.batch), c.fn, true, passes);
    return 0;
  }
  auto be = make_backend(0);
  std::vector<train::Config> cs = {train::mlp_config("mlp_w256_d8", 32, 256, 8),
                                   train::mlp_config("mlp_w4096_d4", 1024, 4096, 4),
                                   train::transformer_config(32, 256, 512, 8)};
  for (const auto& c : cs) {
    const std::string label = fmt::format("{} b{}", c.sweep, c.batch);
    profile(be, label, c.infer_fn, false, passes);
    profile(be, label, c.fn, true, passes);
  }
  return 0;
}
