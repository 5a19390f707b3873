// The lanes pass: which nodes of a training step may run on a second stream beside the
// rest. It rewrites nothing; it marks nodes, and the CUDA runner issues the marked ones
// on a side stream that forks from the main stream at the node's place in the schedule
// and joins it at the end of the step.
//
// Why: in a training step the weight gradient of a layer (a^T dz, with the bias
// gradient) and the parameter updates feed nothing but the updates, while the input
// gradient (dz w^T) feeds the rest of the backward pass. On one stream every weight
// gradient sits on the critical path; on two, the chain of input gradients goes on while
// the weight gradients run beside it. In an overhead-bound step (small GEMMs that each
// fill a few SMs) that removes half the backward kernels from the critical path.
//
// What a side node may be: a GEMM-family node all of whose outputs are read only by
// updates, or an update (the optimizer family), and no graph output. It waits for every
// main-stream node before it (one event), so it reads what the serial order gives it.
// Nothing after it on the main stream may read what it writes or write what it reads
// (a parameter an update changes, say); where that would happen, the pass marks nothing
// at all. The memory planner keeps every value a side node touches alive to the end of
// the step (PlanOptions::live_to_end), so no later node reuses its bytes meanwhile.
#include <string_view>

#include "static/passes/pass.h"

namespace tg {

namespace {

bool is_update(OpKind op) { return std::string_view(op_traits(op).family) == "optimizer"; }
bool is_gemm(OpKind op) { return std::string_view(op_traits(op).family) == "matmul"; }

}  // namespace

std::vector<bool> side_lane_nodes(const Graph& g, const std::vector<int>& schedule) {
  const size_t nn = g.nodes.size(), nv = g.values.size();
  std::vector<bool> side(nn, false);
  std::vector<std::vector<int>> readers(nv);
  for (size_t n = 0; n < nn; ++n)
    for (int in : g.nodes[n].inputs) readers[static_cast<size_t>(in)].push_back(static_cast<int>(n));
  std::vector<bool> is_output(nv, false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  for (size_t n = 0; n < nn; ++n) side[n] = is_update(g.nodes[n].op);
  for (size_t n = 0; n < nn; ++n) {
    const Node& node = g.nodes[n];
    if (!is_gemm(node.op)) continue;
    bool only_updates = true;
    for (int o : node.outputs) {
      if (is_output[static_cast<size_t>(o)] || readers[static_cast<size_t>(o)].empty()) only_updates = false;
      for (int r : readers[static_cast<size_t>(o)])
        if (!is_update(g.nodes[static_cast<size_t>(r)].op)) only_updates = false;
    }
    side[n] = only_updates;
  }
  // The hazards: a main node after a side node that reads what it writes or writes what it
  // reads. The updates' in-place writes are what this guards; any one marks nothing.
  std::vector<int> written_by_side_at(nv, -1), read_by_side_at(nv, -1);  // the earliest side step
  for (size_t s = 0; s < schedule.size(); ++s) {
    const int n = schedule[s];
    const Node& node = g.nodes[static_cast<size_t>(n)];
    if (side[static_cast<size_t>(n)]) {
      auto mark = [&](std::vector<int>& at, int v) {
        if (at[static_cast<size_t>(v)] < 0) at[static_cast<size_t>(v)] = static_cast<int>(s);
      };
      for (int o : node.outputs) mark(written_by_side_at, o);
      for (int in : node.inputs) {
        mark(read_by_side_at, in);
        if (is_update(node.op)) mark(written_by_side_at, in);  // updates write their inputs in place
      }
      continue;
    }
    for (int in : node.inputs)
      if (written_by_side_at[static_cast<size_t>(in)] >= 0) return std::vector<bool>(nn, false);
    for (int o : node.outputs)
      if (written_by_side_at[static_cast<size_t>(o)] >= 0 || read_by_side_at[static_cast<size_t>(o)] >= 0)
        return std::vector<bool>(nn, false);
  }
  return side;
}

}  // namespace tg
