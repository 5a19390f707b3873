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
// What a side node may be: an update (the optimizer family) but a GEMM update, or any node all of whose
// outputs are read only by updates and none a graph output (and, in a data-parallel step, a
// gradient bucket's join, all-reduce and split read only by side nodes): the weight-gradient GEMMs, and
// the bias gradients' column sums (memory-bound, so better beside the compute-bound input
// gradients than between them; the backend gives the side stream a scratch of its own for
// them, CudaBackend::run_on). It waits for every
// main-stream node before it (one event), so it reads what the serial order gives it.
// Nothing after it on the main stream may read what it writes or write what it reads
// (a parameter an update changes, say); where that would happen, the pass marks nothing
// at all. The memory planner keeps every value a side node touches alive to the end of
// the step (PlanOptions::live_to_end), so no later node reuses its bytes meanwhile.
//
// GEMM updates (matmul_sgd_momentum) stay on the main stream unless
// PassOptions::lanes_side_gemm_updates.
// Their CUDA kernel runs stream-K by default: exactly as many blocks as the device holds,
// each with an equal share of the product, which pays only if every block is resident from
// the start. Beside an input-gradient GEMM on the other stream, some of its blocks wait
// for SMs, start late and end late, and the whole update with them, so the width-4096
// MLP's step is slower with them on the side stream than on one stream (CHANGELOG.md).
// (The tiled form, CudaBackendOptions::gemm_update_streamk off, gains from the side stream
// instead: its last wave leaves SMs idle that the other stream's GEMM fills.)
#include <algorithm>

#include "static/passes/pass.h"

namespace tg {

std::vector<bool> side_lane_nodes(const Graph& g, const std::vector<int>& schedule, const PassOptions& opt) {
  const size_t nn = g.nodes.size(), nv = g.values.size();
  std::vector<bool> side(nn, false);
  std::vector<std::vector<int>> readers(nv);
  for (size_t n = 0; n < nn; ++n)
    for (int in : g.nodes[n].inputs) readers[static_cast<size_t>(in)].push_back(static_cast<int>(n));
  std::vector<bool> is_output(nv, false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  const bool gemm_updates = opt.lanes_side_gemm_updates;
  auto side_update = [&](OpKind op) { return op_is_update(op) && (gemm_updates || op != OpKind::matmul_sgd_momentum); };
  // Whether every output of `node` is read, by `reader_ok` readers only, and none is a graph output.
  auto read_only_by = [&](const Node& node, auto reader_ok) {
    for (int o : node.outputs) {
      if (is_output[static_cast<size_t>(o)] || readers[static_cast<size_t>(o)].empty()) return false;
      for (int r : readers[static_cast<size_t>(o)])
        if (!reader_ok(r)) return false;
    }
    return true;
  };
  for (size_t n = 0; n < nn; ++n) side[n] = side_update(g.nodes[n].op);
  for (size_t n = 0; n < nn; ++n) {
    const Node& node = g.nodes[n];
    if (op_is_update(node.op) || node.outputs.empty()) continue;
    side[n] = read_only_by(node, [&](int r) { return side_update(g.nodes[static_cast<size_t>(r)].op); });
  }
  // Data parallelism: a gradient bucket's join, all-reduce and split (graph/data_parallel.h)
  // feed nothing but the updates when nothing else reads the reduced gradients (no clipping,
  // no loss-scale check), and then the whole chain runs beside the rest of backward: the
  // collective of the last layers' bucket overlaps the first layers' gradients, which is
  // what DDP's buckets are for. Walked backwards, so a chain is marked from its updates up.
  const bool collectives =
      std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& x) { return x.op == OpKind::all_reduce; });
  for (auto it = schedule.rbegin(); collectives && it != schedule.rend(); ++it) {
    const Node& node = g.nodes[static_cast<size_t>(*it)];
    const bool bucket_op = node.op == OpKind::all_reduce || node.op == OpKind::concat || node.op == OpKind::slice ||
                           node.op == OpKind::reshape;
    if (side[static_cast<size_t>(*it)] || !bucket_op) continue;
    side[static_cast<size_t>(*it)] = read_only_by(node, [&](int r) { return side[static_cast<size_t>(r)]; });
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
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        mark(read_by_side_at, node.inputs[k]);
        // Updates write their parameter and velocity in place.
        if (op_update_writes(node.op, static_cast<int>(k), static_cast<int>(node.inputs.size()))) mark(written_by_side_at, node.inputs[k]);
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

std::vector<int> hoist_side_nodes(const Graph& g, const std::vector<int>& schedule, const std::vector<bool>& side) {
  // What a side node waits for on the main stream, as a position in `schedule`: the main
  // producers of its inputs and, for an update, every earlier main reader of the inputs it
  // writes in place; and what the side nodes that make its inputs wait for.
  const auto is_side = [&](int n) { return side[static_cast<size_t>(n)]; };
  std::vector<int> main_producer_pos(g.values.size(), -1);
  for (size_t s = 0; s < schedule.size(); ++s)
    if (!is_side(schedule[s]))
      for (int o : g.nodes[static_cast<size_t>(schedule[s])].outputs) main_producer_pos[static_cast<size_t>(o)] = static_cast<int>(s);
  std::vector<int> last_main_reader(g.values.size(), -1);  // running, as the schedule is walked
  std::vector<int> side_ready(g.values.size(), -1);        // per value a side node makes: its node's ready point
  std::vector<int> side_reader_ready(g.values.size(), -1); // per value: the latest ready point of a side reader
  std::vector<int> side_queue, ready_after;
  for (size_t s = 0; s < schedule.size(); ++s) {
    const int n = schedule[s];
    const Node& node = g.nodes[static_cast<size_t>(n)];
    if (!is_side(n)) {
      for (int in : node.inputs) last_main_reader[static_cast<size_t>(in)] = static_cast<int>(s);
      continue;
    }
    int after = -1;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const size_t in = static_cast<size_t>(node.inputs[k]);
      after = std::max({after, main_producer_pos[in], side_ready[in]});
      if (op_update_writes(node.op, static_cast<int>(k), static_cast<int>(node.inputs.size())))
        after = std::max({after, last_main_reader[in], side_reader_ready[in]});
    }
    for (int o : node.outputs) side_ready[static_cast<size_t>(o)] = after;
    for (int in : node.inputs) side_reader_ready[static_cast<size_t>(in)] = std::max(side_reader_ready[static_cast<size_t>(in)], after);
    side_queue.push_back(n);
    ready_after.push_back(after);
  }
  // The side stream's order: by ready point, ties in schedule order (which puts a side node
  // before the side nodes that read it: their ready point is never earlier).
  std::vector<size_t> by_ready(side_queue.size());
  for (size_t i = 0; i < by_ready.size(); ++i) by_ready[i] = i;
  std::stable_sort(by_ready.begin(), by_ready.end(), [&](size_t a, size_t b) { return ready_after[a] < ready_after[b]; });
  std::vector<int> queue, ready;
  for (size_t i : by_ready) {
    queue.push_back(side_queue[i]);
    ready.push_back(ready_after[i]);
  }
  side_queue.swap(queue);
  ready_after.swap(ready);
  // The main nodes in their order; after each, the side nodes that are ready by then.
  std::vector<int> out;
  size_t next = 0;
  auto emit_ready = [&](int upto) {
    for (; next < side_queue.size() && ready_after[next] <= upto; ++next) out.push_back(side_queue[next]);
  };
  emit_ready(-1);
  for (size_t s = 0; s < schedule.size(); ++s) {
    if (is_side(schedule[s])) continue;
    out.push_back(schedule[s]);
    emit_ready(static_cast<int>(s));
  }
  emit_ready(static_cast<int>(schedule.size()));
  return out;
}

}  // namespace tg
