// Where does a static step's GPU time go? Compiles tg-train's configurations (training and
// inference), runs the schedule once as plain launches with a CUDA event pair around every
// op, and prints the time per op kind, the number of launches and the sum, next to the
// CUDA Graph replay of the same plan. Events around each op serialize what PDL overlaps,
// so the sum is an upper bound; the split between op kinds is what this is for.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/train/train_bench.h"
#include "kernels/cuda/check.h"
#include "static/compiler.h"

using namespace tg;

namespace {

double replay_us(CompiledPlan& p, int iters) {
  for (int i = 0; i < 5; ++i) p.run();
  p.exec->synchronize();
  cudaEvent_t a, b;
  TG_CUDA_CHECK(cudaEventCreate(&a));
  TG_CUDA_CHECK(cudaEventCreate(&b));
  auto s = static_cast<cudaStream_t>(backend_stream(p.exec->backend()));
  TG_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < iters; ++i) p.run();
  TG_CUDA_CHECK(cudaEventRecord(b, s));
  TG_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  TG_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1000.0 / iters;
}

void profile(const std::shared_ptr<Backend>& be, const std::string& label, const ModelFn& fn, bool training,
             const PassSet& passes) {
  CompileOptions opt;
  opt.backend = be;
  opt.training = training;
  opt.passes = passes;
  CompiledPlan graph_plan = compile(fn, opt);
  graph_plan.run(bench::model_feeds(fn, 42, 10));
  const double replay = replay_us(graph_plan, 50);
  opt.use_cuda_graph = false;
  CompiledPlan plain = compile(fn, opt);
  plain.run(bench::model_feeds(fn, 42, 10));
  plain.exec->synchronize();
  auto s = static_cast<cudaStream_t>(backend_stream(*be));
  const auto& ops = plain.exec->schedule();
  std::vector<cudaEvent_t> ev(ops.size() + 1);
  for (auto& e : ev) TG_CUDA_CHECK(cudaEventCreate(&e));
  std::map<std::string, std::pair<int, double>> by_kind;
  double total = 0;
  for (int rep = 0; rep < 3; ++rep) {  // the last repetition counts
    by_kind.clear();
    total = 0;
    TG_CUDA_CHECK(cudaEventRecord(ev[0], s));
    for (size_t i = 0; i < ops.size(); ++i) {
      be->run(ops[i].call);
      TG_CUDA_CHECK(cudaEventRecord(ev[i + 1], s));
    }
    TG_CUDA_CHECK(cudaEventSynchronize(ev.back()));
    for (size_t i = 0; i < ops.size(); ++i) {
      float ms = 0;
      TG_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
      std::string kind = op_name(ops[i].call.op);
      if (ops[i].call.op == OpKind::matmul || ops[i].call.op == OpKind::linear) {
        const Shape& a = ops[i].call.in[0].shape;
        const Shape& o = ops[i].call.out.shape;
        kind += fmt::format(" {}x{}x{}{}{}", o.rows(), o.last(), ops[i].call.attrs->trans_a ? a.rows() : a.last(),
                            ops[i].call.attrs->trans_a ? "^T" : "", ops[i].call.attrs->trans_b ? " B^T" : "");
      }
      auto& k = by_kind[kind];
      ++k.first;
      k.second += ms * 1000.0;
      total += ms * 1000.0;
    }
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_kind.begin(), by_kind.end());
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.second.second > y.second.second; });
  fmt::print("== {} {}: {} launches, sum of per-op times {:.1f} us, graph replay {:.1f} us\n", label,
             training ? "train" : "infer", ops.size(), total, replay);
  for (auto& r : rows)
    fmt::print("   {:<44} x{:<4} {:>10.1f} us  {:>5.1f}%\n", r.first, r.second.first, r.second.second,
               100.0 * r.second.second / total);
}

}  // namespace

// Usage: tg-probe-step-profile [PASSES] (none by default; e.g. all, or linear,optimizer)
int main(int argc, char** argv) {
  const PassSet passes = argc > 1 ? parse_passes(argv[1]) : PassSet::none();
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
