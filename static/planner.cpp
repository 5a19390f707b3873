#include "static/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "graph/errors.h"

namespace tg {

const char* plan_mode_name(PlanMode m) { return m == PlanMode::naive ? "naive" : "planned"; }

bool parse_plan_mode(const std::string& s, PlanMode& out) {
  if (s == "naive") out = PlanMode::naive;
  else if (s == "planned") out = PlanMode::planned;
  else return false;
  return true;
}

namespace {

bool is_external_role(Role r) { return r == Role::input || r == Role::parameter || r == Role::optimizer_state; }

// The byte offset of a slice's output in its input when the output is one contiguous block of
// it; -1 when it is strided.
int64_t slice_view_bytes(const Graph& g, const Node& node) {
  const ValueInfo& x = g.values[static_cast<size_t>(node.inputs[0])];
  const int64_t at = contiguous_slice_offset(x.shape, node.attrs.axis, node.attrs.start);
  return at < 0 ? -1 : at * dtype_size(x.dtype);
}

// Whether an input of `node` past input 0 is a partial view of storage root r (a slice view, or
// a reshape of one): an in-place write over r could change it before the kernel reads it.
// Whole-storage aliases (mul(x, x), a reshape of x) are read element for element as written.
bool reads_part_of(const Graph& g, const MemoryPlan& p, const Node& node, int r) {
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const auto v = static_cast<size_t>(node.inputs[i]);
    if (p.storage[v] == r && (p.view_offset[v] != 0 || g.values[v].bytes() != g.values[static_cast<size_t>(r)].bytes()))
      return true;
  }
  return false;
}

std::string mib(int64_t b) { return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1024.0 * 1024.0)); }

// Per value: the schedule step that writes it (-1: nobody) and the last step that
// reads it (graph outputs: the last step). Shared by the planner and the checker
// so that both agree on what "live" means; the checker recomputes it independently
// of the plan it checks.
struct Liveness {
  std::vector<int> step_of_node;
  std::vector<int> def, last;
  std::vector<bool> is_output;
};

Liveness liveness(const Graph& g, const std::vector<int>& schedule, const std::vector<bool>& live_to_end) {
  const int nv = static_cast<int>(g.values.size());
  const int nn = static_cast<int>(g.nodes.size());
  Liveness L;
  L.step_of_node.assign(static_cast<size_t>(nn), -1);
  if (static_cast<int>(schedule.size()) != nn)
    graph_error("memory plan: the schedule has {} steps but the graph has {} nodes; give every node exactly once",
                schedule.size(), nn);
  for (int s = 0; s < nn; ++s) {
    const int n = schedule[static_cast<size_t>(s)];
    if (n < 0 || n >= nn) graph_error("memory plan: schedule step {} names node {}, which does not exist", s, n);
    if (L.step_of_node[static_cast<size_t>(n)] >= 0)
      graph_error("memory plan: node '{}' appears twice in the schedule (steps {} and {})", g.nodes[static_cast<size_t>(n)].name,
                  L.step_of_node[static_cast<size_t>(n)], s);
    L.step_of_node[static_cast<size_t>(n)] = s;
  }
  L.def.assign(static_cast<size_t>(nv), -1);
  L.last.assign(static_cast<size_t>(nv), -1);
  L.is_output.assign(static_cast<size_t>(nv), false);
  for (int s = 0; s < nn; ++s) {
    const Node& node = g.nodes[static_cast<size_t>(schedule[static_cast<size_t>(s)])];
    for (int o : node.outputs) {
      if (o < 0 || o >= nv) graph_error("memory plan: node '{}' writes value {}, which does not exist", node.name, o);
      L.def[static_cast<size_t>(o)] = s;
      L.last[static_cast<size_t>(o)] = std::max(L.last[static_cast<size_t>(o)], s);
    }
  }
  for (int s = 0; s < nn; ++s) {
    const Node& node = g.nodes[static_cast<size_t>(schedule[static_cast<size_t>(s)])];
    for (int in : node.inputs) {
      if (in < 0 || in >= nv) graph_error("memory plan: node '{}' reads value {}, which does not exist", node.name, in);
      const ValueInfo& v = g.values[static_cast<size_t>(in)];
      const int d = L.def[static_cast<size_t>(in)];
      if (d < 0 && !is_external_role(v.role))
        graph_error("memory plan: node '{}' ({}) reads '{}' ({}), which no node writes; feed it as an input or "
                    "produce it with a node", node.name, op_name(node.op), v.name, role_name(v.role));
      if (d >= s)
        graph_error("memory plan: node '{}' at step {} reads '{}' before it is written at step {}; the schedule "
                    "must be a topological order (Graph::topo_order)", node.name, s, v.name, d);
      L.last[static_cast<size_t>(in)] = std::max(L.last[static_cast<size_t>(in)], s);
    }
  }
  for (int o : g.outputs) {
    if (o < 0 || o >= nv) graph_error("memory plan: graph output {} is not a value", o);
    L.is_output[static_cast<size_t>(o)] = true;
    if (L.def[static_cast<size_t>(o)] >= 0) L.last[static_cast<size_t>(o)] = nn - 1;
  }
  // Nodes that run beside the schedule (a side stream) may still read or write their
  // values after the steps that follow them: those values live to the end.
  if (!live_to_end.empty() && live_to_end.size() != static_cast<size_t>(nn))
    graph_error("memory plan: live_to_end has {} entries, the graph {} nodes; give one per node id", live_to_end.size(), nn);
  for (int n = 0; n < static_cast<int>(live_to_end.size()); ++n) {
    if (!live_to_end[static_cast<size_t>(n)]) continue;
    const Node& node = g.nodes[static_cast<size_t>(n)];
    for (const std::vector<int>* vs : {&node.inputs, &node.outputs})
      for (int v : *vs)
        if (L.def[static_cast<size_t>(v)] >= 0) L.last[static_cast<size_t>(v)] = nn - 1;
  }
  return L;
}

struct Block {
  int root;      // a value id, or (value count + i) for the i-th node workspace
  int64_t size;  // aligned
  int64_t raw;   // unaligned: the lower bound's
  int first, last;
};

// Greedy by size, best fit (Pisarchyk & Lee 2020, TFLite's arena planner): the
// largest blocks are placed first; each goes into the smallest gap between
// already placed blocks that overlap it in time, or above them all.
int64_t place_best_fit(std::vector<Block>& blocks, std::vector<int64_t>& offset_of_root) {
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    return blocks[a].first < blocks[b].first;
  });
  struct Placed {
    int64_t off, end;
    int first, last;
  };
  std::vector<Placed> placed;  // kept sorted by offset
  std::vector<const Placed*> overlapping;
  int64_t arena = 0;
  for (size_t i : order) {
    const Block& b = blocks[i];
    overlapping.clear();
    for (const Placed& p : placed)
      if (p.first <= b.last && b.first <= p.last) overlapping.push_back(&p);
    int64_t prev_end = 0, best = -1, best_gap = INT64_MAX;
    for (const Placed* p : overlapping) {
      const int64_t gap = p->off - prev_end;
      if (gap >= b.size && gap < best_gap) {
        best_gap = gap;
        best = prev_end;
      }
      prev_end = std::max(prev_end, p->end);
    }
    const int64_t off = best >= 0 ? best : prev_end;
    offset_of_root[static_cast<size_t>(b.root)] = off;
    arena = std::max(arena, off + b.size);
    Placed np{off, off + b.size, b.first, b.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), np,
                                   [](const Placed& x, const Placed& y) { return x.off < y.off; }),
                  np);
  }
  return arena;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, const std::vector<int>& schedule, const PlanOptions& opt) {
  if (opt.alignment <= 0 || (opt.alignment & (opt.alignment - 1)) != 0)
    graph_error("memory plan: alignment {} must be a power of two (256 is usual)", opt.alignment);
  const Liveness L = liveness(g, schedule, opt.live_to_end);
  const int nv = static_cast<int>(g.values.size());
  const int steps = static_cast<int>(schedule.size());

  MemoryPlan p;
  p.mode = opt.mode;
  p.live_to_end = opt.live_to_end;
  p.alignment = opt.alignment;
  p.offset.assign(static_cast<size_t>(nv), -1);
  p.placement.assign(static_cast<size_t>(nv), Placement::unused);
  p.storage.resize(static_cast<size_t>(nv));
  std::iota(p.storage.begin(), p.storage.end(), 0);
  p.view_offset.assign(static_cast<size_t>(nv), 0);
  p.first_step.assign(static_cast<size_t>(nv), -1);
  p.last_step.assign(static_cast<size_t>(nv), -1);
  p.in_place.assign(g.nodes.size(), false);

  auto bytes = [&](int v) { return g.values[static_cast<size_t>(v)].bytes(); };
  // Storage groups, keyed by their root: lifetime and whether a graph output is in it.
  std::vector<int> group_last(static_cast<size_t>(nv), -1);
  std::vector<bool> group_has_output(static_cast<size_t>(nv), false);

  for (int v = 0; v < nv; ++v) {
    const ValueInfo& info = g.values[static_cast<size_t>(v)];
    if (L.def[static_cast<size_t>(v)] < 0 && is_external_role(info.role)) {
      p.placement[static_cast<size_t>(v)] = Placement::external;
      p.external_bytes += bytes(v);
      p.role_bytes[static_cast<size_t>(info.role)] += bytes(v);
    }
  }

  const bool allow_in_place = opt.mode == PlanMode::planned && opt.in_place != InPlacePolicy::none;
  for (int s = 0; s < steps; ++s) {
    const int nid = schedule[static_cast<size_t>(s)];
    const Node& node = g.nodes[static_cast<size_t>(nid)];
    if (node.outputs.empty()) continue;
    const int o = node.outputs[0];
    int root = o;
    Placement place = Placement::arena;
    int64_t view_at = 0;
    const auto x0 = node.inputs.empty() ? size_t{0} : static_cast<size_t>(node.inputs[0]);
    const int64_t slice_at = node.op == OpKind::slice && opt.slice_views ? slice_view_bytes(g, node) : -1;
    if (op_is_view(node.op)) {
      root = p.storage[x0];
      place = Placement::view;
      view_at = p.view_offset[x0];
    } else if (slice_at >= 0 && p.placement[static_cast<size_t>(p.storage[x0])] == Placement::arena &&
               (p.view_offset[x0] + slice_at) % opt.alignment == 0) {
      // Only over arena storage: a slice of a parameter stays a copy, taken before the update
      // that rewrites the parameter in place.
      root = p.storage[x0];
      place = Placement::view;
      view_at = p.view_offset[x0] + slice_at;
    } else if (allow_in_place && !node.inputs.empty()) {
      const bool wants = node.attrs.in_place ||
                         (opt.in_place == InPlacePolicy::elementwise && op_can_run_in_place(node.op));
      const int x = node.inputs[0];
      const int r = p.storage[static_cast<size_t>(x)];
      // Legal only when input 0's storage is ours to overwrite (in the arena), dies
      // here, holds no graph output, has exactly the output's size and type, and no other
      // input reads a part of it (a slice view) that the kernel could overwrite before reading.
      if (wants && op_can_run_in_place(node.op) && p.placement[static_cast<size_t>(r)] == Placement::arena &&
          group_last[static_cast<size_t>(r)] == s && !group_has_output[static_cast<size_t>(r)] &&
          bytes(r) == bytes(o) && g.values[static_cast<size_t>(r)].dtype == g.values[static_cast<size_t>(o)].dtype &&
          !reads_part_of(g, p, node, r)) {
        root = r;
        p.in_place[static_cast<size_t>(nid)] = true;
        ++p.num_in_place;
      }
    }
    // Output 0 may share input 0's storage; a second output (fused ops) has its own.
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int v = node.outputs[k];
      const int r = k == 0 ? root : v;
      p.storage[static_cast<size_t>(v)] = r;
      p.placement[static_cast<size_t>(v)] = r == v ? Placement::arena : place;
      if (k == 0 && place == Placement::view) p.view_offset[static_cast<size_t>(v)] = view_at;
      if (r == v) {
        group_last[static_cast<size_t>(v)] = L.last[static_cast<size_t>(v)];
        p.first_step[static_cast<size_t>(v)] = s;
      } else {
        group_last[static_cast<size_t>(r)] = std::max(group_last[static_cast<size_t>(r)], L.last[static_cast<size_t>(v)]);
      }
      if (L.is_output[static_cast<size_t>(v)]) group_has_output[static_cast<size_t>(r)] = true;
    }
  }
  std::vector<Block> blocks;
  for (int v = 0; v < nv; ++v) {
    if (p.placement[static_cast<size_t>(v)] != Placement::arena || p.storage[static_cast<size_t>(v)] != v) continue;
    blocks.push_back({v, align_up(bytes(v), opt.alignment), bytes(v), p.first_step[static_cast<size_t>(v)],
                      group_last[static_cast<size_t>(v)]});
    p.role_bytes[static_cast<size_t>(g.values[static_cast<size_t>(v)].role)] += bytes(v);
  }
  // The nodes' own workspaces: blocks live at their node's step, or to the end on a side lane.
  p.node_workspace_offset.assign(g.nodes.size(), -1);
  p.node_workspace_bytes.assign(g.nodes.size(), 0);
  std::vector<int> workspace_node;  // per workspace block, its node
  if (!opt.node_workspace.empty()) {
    if (opt.node_workspace.size() != g.nodes.size())
      graph_error("memory plan: node_workspace has {} entries, the graph {} nodes; give one per node id",
                  opt.node_workspace.size(), g.nodes.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const int64_t b = opt.node_workspace[n];
      if (b < 0) graph_error("memory plan: node '{}' has a workspace of {} bytes; give 0 or more", g.nodes[n].name, b);
      if (b == 0) continue;
      const int s = L.step_of_node[n];
      if (s < 0) continue;  // not scheduled: it never runs
      const bool to_end = !opt.live_to_end.empty() && opt.live_to_end[n];
      blocks.push_back({nv + static_cast<int>(workspace_node.size()), align_up(b, opt.alignment), b, s,
                        to_end ? steps - 1 : s});
      workspace_node.push_back(static_cast<int>(n));
      p.node_workspace_bytes[n] = b;
    }
  }
  std::vector<int64_t> root_offset(static_cast<size_t>(nv) + workspace_node.size(), -1);
  if (opt.mode == PlanMode::naive) {
    int64_t off = 0;
    for (const Block& b : blocks) {
      root_offset[static_cast<size_t>(b.root)] = off;
      off += b.size;
    }
    p.arena_bytes = off;
  } else {
    p.arena_bytes = place_best_fit(blocks, root_offset);
  }

  // Lower bound: a sweep over the steps with a difference array.
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 1, 0);
  for (const Block& b : blocks) {
    delta[static_cast<size_t>(b.first)] += b.raw;
    delta[static_cast<size_t>(b.last) + 1] -= b.raw;
  }
  int64_t live = 0;
  for (int s = 0; s < steps; ++s) p.lower_bound = std::max(p.lower_bound, live += delta[static_cast<size_t>(s)]);
  if (opt.workspace_bytes < 0) graph_error("memory plan: workspace of {} bytes; give 0 or more", opt.workspace_bytes);
  if (opt.workspace_bytes > 0) {
    p.workspace_offset = align_up(p.arena_bytes, opt.alignment);
    p.workspace_bytes = opt.workspace_bytes;
    p.arena_bytes = p.workspace_offset + align_up(opt.workspace_bytes, opt.alignment);
    p.lower_bound += opt.workspace_bytes;  // live at every step
  }

  for (size_t i = 0; i < workspace_node.size(); ++i)
    p.node_workspace_offset[static_cast<size_t>(workspace_node[i])] = root_offset[static_cast<size_t>(nv) + i];
  for (int v = 0; v < nv; ++v) {
    const int r = p.storage[static_cast<size_t>(v)];
    if (p.placement[static_cast<size_t>(r)] != Placement::arena) continue;
    p.first_step[static_cast<size_t>(v)] = p.first_step[static_cast<size_t>(r)];
    p.last_step[static_cast<size_t>(v)] = group_last[static_cast<size_t>(r)];
    if (p.placement[static_cast<size_t>(v)] == Placement::arena) p.offset[static_cast<size_t>(v)] = root_offset[static_cast<size_t>(r)];
  }
  return p;
}

std::string MemoryPlan::summary() const {
  const double ratio = lower_bound > 0 ? static_cast<double>(arena_bytes) / static_cast<double>(lower_bound) : 1.0;
  return fmt::format("{} arena {} (lower bound {}, {:.3f}x{}{}), {} node(s) in place, external {}", plan_mode_name(mode),
                     mib(arena_bytes), mib(lower_bound), ratio,
                     workspace_bytes > 0 ? fmt::format("; GEMM workspace {}", mib(workspace_bytes)) : "",
                     [&] {
                       int64_t n = 0, most = 0;
                       for (int64_t b : node_workspace_bytes)
                         if (b > 0) ++n, most = std::max(most, b);
                       return n ? fmt::format("; {} node workspace(s), the largest {}", n, mib(most)) : std::string();
                     }(),
                     num_in_place,
                     mib(external_bytes));
}

std::string check_plan(const Graph& g, const std::vector<int>& schedule, const MemoryPlan& plan) {
  const Liveness L = liveness(g, schedule, plan.live_to_end);
  const int nv = static_cast<int>(g.values.size());
  if (static_cast<int>(plan.offset.size()) != nv || static_cast<int>(plan.storage.size()) != nv)
    return fmt::format("plan covers {} values, graph has {}", plan.offset.size(), nv);
  auto bytes = [&](int v) { return g.values[static_cast<size_t>(v)].bytes(); };
  // Independent lifetime of each storage root: the union of its members' lifetimes.
  std::vector<int> first(static_cast<size_t>(nv), INT32_MAX), last(static_cast<size_t>(nv), -1);
  for (int v = 0; v < nv; ++v) {
    const int r = plan.storage[static_cast<size_t>(v)];
    if (r < 0 || r >= nv || plan.storage[static_cast<size_t>(r)] != r) return fmt::format("value {} has a bad storage root", v);
    const Placement pl = plan.placement[static_cast<size_t>(v)];
    if (L.def[static_cast<size_t>(v)] >= 0) {
      if (pl == Placement::external || pl == Placement::unused)
        return fmt::format("value '{}' is written by a node but placed outside the arena", g.values[static_cast<size_t>(v)].name);
      first[static_cast<size_t>(r)] = std::min(first[static_cast<size_t>(r)], L.def[static_cast<size_t>(v)]);
      last[static_cast<size_t>(r)] = std::max(last[static_cast<size_t>(r)], L.last[static_cast<size_t>(v)]);
    }
    if (pl == Placement::view) {
      const int64_t at = plan.view_offset.empty() ? 0 : plan.view_offset[static_cast<size_t>(v)];
      if (at < 0 || at % plan.alignment != 0 || at + bytes(v) > bytes(r))
        return fmt::format("view '{}' of {} bytes at {} does not fit in '{}' ({} bytes) on the alignment {}",
                           g.values[static_cast<size_t>(v)].name, bytes(v), at, g.values[static_cast<size_t>(r)].name, bytes(r),
                           plan.alignment);
    }
    if (pl == Placement::arena) {
      const int64_t off = plan.offset[static_cast<size_t>(v)];
      if (off < 0 || off % plan.alignment != 0) return fmt::format("value {} has offset {} (alignment {})", v, off, plan.alignment);
      if (off + bytes(v) > plan.arena_bytes) return fmt::format("value {} ends at {} past the arena {}", v, off + bytes(v), plan.arena_bytes);
      if (plan.workspace_offset >= 0 && off + bytes(v) > plan.workspace_offset)
        return fmt::format("value {} ends at {}, inside the workspace at {}", v, off + bytes(v), plan.workspace_offset);
      if (off != plan.offset[static_cast<size_t>(r)]) return fmt::format("value {} is not at its storage root's offset", v);
      if (bytes(v) != bytes(r)) return fmt::format("value {} shares storage of a different size", v);
    }
  }
  std::vector<int> roots;
  for (int v = 0; v < nv; ++v)
    if (plan.placement[static_cast<size_t>(v)] == Placement::arena && plan.storage[static_cast<size_t>(v)] == v) roots.push_back(v);
  for (size_t i = 0; i < roots.size(); ++i)
    for (size_t j = i + 1; j < roots.size(); ++j) {
      const int a = roots[i], b = roots[j];
      const bool time = first[static_cast<size_t>(a)] <= last[static_cast<size_t>(b)] && first[static_cast<size_t>(b)] <= last[static_cast<size_t>(a)];
      const int64_t ao = plan.offset[static_cast<size_t>(a)], bo = plan.offset[static_cast<size_t>(b)];
      const bool space = ao < bo + bytes(b) && bo < ao + bytes(a);
      if (time && space)
        return fmt::format("'{}' [{}, {}) and '{}' [{}, {}) overlap in the arena while both live (steps {}..{} and {}..{})",
                           g.values[static_cast<size_t>(a)].name, ao, ao + bytes(a), g.values[static_cast<size_t>(b)].name, bo,
                           bo + bytes(b), first[static_cast<size_t>(a)], last[static_cast<size_t>(a)], first[static_cast<size_t>(b)],
                           last[static_cast<size_t>(b)]);
    }
  // The nodes' own workspaces: aligned, in the arena below the shared region, apart from every
  // storage group and every other workspace live at the same steps.
  const int last_step = static_cast<int>(schedule.size()) - 1;
  auto workspace_steps = [&](size_t n) {
    const int s = L.step_of_node[n];
    const bool to_end = !plan.live_to_end.empty() && plan.live_to_end[n];
    return std::pair<int, int>{s, to_end ? last_step : s};
  };
  for (size_t n = 0; n < plan.node_workspace_offset.size(); ++n) {
    const int64_t off = plan.node_workspace_offset[n], b = plan.node_workspace_bytes[n];
    if (off < 0) continue;
    const std::string& name = g.nodes[n].name;
    if (off % plan.alignment != 0) return fmt::format("node '{}' has its workspace at {} (alignment {})", name, off, plan.alignment);
    const int64_t limit = plan.workspace_offset >= 0 ? plan.workspace_offset : plan.arena_bytes;
    if (off + b > limit) return fmt::format("node '{}' has its workspace [{}, {}) past {}", name, off, off + b, limit);
    const auto [s0, s1] = workspace_steps(n);
    for (int r : roots) {
      const int64_t ro = plan.offset[static_cast<size_t>(r)];
      if (first[static_cast<size_t>(r)] <= s1 && s0 <= last[static_cast<size_t>(r)] && ro < off + b && off < ro + bytes(r))
        return fmt::format("node '{}' has its workspace [{}, {}) over '{}' [{}, {}), live at step {}", name, off, off + b,
                           g.values[static_cast<size_t>(r)].name, ro, ro + bytes(r), s0);
    }
    for (size_t m = n + 1; m < plan.node_workspace_offset.size(); ++m) {
      const int64_t mo = plan.node_workspace_offset[m], mb = plan.node_workspace_bytes[m];
      if (mo < 0) continue;
      const auto [t0, t1] = workspace_steps(m);
      if (t0 <= s1 && s0 <= t1 && mo < off + b && off < mo + mb)
        return fmt::format("nodes '{}' and '{}' have overlapping workspaces while both run", name, g.nodes[m].name);
    }
  }
  // In place: input 0's storage holds nothing anyone reads after this node.
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!plan.in_place[n]) continue;
    const Node& node = g.nodes[n];
    if (!op_can_run_in_place(node.op)) return fmt::format("node '{}' ({}) cannot run in place", node.name, op_name(node.op));
    const int s = L.step_of_node[n];
    const int r = plan.storage[static_cast<size_t>(node.inputs[0])];
    if (plan.placement[static_cast<size_t>(r)] != Placement::arena)
      return fmt::format("node '{}' runs in place over '{}', which lives outside the arena", node.name, g.values[static_cast<size_t>(r)].name);
    if (plan.storage[static_cast<size_t>(node.outputs[0])] != r) return fmt::format("node '{}' is in place but its output has its own storage", node.name);
    if (!plan.view_offset.empty() && reads_part_of(g, plan, node, r))
      return fmt::format("node '{}' runs in place over '{}' while another of its inputs reads a part of it", node.name,
                         g.values[static_cast<size_t>(r)].name);
    for (int v = 0; v < nv; ++v) {
      if (plan.storage[static_cast<size_t>(v)] != r || v == node.outputs[0]) continue;
      const int d = L.def[static_cast<size_t>(v)];
      if (d >= 0 && d <= s && (L.last[static_cast<size_t>(v)] > s || L.is_output[static_cast<size_t>(v)]))
        return fmt::format("node '{}' at step {} overwrites '{}', which is still read at step {}{}", node.name, s,
                           g.values[static_cast<size_t>(v)].name, L.last[static_cast<size_t>(v)],
                           L.is_output[static_cast<size_t>(v)] ? " (a graph output)" : "");
    }
  }
  return "";
}

}  // namespace tg
